"""What every importer shares: bounded line reading, located errors, typed field access.

An import either stores everything or nothing (``run_import`` wraps it in one
transaction), and every error names the file, the line (or record) and the field.
"""

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ijson
from django.conf import settings

MAX_JSON_DEPTH = 64


class ImportFailed(Exception):
    """Bad input: names where it is (file, line or record, field) and what is wrong."""

    def __init__(
        self, message: str, *, file: str | Path = "", line: int | None = None, field: str = "",
        column: int | None = None,
    ) -> None:
        self.file = str(file)
        self.line = line
        self.column = column
        self.field = field
        self.message = message
        super().__init__(self.location() + message)

    def location(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file)
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.column is not None:
            parts.append(f"column {self.column}")
        if self.field:
            parts.append(f"field '{self.field}'")
        return (", ".join(parts) + ": ") if parts else ""


@dataclass
class SystemTally:
    """One row of the per-system import table."""

    reports: int = 0
    citations: int = 0
    resolved: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)


@dataclass
class ImportResult:
    """Counts of what an import stored, by kind: ``{"task": {"created": 3, "updated": 1}}``,
    and per system the reports read, the citations found in them and the files skipped."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    systems: dict[str, SystemTally] = field(default_factory=dict)
    # ``(done, total)`` as a long import advances (the CLI's bar, the job page's); not data.
    on_progress: Callable[[int, int], None] | None = field(default=None, repr=False, compare=False)

    def progress(self, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(done, total)

    def system(self, name: str) -> SystemTally:
        return self.systems.setdefault(name, SystemTally())

    def skip(self, system: str, file: str, reason: str) -> None:
        """A file the importer could not use: listed in the table, never dropped in silence."""
        self.system(system).skipped.append((file, reason))

    def system_rows(self) -> list[dict]:
        """The per-system table as data (for pages and API answers)."""
        return [
            {"system": name, "reports": t.reports, "citations": t.citations, "resolved_citations": t.resolved,
             "skipped": [{"file": f, "reason": r} for f, r in t.skipped]}
            for name, t in sorted(self.systems.items())
        ]

    def system_table(self) -> str:
        if not self.systems:
            return ""
        rows = [("system", "reports", "citations (resolved)", "files skipped")]
        for name, t in sorted(self.systems.items()):
            rows.append((name, str(t.reports), f"{t.citations} ({t.resolved})", str(len(t.skipped))))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                 for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        for name, t in sorted(self.systems.items()):
            lines.extend(f"skipped {name}: {f}: {r}" for f, r in t.skipped)
        return "\n".join(lines)

    def add(self, kind: str, outcome: str, n: int = 1) -> None:
        bucket = self.counts.setdefault(kind, {})
        bucket[outcome] = bucket.get(outcome, 0) + n

    def merge(self, other: "ImportResult") -> None:
        for kind, outcomes in other.counts.items():
            for outcome, n in outcomes.items():
                self.add(kind, outcome, n)
        self.messages.extend(other.messages)
        for name, t in other.systems.items():
            mine = self.system(name)
            mine.reports += t.reports
            mine.citations += t.citations
            mine.resolved += t.resolved
            mine.skipped.extend(t.skipped)

    def summary(self) -> str:
        lines = [
            f"{kind}: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
            for kind, outcomes in sorted(self.counts.items())
        ]
        table = self.system_table()
        return "\n".join(lines + self.messages + ([table] if table else []))


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of decoded JSON, iteratively (a recursive walk is what deep input attacks)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return depth
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def parse_json_text(text: str | bytes, *, file: str | Path, line: int | None = None) -> Any:
    """Decode one JSON document, turning every failure into a located ``ImportFailed``."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ImportFailed(f"not UTF-8 text (byte {exc.start})", file=file, line=line) from None
    if "\x00" in text:
        raise ImportFailed("contains NUL bytes: this is binary data, not JSON", file=file, line=line)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # ``line`` is the JSONL line holding the document (an error past its end is at its end);
        # a whole-file document has the decoder's own line.
        if line is None:
            line, column = exc.lineno, exc.colno
        else:
            column = exc.colno if exc.lineno == 1 else len(text.split("\n", 1)[0].rstrip("\r")) + 1
        raise ImportFailed(f"malformed JSON: {exc.msg[:1].lower()}{exc.msg[1:]}", file=file, line=line,
                           column=column) from None
    except RecursionError:
        raise ImportFailed(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", file=file, line=line) from None
    except ValueError as exc:  # e.g. an integer longer than Python's 4,300-digit conversion limit
        raise ImportFailed(f"malformed JSON: {exc}", file=file, line=line) from None
    if _depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ImportFailed(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", file=file, line=line)
    return value


def read_jsonl(path: str | Path, *, max_line_bytes: int | None = None) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line; every line must be a JSON object."""
    limit = max_line_bytes or settings.IMPORT_MAX_LINE_BYTES
    path = Path(path)
    with path.open("rb") as handle:
        line_no = 0
        while True:
            raw = handle.readline(limit + 1)
            if not raw:
                break
            line_no += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                raise ImportFailed(f"line longer than the {limit:,}-byte limit", file=path.name, line=line_no)
            if not raw.strip():
                continue
            value = parse_json_text(raw, file=path.name, line=line_no)
            if not isinstance(value, dict):
                raise ImportFailed(f"expected a JSON object, got {type(value).__name__}", file=path.name, line=line_no)
            yield line_no, value


def read_json(path: str | Path, *, max_bytes: int | None = None, name: str | None = None) -> Any:
    """One JSON document; errors name ``name`` (e.g. ``folder/file.json``), else the bare file name."""
    limit = max_bytes or settings.IMPORT_MAX_LINE_BYTES
    path = Path(path)
    name = name or path.name
    size = path.stat().st_size
    if size > limit:
        raise ImportFailed(f"file of {size:,} bytes exceeds the {limit:,}-byte limit", file=name)
    return parse_json_text(path.read_bytes(), file=name)


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true/false", list: "a list", dict: "an object"}


class Record:
    """Typed, located access to one input record's fields."""

    def __init__(self, data: dict, *, file: str | Path, line: int | None) -> None:
        self.data = data
        self.file = str(file)
        self.line = line

    def fail(self, message: str, field: str = "") -> ImportFailed:
        return ImportFailed(message, file=self.file, line=self.line, field=field)

    def get(self, name: str, kind: type | tuple[type, ...], *, required: bool = False, default: Any = None) -> Any:
        if name not in self.data or self.data[name] is None:
            if required:
                raise self.fail("required field is missing", name)
            return default
        value = self.data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # bool is an int in Python; a JSON true is never a valid number here.
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        elif float in kinds and isinstance(value, int):
            ok = True
        else:
            ok = isinstance(value, kinds)
        if not ok:
            expected = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
            raise self.fail(f"expected {expected}, got {type(value).__name__}", name)
        return value

    def text(self, name: str, *, required: bool = False, default: str = "") -> str:
        value = self.get(name, str, required=required, default=default)
        if required and not value.strip():
            raise self.fail("must not be empty", name)
        return value

    def child(self, data: Any, name: str) -> "Record":
        """A nested object, with errors reported at the parent's location and a dotted field path."""
        if not isinstance(data, dict):
            raise self.fail(f"expected an object, got {type(data).__name__}", name)
        return _NestedRecord(data, parent=self, prefix=name)


class _NestedRecord(Record):
    def __init__(self, data: dict, *, parent: Record, prefix: str) -> None:
        super().__init__(data, file=parent.file, line=parent.line)
        # The full dotted path from the line's top, so a grandchild names every level: a[0].b[1].c
        outer = getattr(parent, "prefix", "")
        self.prefix = f"{outer}.{prefix}" if outer else prefix

    def fail(self, message: str, field: str = "") -> ImportFailed:
        path = f"{self.prefix}.{field}" if field else self.prefix
        return ImportFailed(message, file=self.file, line=self.line, field=path)


class _CountingReader:
    """A binary file that counts the bytes read since the last ``mark()`` and refuses to read
    past ``limit`` of them: one record of a streamed array is never held beyond the limit."""

    def __init__(self, handle, limit: int, on_overflow) -> None:
        self.handle, self.limit, self.on_overflow = handle, limit, on_overflow
        self.since = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.since += len(data)
        if self.since > self.limit + _STREAM_BUFFER:  # the parser reads ahead up to one buffer
            raise self.on_overflow()
        return data

    def mark(self) -> None:
        self.since = 0


_STREAM_BUFFER = 64 * 1024
_PYTHON_BACKEND_POSITION = re.compile(r" at (\d+)$")


def _line_column(path: Path, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset (the pure-Python parser counts decoded
    characters), read in chunks."""
    line, line_start, consumed = 1, 0, 0
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        while consumed < offset:
            chunk = handle.read(min(1 << 20, offset - consumed))
            if not chunk:
                break
            newlines = chunk.count("\n")
            if newlines:
                line += newlines
                line_start = consumed + chunk.rindex("\n") + 1
            consumed += len(chunk)
    return line, offset - line_start + 1


def _stream_syntax_error(path: Path, name: str) -> ImportFailed:
    """Locate a syntax error the fast parser found, with the pure-Python parser (which knows the
    byte offset); only ever run on a file that is already known to be broken."""
    import ijson.backends.python as slow

    try:
        with path.open("rb") as handle:
            for _ in slow.parse(handle):
                pass
    except ijson.JSONError as exc:
        text = str(exc)
        match = _PYTHON_BACKEND_POSITION.search(text)
        offset = int(match[1]) if match else path.stat().st_size
        line, column = _line_column(path, offset)
        reason = _PYTHON_BACKEND_POSITION.sub("", text).strip() or "malformed"
        return ImportFailed(f"malformed JSON: {reason[:1].lower()}{reason[1:]}", file=name, line=line, column=column)
    return ImportFailed("malformed JSON", file=name)


def iter_json_array(
    path: str | Path, *, name: str | None = None, max_record_bytes: int | None = None
) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, item)`` for each item of a file holding one JSON array, streamed: one
    item in memory at a time, each within ``IMPORT_MAX_LINE_BYTES`` (give or take the 64 KiB
    read-ahead), whatever the file's size."""
    path = Path(path)
    name = name or path.name
    limit = max_record_bytes or settings.IMPORT_MAX_LINE_BYTES
    position = [0]  # the index of the record being read
    with path.open("rb") as handle:
        reader = _CountingReader(
            handle, limit,
            lambda: ImportFailed(f"longer than the {limit:,}-byte limit", file=name, field=f"[{position[0]}]"),
        )
        try:
            for index, item in enumerate(ijson.items(reader, "item", use_float=True, buf_size=_STREAM_BUFFER)):
                if _depth(item, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
                    raise ImportFailed(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", file=name,
                                       field=f"[{index}]")
                yield index, item
                position[0] = index + 1
                reader.mark()
        except ijson.JSONError:
            raise _stream_syntax_error(path, name) from None
        except UnicodeDecodeError as exc:
            raise ImportFailed(f"not UTF-8 text (byte {exc.start})", file=name) from None


def _build_value(event: str, value: Any, events: Iterator) -> Any:
    """The value whose first parse event is ``(event, value)``, built from ``events``."""
    builder = ijson.ObjectBuilder()
    builder.event(event, value)
    depth = 1 if event in ("start_map", "start_array") else 0
    while depth:
        _, event, value = next(events)
        builder.event(event, value)
        depth += 1 if event in ("start_map", "start_array") else -1 if event in ("end_map", "end_array") else 0
    return builder.value


def iter_json_object(
    path: str | Path, *, name: str | None = None, max_record_bytes: int | None = None
) -> Iterator[tuple[str, int | None, Any]]:
    """Yield the members of a file holding one JSON object, streamed: ``(key, None, value)`` for
    a member that is not an array, ``(key, index, item)`` for each item of an array member. One
    value or item is in memory at a time, each within ``IMPORT_MAX_LINE_BYTES`` (like
    ``iter_json_array``), whatever the file's size. An empty array comes as ``(key, None, [])``."""
    path = Path(path)
    name = name or path.name
    limit = max_record_bytes or settings.IMPORT_MAX_LINE_BYTES
    position = [""]  # the member (or array item) being read

    def too_long() -> ImportFailed:
        return ImportFailed(f"longer than the {limit:,}-byte limit", file=name, field=position[0])

    with path.open("rb") as handle:
        reader = _CountingReader(handle, limit, too_long)
        events = ijson.parse(reader, use_float=True, buf_size=_STREAM_BUFFER)
        try:
            _, event, _ = next(events)
            if event != "start_map":
                raise ImportFailed("expected a JSON object", file=name)
            for _, event, key in events:
                if event == "end_map":
                    return
                position[0] = key
                _, event, value = next(events)
                if event != "start_array":
                    item = _build_value(event, value, events)
                    if _depth(item, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
                        raise ImportFailed(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", file=name, field=key)
                    yield key, None, item
                    reader.mark()
                    continue
                index = 0
                position[0] = f"{key}[0]"
                _, event, value = next(events)
                if event == "end_array":
                    yield key, None, []
                    reader.mark()
                    continue
                while event != "end_array":
                    item = _build_value(event, value, events)
                    if _depth(item, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
                        raise ImportFailed(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", file=name,
                                           field=position[0])
                    yield key, index, item
                    reader.mark()
                    index += 1
                    position[0] = f"{key}[{index}]"
                    _, event, value = next(events)
        except ijson.JSONError:
            raise _stream_syntax_error(path, name) from None
        except UnicodeDecodeError as exc:
            raise ImportFailed(f"not UTF-8 text (byte {exc.start})", file=name) from None


def json_top_level(path: str | Path) -> str:
    """The first non-blank character of a JSON file: ``[`` for an array, ``{`` for an object."""
    with Path(path).open("rb") as handle:
        while chunk := handle.read(4096):
            stripped = chunk.lstrip(b" \t\r\n\xef\xbb\xbf")
            if stripped:
                return stripped[:1].decode("latin-1")
    return ""
