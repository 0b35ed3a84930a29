"""The web bench's client: one annotator's browser (keep-alive connection, session, CSRF) and
the three loops it runs — the workspace's htmx POST, the REST label with ``next``, and REST
batches — each returning its seconds and the items it labelled (``bench/web_bench.py``)."""

from __future__ import annotations

import http.client
import json
import re
import time
import uuid
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import urlencode


class BenchError(RuntimeError):
    pass


FORM_ACTION = re.compile(r'<form id="label-form"[^>]*\saction="([^"]+)"')
CLIENT_TOKEN = re.compile(r'name="client_token" value="([^"]+)"')
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


HELD_READY = re.compile(r"<template data-after>(.*?)</template>", re.S)
SHOWN_ITEM = re.compile(r'data-item="(\d+)"')


def held_ready(panel: str) -> str | None:
    """The next item's section that a workspace panel holds ready (issue #20), or None."""
    found = HELD_READY.search(panel)
    return found.group(1) if found else None


def label_form(panel: str) -> tuple[str, str]:
    """The label form's URL and its ``client_token`` in a workspace panel."""
    action, token = FORM_ACTION.search(panel), CLIENT_TOKEN.search(panel)
    if action is None or token is None:
        raise BenchError("the workspace panel has no label form (nothing left to label?)")
    return action.group(1), token.group(1)


class Browser:
    """One annotator's browser: a keep-alive connection, its cookies, CSRF from the page, and
    the headers a TLS-terminating proxy in front of gunicorn would add."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.origin = f"https://127.0.0.1:{port}"
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.cookies: dict[str, str] = {}
        self.panel: str | None = None  # the workspace panel on screen, with its label form
        self.held: list[int] | None = None  # REST: the item claimed for the next loop

    def reconnect(self) -> None:
        """A fresh connection before each phase (the server closes idle keep-alive connections)."""
        self.connection.close()

    def request(self, method: str, path: str, *, data: dict | None = None, htmx: bool = False,
                extra: dict | None = None) -> tuple[int, str, float]:
        headers = {"Host": f"127.0.0.1:{self.port}", "X-Forwarded-Proto": "https", **(extra or {})}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        if htmx:
            headers["HX-Request"] = "true"
        body = None
        if data is not None:
            body = urlencode(data)
            headers.update({"Content-Type": "application/x-www-form-urlencoded", "Origin": self.origin,
                            "Referer": self.origin + path})
        start = time.perf_counter()
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
            text = response.read().decode()
        except (http.client.HTTPException, OSError):
            self.connection.close()  # the next request opens a new connection
            raise
        elapsed = time.perf_counter() - start
        for header in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie()
            cookie.load(header)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0":
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        return response.status, text, elapsed

    def login(self, username: str, password: str) -> None:
        status, page, _ = self.request("GET", "/login/")
        csrf = CSRF_FIELD.search(page)
        if status != 200 or csrf is None:
            raise BenchError(f"GET /login/: HTTP {status} without a CSRF field")
        status, _, _ = self.request("POST", "/login/", data={
            "username": username, "password": password, "csrfmiddlewaretoken": csrf.group(1)})
        if status != 302 or "sessionid" not in self.cookies:
            raise BenchError(f"login of {username} failed: HTTP {status}")

    def open_workspace(self, project_id: int) -> float:
        """The htmx GET of the workspace panel (it claims the first item, or returns the one
        held); its seconds."""
        self.panel = None
        status, panel, seconds = self.request("GET", f"/annotate/{project_id}/", htmx=True)
        if status != 200:
            raise BenchError(f"open the workspace: HTTP {status}")
        self.panel = panel
        return seconds

    def api(self, method: str, path: str, body) -> tuple[int, object, float]:
        """A JSON request to the REST API in this browser's session (CSRF from its cookie)."""
        headers = {"Host": f"127.0.0.1:{self.port}", "X-Forwarded-Proto": "https", "Origin": self.origin,
                   "Referer": self.origin + "/", "Content-Type": "application/json",
                   "X-CSRFToken": self.cookies.get("csrftoken", ""),
                   "Cookie": "; ".join(f"{name}={value}" for name, value in self.cookies.items())}
        start = time.perf_counter()
        try:
            self.connection.request(method, path, body=json.dumps(body), headers=headers)
            response = self.connection.getresponse()
            text = response.read().decode()
        except (http.client.HTTPException, OSError):
            self.connection.close()
            raise
        return response.status, json.loads(text or "null"), time.perf_counter() - start

    def rest_loop(self, project_id: int) -> tuple[float, int]:
        """REST, one item: ``POST /api/labels/`` with ``"next": true`` (the answer carries the
        next claim). Seconds and items labelled."""
        if self.held is None:
            status, answer, _ = self.api("POST", f"/api/projects/{project_id}/next/", None)
            if status != 200 or answer["assignment"] is None:
                raise BenchError(f"claim: HTTP {status}")
            self.held = [answer["assignment"]["item"]]
        item, self.held = self.held[0], None
        status, answer, seconds = self.api("POST", "/api/labels/", {
            "item": item, "value": {"decision": "accept"}, "client_token": str(uuid.uuid4()), "next": True})
        if status != 201:
            raise BenchError(f"label item {item}: HTTP {status} {str(answer)[:200]}")
        if answer["next"]["assignment"] is not None:
            self.held = [answer["next"]["assignment"]["item"]]
        return seconds, 1

    def rest_batch_loop(self, project_id: int) -> tuple[float, int]:
        """REST, a batch: claim ``BATCH`` items (``?count=``), submit them in one request. The
        seconds of both requests and the items labelled."""
        status, answer, claim_seconds = self.api("POST", f"/api/projects/{project_id}/next/?count={BATCH}", None)
        if status != 200 or not answer["claims"]:
            raise BenchError(f"claim a batch: HTTP {status}")
        body = [{"item": c["assignment"]["item"], "value": {"decision": "accept"}, "client_token": str(uuid.uuid4())}
                for c in answer["claims"]]
        status, answer, seconds = self.api("POST", "/api/labels/batch/", body)
        refused = [row for row in (answer or {}).get("results", []) if row["status"] not in (200, 201)]
        if status != 200 or refused:
            raise BenchError(f"submit a batch: HTTP {status}, {len(refused)} refused: {str(refused)[:200]}")
        return claim_seconds + seconds, len(body)

    def workspace_loop(self, project_id: int) -> tuple[float, int]:
        return self.loop(project_id), 1

    def loop(self, project_id: int) -> float:
        """Submit the shown item's label as workspace.js does: the item held ready is shown at
        once and the POST names it (``X-Ws-Shown``), so the response is only the item after it;
        without one held ready the response is the next item's panel. Its seconds."""
        if self.panel is None:  # after an error: open the workspace again, outside the loop
            self.open_workspace(project_id)
        action, token = label_form(self.panel)
        csrf = CSRF_FIELD.search(self.panel)
        ready = held_ready(self.panel)
        shown = {"X-Ws-Shown": SHOWN_ITEM.search(ready).group(1)} if ready else {}
        self.panel = None
        status, body, seconds = self.request("POST", action, htmx=True, extra=shown, data={
            "csrfmiddlewaretoken": csrf.group(1) if csrf else "", "client_token": token, "decision": "accept"})
        if status != 200 or "Saved your label" not in body:
            raise BenchError(f"submit {action}: HTTP {status}")
        after = held_ready(body)
        if ready and 'class="ws-item"' not in body.split("<template")[0]:  # the answer to a shown item
            self.panel = ready + (f"<template data-after>{after}</template>" if after else "")
        else:
            self.panel = body
        return seconds


BATCH = 10  # items per REST batch loop
MODES = {  # label → the Browser method of one loop, and how many loops of a phase it runs
    "workspace": ("workspace_loop", 1),
    "REST": ("rest_loop", 1),
    f"REST batch of {BATCH}": ("rest_batch_loop", 1 / 5),
}


@dataclass
class LoopLog:
    loops: list[float]
    errors: list[str]
    items: int = 0
    mode: str = "workspace"

    @classmethod
    def empty(cls, mode: str = "workspace") -> "LoopLog":
        return cls([], [], 0, mode)

    def run(self, browser: Browser, project_id: int, count: int) -> None:
        method, share = MODES[self.mode]
        for _ in range(max(1, round(count * share))):
            try:
                seconds, items = getattr(browser, method)(project_id)
                self.loops.append(seconds / items)  # per labelled item
                self.items += items
            except (BenchError, OSError, http.client.HTTPException) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")


def browsers_login(port: int, usernames: list[str], password: str) -> list[Browser]:
    browsers = []
    for username in usernames:
        browser = Browser(port)
        browser.login(username, password)
        browsers.append(browser)
    return browsers


