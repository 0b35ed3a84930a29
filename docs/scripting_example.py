"""Scripting the Survey Eval Studio API with the standard library only.

    python docs/scripting_example.py --url http://127.0.0.1:8000 --user curator --password ... \
        --system 3 --protocol deepsynth --judge-config 1 reports/*.md

1. get a token (POST /api/auth/token/), 2. upload .md reports named <task key>.md
(POST /api/reports/, multipart), 3. start a run on those tasks (POST /api/runs/ with start=true),
4. poll /api/runs/<id>/progress/ until nothing is pending or running, 5. fetch the score cards.
"""

import argparse
import json
import sys
import time
import urllib.request
import uuid
from pathlib import Path


class Api:
    def __init__(self, base: str, token: str = "") -> None:
        self.base, self.token = base.rstrip("/"), token

    def call(self, method: str, path: str, body: dict | None = None, *, raw: bytes = b"", content_type: str = ""):
        data = raw or (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if content_type:
            request.add_header("Content-Type", content_type)
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise SystemExit(f"{method} {path}: HTTP {exc.code}: {exc.read().decode(errors='replace')}") from None

    def upload(self, path: str, fields: dict, files: list[Path]):
        boundary = uuid.uuid4().hex
        parts = []
        for name, value in fields.items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
        for file in files:
            head = f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{file.name}"\r\n'
            parts.append(head.encode() + b"Content-Type: text/markdown\r\n\r\n" + file.read_bytes() + b"\r\n")
        parts.append(f"--{boundary}--\r\n".encode())
        return self.call("POST", path, raw=b"".join(parts), content_type=f"multipart/form-data; boundary={boundary}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--system", type=int, required=True)
    parser.add_argument("--protocol", required=True)
    parser.add_argument("--judge-config", type=int, required=True)
    parser.add_argument("--poll-seconds", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--no-run", action="store_true", help="stop after the upload and listing")
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args(argv)

    token = Api(args.url).call("POST", "/api/auth/token/", {"username": args.user, "password": args.password})["token"]
    api = Api(args.url, token)
    counts = api.upload("/api/reports/", {"system": args.system, "protocol": args.protocol}, args.reports)
    print("uploaded:", counts)
    keys = {path.stem for path in args.reports}
    tasks = [t for t in api.call("GET", f"/api/tasks/?protocol={args.protocol}&ordering=key")["results"]
             if t["key"] in keys]
    print("tasks:", [t["key"] for t in tasks])
    if args.no_run:
        return {"uploaded": counts, "tasks": tasks}
    run = api.call("POST", "/api/runs/", {
        "protocol": args.protocol, "judge_config": args.judge_config, "systems": [args.system],
        "tasks": [t["id"] for t in tasks], "start": True, "name": "scripting example",
    })
    deadline = time.monotonic() + args.timeout
    while True:
        progress = api.call("GET", f"/api/runs/{run['id']}/progress/")
        print("progress:", progress)
        if progress["pending"] + progress["running"] == 0 or time.monotonic() > deadline:
            break
        time.sleep(args.poll_seconds)
    cards = api.call("GET", f"/api/runs/{run['id']}/score-cards/")["results"]
    for card in cards:
        print(card["system_name"], json.dumps(card["metrics"], sort_keys=True))
    return {"uploaded": counts, "tasks": tasks, "run": run, "progress": progress, "cards": cards}


if __name__ == "__main__":
    main(sys.argv[1:])
