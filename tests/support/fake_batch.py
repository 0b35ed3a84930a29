"""A scripted OpenAI-compatible server with the Batch API, on the loopback interface.

``FakeBatchOpenAI`` is ``FakeOpenAI`` (``POST /v1/chat/completions`` answered by its responder,
for the online side of a comparison) plus what a batch run uses:

* ``POST /v1/files`` (multipart, ``purpose=batch``) and ``GET /v1/files/<id>/content``;
* ``POST /v1/batches``, ``GET /v1/batches`` (newest first, ``limit``), ``GET /v1/batches/<id>``,
  ``POST /v1/batches/<id>/cancel``.

A batch is ``in_progress`` until it ends: ``finish(batch_id=None, status="completed")`` ends one
(or every open one) now; ``auto_complete_after`` seconds ends it when it is next retrieved. Ending
``completed`` answers every line with the responder (a reply with a status other than 200 becomes
that line's error response); ``expired`` answers only the first ``answer_first`` lines and puts the
rest in the error file (``batch_expired``); ``failed`` answers none (``errors.data``). Every request
is recorded (``requests``, with its headers), and ``batch_lines`` keeps each batch's input lines.

Misbehaving, as some providers do:

* ``output_faults``: the first output lines of a completed batch are garbled in turn, one kind each
  (``LINE_FAULTS``): ``response-string`` (``"response": "oops"``), ``not-json``, ``no-custom-id``,
  ``content-number`` (the message content a number), ``duplicate`` (the line sent twice),
  ``unknown-id`` (a line for a call nobody asked, besides the real one); ``garbled`` lists the
  ``custom_id`` of each line garbled so (none for ``unknown-id``);
* ``pad_output_to``: the output file is padded to that many bytes with lines naming no request
  (e.g. 150 MB), served in 1 MiB writes;
* ``never_finish``: its batches stay ``in_progress`` whatever ``finish`` or ``auto_complete_after`` say.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.support.fake_openai import FakeOpenAI, Reply, Request

END_STATES = ("completed", "expired", "failed", "cancelled")
LINE_FAULTS = ("response-string", "not-json", "no-custom-id", "content-number", "duplicate", "unknown-id")


class FakeBatchOpenAI(FakeOpenAI):
    def __init__(self, *, auto_complete_after: float | None = None, output_faults: tuple[str, ...] = (),
                 pad_output_to: int = 0, never_finish: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        unknown = set(output_faults) - set(LINE_FAULTS)
        if unknown:
            raise ValueError(f"unknown output faults {sorted(unknown)}; known: {LINE_FAULTS}")
        self.auto_complete_after = auto_complete_after
        self.output_faults = tuple(output_faults)
        self.pad_output_to = pad_output_to
        self.never_finish = never_finish
        self.garbled: dict[str, str] = {}  # custom_id -> the fault its output line was given
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batch_lines: dict[str, list[dict]] = {}
        self._ids = itertools.count(1)
        self._batch_lock = threading.RLock()

    # --- what a test does -----------------------------------------------------------------------

    def finish(self, batch_id: str | None = None, *, status: str = "completed", answer_first: int | None = None) -> None:
        with self._batch_lock:
            for found in ([batch_id] if batch_id else [b for b, s in self.batches.items() if s["status"] == "in_progress"]):
                self._end(found, status, answer_first)

    def open_batches(self) -> list[str]:
        with self._batch_lock:
            return [b for b, s in self.batches.items() if s["status"] in ("validating", "in_progress", "cancelling")]

    # --- serving --------------------------------------------------------------------------------

    def start(self) -> "FakeBatchOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                path = urlsplit(self.path).path
                if path in ("/v1/chat/completions", "/v1/embeddings"):
                    fake._handle(self)
                else:
                    fake._batch_api(self, "POST")

            def do_GET(self) -> None:  # noqa: N802
                fake._batch_api(self, "GET")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-batch", daemon=True)
        self._thread.start()
        return self

    def _batch_api(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        split = urlsplit(handler.path)
        path, query = split.path, parse_qs(split.query)
        with self._lock:
            self.requests.append(Request(path, {"_method": method}, dict(handler.headers), time.monotonic(),
                                         len(self.requests)))
        try:
            reply = self._route(method, path, query, raw, handler.headers.get("Content-Type", ""))
        except (KeyError, ValueError) as exc:
            reply = Reply(status=404 if isinstance(exc, KeyError) else 400,
                          body={"error": {"message": f"{type(exc).__name__}: {exc}", "type": "invalid_request_error"}})
        try:
            self._send(handler, reply)
        except OSError:
            pass

    def _route(self, method: str, path: str, query: dict, raw: bytes, content_type: str) -> Reply:
        parts = path.strip("/").split("/")
        if method == "POST" and path == "/v1/files":
            fields = _multipart(raw, content_type)
            file_id = f"file-{next(self._ids)}"
            with self._batch_lock:
                self.files[file_id] = fields["file"]
            return Reply(body={"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": int(time.time()),
                               "filename": "input.jsonl", "purpose": fields.get("purpose", b"").decode(),
                               "status": "processed"})
        if method == "GET" and len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content":
            with self._batch_lock:
                data = self.files[parts[2]]
            return Reply(body=data)
        if method == "POST" and path == "/v1/batches":
            request = json.loads(raw or b"{}")
            with self._batch_lock:
                lines = [json.loads(line) for line in self.files[request["input_file_id"]].decode().splitlines() if line]
                if request.get("endpoint") != "/v1/chat/completions" or request.get("completion_window") != "24h":
                    raise ValueError("endpoint must be /v1/chat/completions and completion_window 24h")
                batch_id = f"batch_{next(self._ids)}"
                self.batch_lines[batch_id] = lines
                self.batches[batch_id] = {
                    "id": batch_id, "object": "batch", "endpoint": request["endpoint"], "errors": None,
                    "input_file_id": request["input_file_id"], "completion_window": "24h", "status": "in_progress",
                    "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                    "in_progress_at": int(time.time()), "expires_at": int(time.time()) + 86400,
                    "completed_at": None, "failed_at": None, "expired_at": None, "cancelled_at": None,
                    "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                    "metadata": request.get("metadata") or {}, "_created": time.monotonic(),
                }
                return Reply(body=_public(self.batches[batch_id]))
        if method == "GET" and path == "/v1/batches":
            limit = int(query.get("limit", ["20"])[0])
            with self._batch_lock:
                found = [_public(b) for b in reversed(list(self.batches.values()))][:limit]
            return Reply(body={"object": "list", "data": found, "has_more": False,
                               "first_id": found[0]["id"] if found else None,
                               "last_id": found[-1]["id"] if found else None})
        if len(parts) >= 3 and parts[:2] == ["v1", "batches"]:
            batch_id = parts[2]
            with self._batch_lock:
                batch = self.batches[batch_id]
                if method == "POST" and parts[3:] == ["cancel"]:
                    if batch["status"] not in END_STATES:
                        self._end(batch_id, "cancelled", 0)
                elif method == "GET" and not parts[3:]:
                    due = self.auto_complete_after is not None and batch["status"] == "in_progress" and \
                        time.monotonic() - batch["_created"] >= self.auto_complete_after
                    if due:
                        self._end(batch_id, "completed", None)
                else:
                    raise KeyError(path)
                return Reply(body=_public(batch))
        raise KeyError(path)

    def _send(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if not isinstance(reply.body, bytes):
            return super()._send(handler, reply)
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(len(reply.body)))
        handler.end_headers()
        view = memoryview(reply.body)
        for start in range(0, len(view), 1 << 20):
            handler.wfile.write(view[start:start + (1 << 20)])
        handler.wfile.flush()

    def _garble(self, output: list[dict]) -> list[bytes]:
        """The output lines as a misbehaving provider writes them (``output_faults``, ``pad_output_to``)."""
        written = []
        for index, line in enumerate(output):
            fault = self.output_faults[index] if index < len(self.output_faults) else ""
            if fault and fault != "unknown-id":
                self.garbled[line["custom_id"]] = fault
            if fault == "response-string":
                line = {**line, "response": "oops"}
            elif fault == "no-custom-id":
                line = {key: value for key, value in line.items() if key != "custom_id"}
            elif fault == "content-number":
                body = json.loads(json.dumps(line["response"]["body"]))
                body["choices"][0]["message"]["content"] = 42
                line = {**line, "response": {**line["response"], "body": body}}
            text = json.dumps(line).encode()
            if fault == "not-json":
                text = text[: len(text) // 2]
            written.append(text)
            if fault == "duplicate":
                written.append(text)
            if fault == "unknown-id":
                written.append(json.dumps({**line, "custom_id": "nobody-asked-this"}).encode())
        size = sum(len(text) + 1 for text in written)
        if self.pad_output_to > size:
            pad = json.dumps({"id": "batch_req_pad", "custom_id": "padding", "error": None,
                              "response": {"status_code": 200, "body": {"padding": "x" * 65_000}}}).encode()
            written.extend([pad] * ((self.pad_output_to - size) // (len(pad) + 1) + 1))
        return written

    def _end(self, batch_id: str, status: str, answer_first: int | None) -> None:
        if self.never_finish and status != "cancelled":
            return
        batch, lines = self.batches[batch_id], self.batch_lines[batch_id]
        answered = len(lines) if status == "completed" else (answer_first or 0)
        output, errors = [], []
        for index, line in enumerate(lines):
            if index >= answered:
                if status == "failed":
                    continue
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                errors.append({"id": f"batch_req_{index}", "custom_id": line["custom_id"], "response": None,
                               "error": {"code": code, "message": f"This request was not executed: the batch {status}."}})
                continue
            request = Request("/v1/chat/completions", line["body"], {}, time.monotonic(), index)
            reply = self.responder(request)
            target = output if reply.status == 200 else errors
            target.append({"id": f"batch_req_{index}", "custom_id": line["custom_id"], "error": None,
                           "response": {"status_code": reply.status, "request_id": f"req_{index}", "body": reply.body}})
        now = int(time.time())
        batch["status"] = status
        batch[f"{status}_at"] = now
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}
        if status == "failed":
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "scripted failure",
                                                           "line": None, "param": None}]}
        if output:
            batch["output_file_id"] = f"file-{next(self._ids)}"
            self.files[batch["output_file_id"]] = b"".join(text + b"\n" for text in self._garble(output))
        if errors:
            batch["error_file_id"] = f"file-{next(self._ids)}"
            self.files[batch["error_file_id"]] = "".join(json.dumps(e) + "\n" for e in errors).encode()


def _public(batch: dict) -> dict:
    return {key: value for key, value in batch.items() if not key.startswith("_")}


def _multipart(raw: bytes, content_type: str) -> dict[str, bytes]:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        fields[name] = part.get_payload(decode=True)
    return fields
