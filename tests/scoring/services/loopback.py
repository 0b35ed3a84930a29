"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1 for run tests and benchmarks.

It answers ``deepsynth.checklist_group`` prompts with a valid verdict for every requirement
line of the prompt, after ``delay`` seconds; the label of item ``id`` is
``LABELS[id % len(LABELS)]`` so that any two runs over the same items agree. ``fail_every``
= n makes every n-th request an HTTP 500. Requests are served concurrently (one thread each);
``GET /stats`` returns the counters. ``python -m tests.scoring.services.loopback --delay 0.2``
serves from a process of its own (its base URL is the first line on stdout), so a
benchmark's process does not share its CPU with the server.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LABELS = ("correct", "omitted", "incorrect", "correct")


def label_for(item_id: int) -> str:
    return LABELS[item_id % len(LABELS)]


def requested_items(prompt: str) -> list[dict]:
    """The requirement lines of a rendered checklist prompt (JSON objects with id and text, before the report)."""
    items = []
    for line in prompt.splitlines():
        if line.startswith("<<<REPORT"):
            break
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and "id" in value and "text" in value:
                items.append(value)
    return items


class LoopbackServer:
    def __init__(self, *, delay: float = 0.0, fail_every: int = 0) -> None:
        self.delay = delay
        self.fail_every = fail_every
        self.requests = 0
        self.failed = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms Nagle stalls

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self.reply(200, server.stats())

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                self.reply(*server.respond(body))

            def reply(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client died (a killed worker)
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "LoopbackServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def stats(self) -> dict:
        with self._lock:
            return {"requests": self.requests, "failed": self.failed, "max_in_flight": self.max_in_flight}

    def respond(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.requests += 1
            n = self.requests
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            if self.fail_every and n % self.fail_every == 0:
                with self._lock:
                    self.failed += 1
                return 500, {"error": {"message": "loopback: scripted failure", "type": "server_error"}}
            prompt = body["messages"][-1]["content"]
            verdicts = [
                {"id": it["id"], "label": label_for(it["id"]), "evidence": "", "rationale": "loopback"}
                for it in requested_items(prompt)
            ]
            content = json.dumps({"verdicts": verdicts})
            return 200, {
                "id": f"loopback-{n}", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", ""),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(content) // 4,
                          "total_tokens": (len(prompt) + len(content)) // 4},
            }
        finally:
            with self._lock:
                self.in_flight -= 1


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="serve the loopback judge endpoint until killed")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--fail-every", type=int, default=0)
    args = parser.parse_args()
    with LoopbackServer(delay=args.delay, fail_every=args.fail_every) as served:
        print(served.base_url, flush=True)
        threading.Event().wait()
