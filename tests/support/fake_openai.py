"""A scripted OpenAI-compatible server on the loopback interface, for tests and benchmarks.

A real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, a free port, its own
thread) serving ``POST /v1/chat/completions`` and ``POST /v1/embeddings``. What it
answers is scripted per test:

* ``server.script(reply, ...)`` queues replies, used in order, one per request;
* ``server.responder = fn`` answers when the queue is empty: ``fn(request) -> Reply``;
  the default answers chat with an empty JSON object and embeddings with
  deterministic vectors;
* ``fault_rate`` (with ``seed``) turns that share of requests into faults,
  deterministically in request order; ``fail_every`` = n makes exactly every n-th
  request (in arrival order) a fault; ``faults`` counts the faults injected either
  way; ``latency`` delays every reply (faults included). ``fault_kinds`` says which
  faults, drawn in turn (default HTTP 500 only): ``"429"`` (with ``Retry-After:
  retry_after``), ``"500"``, ``"503"``, ``"drop"`` (the connection is closed without an
  answer), ``"stall"`` (no answer for ``stall_seconds``);
* ``mode`` misbehaves on every request: ``"malformed"`` (a reply that is not JSON),
  ``"unauthorized"`` (HTTP 401 whose message echoes the bearer key, as some servers do),
  ``"forbidden"`` (403), ``"no-model"`` (404 model not found), ``"retry-after-600"``
  (429 asking for 600 s), ``"stall"`` (every request stalls ``stall_seconds``).

Concurrency is counted over every request, faults and stalls included: ``max_in_flight``.

Replies: ``Reply.json(data)`` (a completion whose content is that JSON, with usage),
``Reply.text(content)`` (any content, e.g. malformed JSON), ``Reply.error(status,
retry_after=...)``, ``Reply.hang(seconds)`` (sleeps past the client's timeout),
``Reply.embeddings(vectors)``. Every request is recorded (``server.requests``) with
its path, JSON body and arrival time; ``max_in_flight`` is the most requests handled
at once. ``GET /v1/stats`` (and ``stats()``) returns the counters.

Ready-made responders: ``checklist_responder`` (one label for every item),
``labelled_checklist_responder`` (the label of item ``id`` is ``label_for(id)``, so any
two runs over the same items agree) and ``survey_responder`` (SurveyLens / SciSage steps
with ``survey_score(id, high)``, pairwise always "A", bag-of-words embeddings).

``FakeOpenAIProcess`` (or ``python -m tests.support.fake_openai --latency 0.2``, which
prints its base URL as the first line on stdout) serves from a process of its own, so a
benchmark's process does not share its CPU (and GIL) with the server; it answers with a
named responder (``RESPONDERS``) and reports through ``stats()``.
"""

import argparse
import hashlib
import json
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np


@dataclass
class Request:
    path: str
    body: dict
    headers: dict
    arrived: float
    index: int

    @property
    def prompt(self) -> str:
        """All message contents of a chat request, joined."""
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages", []))

    @property
    def last_message(self) -> str:
        messages = self.body.get("messages", [])
        return str(messages[-1].get("content", "")) if messages else ""


@dataclass
class Reply:
    status: int = 200
    body: dict | str | None = None
    headers: dict = field(default_factory=dict)
    hang: float = 0.0

    @classmethod
    def text(cls, content: str, *, tokens_in: int = 100, tokens_out: int = 20, model: str = "fake-judge") -> "Reply":
        return cls(body={
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out},
        })

    @classmethod
    def json(cls, data: dict, **usage) -> "Reply":
        return cls.text(json.dumps(data), **usage)

    @classmethod
    def error(cls, status: int, message: str = "scripted failure", *, retry_after: str | None = None) -> "Reply":
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return cls(status=status, body={"error": {"message": message, "type": "server_error", "code": None}},
                   headers=headers)

    @classmethod
    def drop(cls) -> "Reply":
        """Close the connection without answering."""
        return cls(status=0)

    @classmethod
    def hang_for(cls, seconds: float) -> "Reply":
        return cls(hang=seconds, body={"error": {"message": "too late"}}, status=504)

    @classmethod
    def embeddings(cls, vectors, *, model: str = "fake-embedder") -> "Reply":
        return cls(body={"object": "list", "model": model,
                         "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                                  for i, v in enumerate(vectors)],
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})


def fake_vector(text: str, dim: int = 16) -> np.ndarray:
    """A deterministic pseudo-embedding of a text (not normalised, so clients must normalise)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=dim) * 3.0


def default_responder(request: Request) -> Reply:
    if request.path.endswith("/embeddings"):
        inputs = request.body.get("input", [])
        return Reply.embeddings([fake_vector(t) for t in ([inputs] if isinstance(inputs, str) else inputs)])
    return Reply.json({})


_ITEM_ID = re.compile(r'^\{"id": (\d+), "text"', re.MULTILINE)


def checklist_responder(request: Request, label: str = "correct") -> Reply:
    """Answers a ``deepsynth.checklist_group`` prompt: one verdict per item id found in the prompt."""
    ids = [int(i) for i in _ITEM_ID.findall(request.prompt)]
    return Reply.json({"verdicts": [{"id": i, "label": label, "evidence": "scripted", "rationale": "scripted"}
                                    for i in dict.fromkeys(ids)]})


LABELS = ("correct", "omitted", "incorrect", "correct")


def label_for(item_id: int) -> str:
    """The label ``labelled_checklist_responder`` gives item ``item_id``."""
    return LABELS[item_id % len(LABELS)]


def prompt_objects(prompt: str, *, until: str, keys: tuple[str, ...]) -> list[dict]:
    """The JSON-object lines of a rendered prompt that carry ``keys``, before the line starting ``until``."""
    found = []
    for line in prompt.splitlines():
        if line.startswith(until):
            break
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and all(k in value for k in keys):
                found.append(value)
    return found


def requested_items(prompt: str) -> list[dict]:
    """The requirement lines of a rendered checklist prompt (JSON objects with id and text, before the report)."""
    return prompt_objects(prompt, until="<<<REPORT", keys=("id", "text"))


def labelled_checklist_responder(request: Request) -> Reply:
    """Answers a ``deepsynth.checklist_group`` prompt (its last message) with ``label_for(id)`` for every item."""
    prompt = request.last_message
    content = json.dumps({"verdicts": [
        {"id": item["id"], "label": label_for(item["id"]), "evidence": "", "rationale": "loopback"}
        for item in requested_items(prompt)
    ]})
    return Reply.text(content, tokens_in=len(prompt) // 4, tokens_out=len(content) // 4,
                      model=str(request.body.get("model", "")))


def bag_of_words_vector(text: str, dim: int = 64) -> np.ndarray:
    """Hashed word counts (not normalised): texts sharing words get similar vectors, unlike ``fake_vector``."""
    vector = np.zeros(dim)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "little") % dim] += 1.0
    return vector


def survey_score(item_id, high: int) -> int:
    """The score ``survey_responder`` gives criterion or dimension ``item_id`` on a 1..``high`` scale."""
    return 1 + int.from_bytes(hashlib.sha256(str(item_id).encode("utf-8")).digest()[:4], "little") % high


_STEP = re.compile(r"\(task `([a-z_.]+)`\)")


def survey_responder(request: Request) -> Reply:
    """SurveyLens / SciSage steps: bag-of-words embeddings; ``surveylens.rubric``, ``scisage.quality`` and
    ``scisage.section_structure`` score each requested id with ``survey_score``; ``survey.pairwise`` always
    prefers survey A."""
    if request.path.endswith("/embeddings"):
        inputs = request.body.get("input", [])
        return Reply.embeddings([bag_of_words_vector(t) for t in ([inputs] if isinstance(inputs, str) else inputs)])
    step = (_STEP.findall(request.prompt) or [""])[0]
    if step == "survey.pairwise":
        return Reply.json({"winner": "A", "rationale": "loopback prefers the first survey"})
    high = {"surveylens.rubric": 5, "scisage.quality": 10, "scisage.section_structure": 5}.get(step)
    if high is None:
        return Reply.json({})
    ids = [value["id"] for value in prompt_objects(request.last_message, until="<<<SURVEY", keys=("id", "name"))]
    return Reply.json({"scores": [{"id": i, "score": survey_score(i, high), "rationale": "loopback"} for i in ids]})


NUGGET_LABELS = ("support", "partial_support", "not_support")


def deepscholar_responder(request: Request) -> Reply:
    """DeepScholar steps, deterministic per question: nugget ``id`` gets ``NUGGET_LABELS[id % 3]``; relevance,
    importance and citation support follow a hash of the prompt; organization always prefers section A."""
    step = (_STEP.findall(request.prompt) or [""])[0]
    prompt = request.last_message
    digest = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:4], "little")
    if step == "deepscholar.nugget_support":
        return Reply.json({"labels": [{"id": item["id"], "label": NUGGET_LABELS[int(item["id"]) % 3]}
                                      for item in requested_items(prompt)]})
    answers = {
        "deepscholar.relevance": {"grade": digest % 3, "rationale": "loopback"},
        "deepscholar.reference_importance": {"important": digest % 2 == 0},
        "deepscholar.citation_support": {"label": ("support", "not_support")[digest % 2]},
        "deepscholar.organization": {"winner": "A", "rationale": "loopback prefers section A"},
    }
    return Reply.json(answers.get(step, {}))


_CITATION_MARKER = re.compile(r"\s*\[(\d+(?:\s*[,\u2013-]\s*\d+)*)\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _delimited(prompt: str, name: str) -> str:
    """The text a prompt quotes between ``<<<NAME`` and ``NAME>>>``."""
    start, end = prompt.find(f"<<<{name}"), prompt.rfind(f"{name}>>>")
    return prompt[start + len(name) + 3:end].strip() if start >= 0 and end > start else ""


def _report_sentences(report: str) -> list[str]:
    """The body sentences of a markdown report: no headings, nothing from its reference list on."""
    sentences = []
    for line in report.splitlines():
        if re.match(r"#+\s*references\b", line.strip(), re.IGNORECASE):
            break
        if line.strip() and not line.lstrip().startswith("#"):
            sentences.extend(s.strip() for s in _SENTENCE_END.split(line.strip()) if s.strip())
    return sentences


def reportbench_responder(request: Request) -> Reply:
    """ReportBench steps answered from the report text itself: sentences with ``[n]`` markers are the cited
    statements, marker-free sentences holding a digit the uncited ones, ``[n] Title. URL`` lines after the
    References heading the reference titles; consistency and factuality follow a hash of the prompt (two in
    three consistent / correct). Usage is the prompt's and the answer's length / 4."""
    step = (_STEP.findall(request.prompt) or [""])[0]
    prompt = request.last_message
    digest = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:4], "little")
    sentences = _report_sentences(_delimited(prompt, "REPORT"))
    if step == "reportbench.cited_statements":
        data = {"statements": [{"text": _CITATION_MARKER.sub("", s),
                                "citations": [f"[{m}]" for m in _CITATION_MARKER.findall(s)]}
                               for s in sentences if _CITATION_MARKER.search(s)]}
    elif step == "reportbench.uncited_statements":
        data = {"statements": [{"text": s} for s in sentences
                               if not _CITATION_MARKER.search(s) and re.search(r"\d", s)]}
    elif step == "reportbench.reference_titles":
        survey = _delimited(prompt, "SURVEY")
        listed = re.findall(r"^\[\d+\]\s*(.+?)\.?(?:\s+(https?://\S+))?\s*$", survey, re.MULTILINE)
        data = {"references": [{"title": title, "url": url} for title, url in listed]}
    elif step == "reportbench.consistency":
        data = {"label": "inconsistent" if digest % 3 == 0 else "consistent", "rationale": "loopback"}
    elif step == "reportbench.factuality":
        data = {"label": "incorrect" if digest % 3 == 0 else "correct", "rationale": "loopback"}
    else:
        data = {}
    content = json.dumps(data)
    return Reply.text(content, tokens_in=len(request.prompt) // 4, tokens_out=len(content) // 4,
                      model=str(request.body.get("model", "")))


def with_prompt_usage(responder: Callable[[Request], Reply]) -> Callable[[Request], Reply]:
    """``responder``, with each chat answer's usage set to the prompt's and the answer's length / 4 (the
    plain responders report a fixed 100 / 20), so token figures grow with what is really sent."""

    def sized(request: Request) -> Reply:
        reply = responder(request)
        if request.path.endswith("/chat/completions") and isinstance(reply.body, dict) and "usage" in reply.body:
            content = reply.body["choices"][0]["message"]["content"]
            tokens_in, tokens_out = len(request.prompt) // 4, len(content) // 4
            reply.body["usage"] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                                   "total_tokens": tokens_in + tokens_out}
        return reply

    return sized


RESPONDERS: dict[str, Callable[[Request], Reply]] = {
    "default": default_responder,
    "checklist": checklist_responder,
    "labelled-checklist": labelled_checklist_responder,
    "survey": survey_responder,
    "deepscholar": deepscholar_responder,
    "reportbench": reportbench_responder,
    # the same answers, with usage from the prompt's length (bench/protocols_bench.py)
    "labelled-checklist+usage": with_prompt_usage(labelled_checklist_responder),
    "survey+usage": with_prompt_usage(survey_responder),
    "deepscholar+usage": with_prompt_usage(deepscholar_responder),
}


FAULT_KINDS = ("429", "500", "503", "drop", "stall")
MODES = ("healthy", "malformed", "unauthorized", "forbidden", "no-model", "retry-after-600", "stall")


def bearer_key(request: Request) -> str:
    """The key a request carried in its Authorization header ("" without one)."""
    value = next((v for k, v in request.headers.items() if k.lower() == "authorization"), "")
    return value.removeprefix("Bearer ").strip()


class FakeOpenAI:
    def __init__(self, *, latency: float = 0.0, fault_rate: float = 0.0, seed: int = 0, fail_every: int = 0,
                 fault_kinds: tuple[str, ...] = ("500",), mode: str = "healthy", stall_seconds: float = 30.0,
                 retry_after: str = "1") -> None:
        unknown = set(fault_kinds) - set(FAULT_KINDS)
        if unknown or mode not in MODES:
            raise ValueError(f"unknown fault kinds {sorted(unknown)} or mode {mode!r}")
        self.latency = latency
        self.fault_rate = fault_rate
        self.fail_every = fail_every
        self.fault_kinds = tuple(fault_kinds)
        self.mode = mode
        self.stall_seconds = stall_seconds
        self.retry_after = retry_after
        self.injected: dict[str, int] = {}
        self.responder: Callable[[Request], Reply] = default_responder
        self.requests: list[Request] = []
        self.faults = 0
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- scripting ------------------------------------------------------------------------------------------------

    def script(self, *replies: Reply) -> "FakeOpenAI":
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def stats(self) -> dict:
        with self._lock:
            return {"requests": len(self.requests), "faults": self.faults, "max_in_flight": self.max_in_flight,
                    "injected": dict(self.injected), "keys": sorted({bearer_key(r) for r in self.requests})}

    # --- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                fake._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                if self.path == "/v1/stats":
                    fake._send(self, Reply(body=fake.stats()))
                else:
                    fake._send(self, Reply(status=404, body={"error": {"message": "not found"}}))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- serving --------------------------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsable": raw.decode("utf-8", "replace")}
        with self._lock:
            request = Request(handler.path, body, dict(handler.headers), time.monotonic(), len(self.requests))
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            faulty = self.fault_rate > 0 and self._rng.random() < self.fault_rate
            faulty = faulty or (self.fail_every > 0 and len(self.requests) % self.fail_every == 0)
            scripted = self._queue.popleft() if self._queue else None
        settled = False

        def settle() -> None:
            nonlocal settled
            if not settled:
                settled = True
                with self._lock:
                    self._in_flight -= 1

        try:
            if handler.path not in ("/v1/chat/completions", "/v1/embeddings"):
                reply = Reply(status=404, body={"error": {"message": f"no route {handler.path}"}})
            elif faulty:
                with self._lock:
                    kind = self.fault_kinds[self.faults % len(self.fault_kinds)]
                    self.faults += 1
                    self.injected[kind] = self.injected.get(kind, 0) + 1
                reply = self._fault(kind)
            elif self.mode != "healthy" and handler.path == "/v1/chat/completions":
                reply = self._misbehave(request)
            else:
                reply = scripted or self.responder(request)
            if self.latency:
                self._stopping.wait(self.latency)
            if reply.hang:
                self._stopping.wait(reply.hang)
            # The request stops counting before the client can see its answer: otherwise a client
            # that frees its slot and sends the next request would be counted twice for a moment.
            settle()
            if reply.status == 0:  # a dropped connection: no status line, no body
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
                return
            self._send(handler, reply)
        except OSError:
            pass  # the client gave up (a timeout test), or we dropped the connection: nothing to answer
        finally:
            settle()

    def _fault(self, kind: str) -> Reply:
        if kind == "429":
            return Reply.error(429, "injected rate limit", retry_after=self.retry_after)
        if kind in ("500", "503"):
            return Reply.error(int(kind), "injected fault")
        if kind == "drop":
            return Reply.drop()
        return Reply.hang_for(self.stall_seconds)

    def _misbehave(self, request: Request) -> Reply:
        if self.mode == "malformed":
            return Reply.text("Sure! The verdicts are: all correct.")
        if self.mode == "unauthorized":
            return Reply.error(401, f"Incorrect API key provided: {bearer_key(request)}. You can find your API key "
                                    "at https://platform.example/account/api-keys.")
        if self.mode == "forbidden":
            return Reply.error(403, "Project does not have access to this model")
        if self.mode == "no-model":
            return Reply.error(404, f"The model `{request.body.get('model')}` does not exist")
        if self.mode == "retry-after-600":
            return Reply.error(429, "Rate limit reached; try again in 10 minutes", retry_after="600")
        return Reply.hang_for(self.stall_seconds)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body or {})
        data = payload.encode("utf-8")
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()


def _die_with_parent() -> None:
    """SIGKILL for the server process once the process that started it dies (``PR_SET_PDEATHSIG``):
    a benchmark or ``make faults`` killed at a time limit leaves no server behind. (The kernel ties it to
    the starting thread: start the server from a thread that outlives it, e.g. the main one.)"""
    import ctypes
    import os
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


class FakeOpenAIProcess:
    """A ``FakeOpenAI`` serving from a process of its own, answering with ``RESPONDERS[responder]``."""

    ROOT = Path(__file__).resolve().parents[2]

    def __init__(self, *, latency: float = 0.0, fault_rate: float = 0.0, seed: int = 0, fail_every: int = 0,
                 responder: str = "default", fault_kinds: tuple[str, ...] = ("500",), mode: str = "healthy",
                 stall_seconds: float = 30.0) -> None:
        if responder not in RESPONDERS:
            raise ValueError(f"unknown responder {responder!r}; one of {sorted(RESPONDERS)}")
        self.args = ["--latency", str(latency), "--fault-rate", str(fault_rate), "--seed", str(seed),
                     "--fail-every", str(fail_every), "--responder", responder, "--fault-kinds", ",".join(fault_kinds),
                     "--mode", mode, "--stall-seconds", str(stall_seconds)]
        self.process: subprocess.Popen | None = None
        self.base_url = ""

    def start(self) -> "FakeOpenAIProcess":
        self.process = subprocess.Popen([sys.executable, "-m", "tests.support.fake_openai", *self.args],
                                        cwd=self.ROOT, stdout=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url:
            self.stop()
            raise RuntimeError("the fake OpenAI server process did not start")
        return self

    def stats(self) -> dict:
        with urllib.request.urlopen(self.base_url + "/stats", timeout=10) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> "FakeOpenAIProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="serve the fake OpenAI-compatible endpoint until terminated")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--responder", choices=sorted(RESPONDERS), default="default")
    parser.add_argument("--fault-kinds", default="500", help=f"comma-separated, of {', '.join(FAULT_KINDS)}")
    parser.add_argument("--mode", choices=MODES, default="healthy")
    parser.add_argument("--stall-seconds", type=float, default=30.0)
    args = parser.parse_args()
    server = FakeOpenAI(latency=args.latency, fault_rate=args.fault_rate, seed=args.seed, fail_every=args.fail_every,
                        fault_kinds=tuple(args.fault_kinds.split(",")), mode=args.mode,
                        stall_seconds=args.stall_seconds)
    server.responder = RESPONDERS[args.responder]
    with server:
        print(server.base_url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
