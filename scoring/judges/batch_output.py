"""Batch API output and error files, read line by line and checked against the line's schema.

A provider's file is untrusted input: every line is read as bytes with a size cap of its own
(``LINE_MAX_BYTES``) and the file as a whole within ``output_cap`` (tied to the number of request
lines the batch carried), so a huge or endless file is refused at bounded memory instead of held
whole. Each line must be the Batch API's result object::

    {"id": str, "custom_id": str, "error": null | {"code": str, "message": str},
     "response": null | {"status_code": int, "request_id": str,
                         "body": {"choices": [{"message": {"content": str | null}}, ...],
                                  "usage": {"prompt_tokens": int, "completion_tokens": int}}}}

``line_read`` turns one line into a ``Line``: the call it speaks of (``custom_id``, or "" when the
line does not name one) and either the answer (content, tokens) or the reason the call failed —
a malformed line fails only the call it names, with a reason that names the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

LINE_MAX_BYTES = 8 * 1024 * 1024  # one result line; a chat answer of any sane max_tokens is far below
PER_LINE_BYTES = 256 * 1024  # what one request line's result may take, on average, within the file cap
TOKEN_BYTES = 24  # a token's text, JSON-escaped at worst (\uXXXX per character), in a file's line
BASE_BYTES = 4 * 1024 * 1024
CUSTOM_ID_MAX = 100  # BatchCall.custom_id


class OutputTooLarge(Exception):
    """The file passed the cap its batch allows; nothing of it is used."""


def output_cap(requests: int, max_tokens: int | None = None) -> int:
    """The most bytes a batch's output and error files together may hold: a fixed base plus, per
    request line, ``PER_LINE_BYTES`` or (with a ``max_tokens`` option) room for that many tokens."""
    per_line = max(PER_LINE_BYTES, TOKEN_BYTES * int(max_tokens or 0) + 16 * 1024)
    return BASE_BYTES + max(int(requests), 1) * per_line


@dataclass(frozen=True)
class Line:
    number: int
    custom_id: str  # "" when the line names no call
    content: str | None = None  # the answer, when the call was answered
    tokens_in: int = 0
    tokens_out: int = 0
    error: str = ""  # why the call failed (the line's error, or what is malformed in it)
    malformed: bool = False


def lines_split(chunks: Iterable[bytes], *, budget: list[int], line_max: int = LINE_MAX_BYTES) -> Iterator[bytes | None]:
    """The lines of a byte stream (without their newline); a line longer than ``line_max`` is
    dropped as it streams and yields ``None``. ``budget`` is ``[bytes left]``, shared by the files of
    one batch: ``OutputTooLarge`` once the stream passes it."""
    pending = bytearray()
    oversized = False
    for chunk in chunks:
        budget[0] -= len(chunk)
        if budget[0] < 0:
            raise OutputTooLarge()
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if oversized or len(pending) + end - start > line_max:
                yield None
            else:
                pending += chunk[start:end]
                yield bytes(pending)
            pending.clear()
            oversized = False
            start = end + 1
        if not oversized:
            pending += chunk[start:]
            if len(pending) > line_max:
                pending.clear()
                oversized = True
    if oversized:
        yield None
    elif pending:
        yield bytes(pending)


def line_read(number: int, raw: bytes | None, file: str = "output") -> Line | None:
    """Line ``number`` of the batch's ``file`` ("output" or "error"); ``None`` for a blank line."""
    if raw is None:
        return _bad(number, "", f"is longer than {LINE_MAX_BYTES // 2**20} MiB", file)
    if not raw.strip():
        return None
    try:
        row = json.loads(raw)
    except (ValueError, RecursionError):
        return _bad(number, "", "is not JSON", file)
    if not isinstance(row, dict):
        return _bad(number, "", "is not a JSON object", file)
    custom_id = row.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id or len(custom_id) > CUSTOM_ID_MAX:
        return _bad(number, "", "has no custom_id naming a request", file)
    response, error = row.get("response"), row.get("error")
    if response is not None and not isinstance(response, dict):
        return _bad(number, custom_id, "has a response that is not an object", file)
    if error is not None and not isinstance(error, (dict, str)):
        return _bad(number, custom_id, "has an error that is not an object", file)
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        status = response.get("status_code") if response else None
        status = status if _whole(status) else None
        text = str(message or "") if isinstance(message, (str, int, float)) else json.dumps(message)[:300]
        return Line(number, custom_id, error=f"HTTP {status}: {text}" if status else f"batch error: {text}")
    if response is None:
        return _bad(number, custom_id, "has neither a response nor an error", file)
    status, body = response.get("status_code"), response.get("body")
    if not _whole(status):
        return _bad(number, custom_id, "has a response without an integer status_code", file)
    if not isinstance(body, dict):
        if status != 200:
            return Line(number, custom_id, error=f"HTTP {status}: {str(body or '')[:300]}")
        return _bad(number, custom_id, "has a response whose body is not an object", file)
    if status != 200 or body.get("error"):
        found = body.get("error")
        message = found.get("message", "") if isinstance(found, dict) else str(found or "")
        return Line(number, custom_id, error=f"HTTP {status}: {message}")
    choices = body.get("choices")
    if not isinstance(choices, list):
        return _bad(number, custom_id, "has a body without a list of choices", file)
    if not choices:
        return Line(number, custom_id, error="the endpoint returned no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        return _bad(number, custom_id, "has a first choice without a message object", file)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return _bad(number, custom_id, "has a message content that is not text", file)
    usage = body.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        return _bad(number, custom_id, "has a usage that is not an object", file)
    tokens = [usage.get(key) or 0 for key in ("prompt_tokens", "completion_tokens")]
    if not all(_whole(value) and 0 <= value < 2**31 for value in tokens):
        return _bad(number, custom_id, "has token counts that are not whole numbers", file)
    return Line(number, custom_id, content=content or "", tokens_in=tokens[0], tokens_out=tokens[1])


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bad(number: int, custom_id: str, what: str, file: str) -> Line:
    return Line(number, custom_id, error=f"malformed batch {file} file: line {number} {what}", malformed=True)


__all__ = ["LINE_MAX_BYTES", "Line", "OutputTooLarge", "line_read", "lines_split", "output_cap"]
