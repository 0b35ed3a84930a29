"""BibTeX files → ``BibEntry`` rows (deduplicated by ``bib_entries_upsert``).

A small parser of our own, not a LaTeX engine. It reads entries
``@type{key, name = value, ...}`` (or with parentheses), where a value is a ``{...}``
group (nested braces allowed), a ``"..."`` string (braces inside balanced), a number or
an ``@string`` macro, joined with ``#``. ``@string`` defines macros (``jan``–``dec`` are
predefined), ``@comment`` and ``@preamble`` are skipped, and text outside entries is a
comment, as in BibTeX. Values keep their LaTeX (``{\\"o}``, ``{BERT}``); the title is
stored as written and matched through the normalized title.

Mapped fields: ``title``, ``author`` → authors, ``year`` (first four-digit year),
``journal``/``booktitle`` → venue, ``doi``, arXiv id (``eprint`` with an arXiv
``archiveprefix``/``eprinttype``, or an arXiv ``url``/``journal``), ``url``, ``abstract``;
the entry's key and type go to ``extra``. Entries without a usable title are skipped with
a message. Errors (unbalanced braces, a field without ``=``, an undefined macro, a
duplicate field or entry key) name the line of the entry and the field.
"""

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..services.bibliography import clean_arxiv_id, clean_doi
from .base import ImportFailed, ImportResult
from .common import bib_entries_store, has_usable_title, read_text, year_from

MONTHS = {
    "jan": "January", "feb": "February", "mar": "March", "apr": "April", "may": "May", "jun": "June",
    "jul": "July", "aug": "August", "sep": "September", "oct": "October", "nov": "November", "dec": "December",
}
_NAME = re.compile(r"[^\s\"#%'(),={}]+")
_TYPE = re.compile(r"[A-Za-z][\w-]*")
_SPACE = re.compile(r"\s*")


@dataclass
class BibtexEntry:
    type: str
    key: str
    line: int
    fields: dict[str, str] = field(default_factory=dict)


class _Parser:
    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.pos = 0
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.macros = dict(MONTHS)
        self.entry_line = 1
        self.field = ""

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.line_starts, pos)

    def fail(self, message: str) -> ImportFailed:
        return ImportFailed(message, file=self.file, line=self.entry_line, field=self.field)

    def skip_space(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, chars: str, what: str) -> str:
        self.skip_space()
        ch = self.peek()
        if not ch or ch not in chars:
            found = repr(ch) if ch else "the end of the file (an entry or brace is never closed)"
            raise self.fail(f"expected {what}, found {found}")
        self.pos += 1
        return ch

    def delimited(self) -> str:
        """The text of the ``{...}`` group or ``"..."`` string at ``pos``, without its delimiters.

        Braces inside must balance; a ``"`` inside braces does not end a quoted value.
        """
        quoted = self.peek() == '"'
        start, depth = self.pos, 0 if quoted else 1
        self.pos += 1
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\\":
                self.pos += 2
                continue
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth < 0:
                    raise self.fail("unbalanced braces: '}' without '{' inside a quoted value")
                if depth == 0 and not quoted:
                    self.pos += 1
                    return self.text[start + 1 : self.pos - 1]
            elif ch == '"' and quoted and depth == 0:
                self.pos += 1
                return self.text[start + 1 : self.pos - 1]
            self.pos += 1
        raise self.fail("a quoted value is never closed" if quoted else "unbalanced braces: a '{' is never closed")

    def value(self) -> str:
        parts = []
        while True:
            self.skip_space()
            ch = self.peek()
            if ch in '{"':
                parts.append(self.delimited())
            elif ch.isdigit():
                match = re.compile(r"\d+").match(self.text, self.pos)
                parts.append(match.group(0))
                self.pos = match.end()
            else:
                match = _NAME.match(self.text, self.pos)
                if not match:
                    raise self.fail(f"expected a value, found {ch!r}" if ch else "expected a value, found the end of the file")
                name = match.group(0).lower()
                if name not in self.macros:
                    raise self.fail(f"undefined @string macro {match.group(0)!r}")
                parts.append(self.macros[name])
                self.pos = match.end()
            self.skip_space()
            if self.peek() != "#":
                return "".join(parts)
            self.pos += 1

    def name(self, what: str) -> str:
        self.skip_space()
        match = _NAME.match(self.text, self.pos)
        if not match:
            ch = self.peek()
            raise self.fail(f"expected {what}, found {ch!r}" if ch else f"expected {what}, found the end of the file")
        self.pos = match.end()
        return match.group(0)

    def entries(self) -> list[BibtexEntry]:
        found: list[BibtexEntry] = []
        while (at := self.text.find("@", self.pos)) != -1:
            self.pos = at + 1
            self.entry_line, self.field = self.line_of(at), ""
            line_start = self.line_starts[self.entry_line - 1]
            at_line_start = not self.text[line_start:at].strip()
            self.skip_space()
            match = _TYPE.match(self.text, self.pos)
            if not match:
                if at_line_start:
                    raise self.fail("'@' at the start of a line must begin an entry (@type{...})")
                continue  # an '@' inside comment text
            self.pos = match.end()
            kind = match.group(0).lower()
            self.skip_space()
            if self.peek() not in "{(" or not self.peek():
                if at_line_start:
                    raise self.fail(f"expected '{{' or '(' after @{match.group(0)}")
                continue
            close = "}" if self.peek() == "{" else ")"
            if kind == "comment":
                if close == "}":
                    self.delimited()
                else:
                    end = self.text.find(")", self.pos)
                    self.pos = len(self.text) if end == -1 else end + 1
                continue
            self.pos += 1
            if kind == "preamble":
                self.field = "preamble"
                self.value()
                self.expect(close, f"'{close}' closing the @preamble")
                continue
            if kind == "string":
                self.field = self.name("a macro name")
                self.expect("=", "'=' after the macro name")
                self.macros[self.field.lower()] = self.value()
                self.expect(close, f"'{close}' closing the @string")
                continue
            found.append(self.entry(kind, close))
        return found

    def entry(self, kind: str, close: str) -> BibtexEntry:
        self.skip_space()
        match = re.compile(r"[^,\s" + re.escape(close) + r"]+").match(self.text, self.pos)
        if not match:
            raise self.fail("the entry has no citation key")
        self.pos = match.end()
        entry = BibtexEntry(type=kind, key=match.group(0), line=self.entry_line)
        while True:  # self.field stays the last field read, the likely culprit of a runaway value
            ch = self.expect("," + close, f"',' or '{close}' after the citation key or a field")
            if ch == close:
                return entry
            self.skip_space()
            if self.peek() == close:  # trailing comma
                self.pos += 1
                return entry
            name = self.name("a field name").lower()
            self.field = name
            self.expect("=", f"'=' after the field name {name!r}")
            value = self.value()
            if name in entry.fields:
                raise self.fail("duplicate field in one entry")
            entry.fields[name] = value


def parse_bibtex(text: str, *, file: str = "") -> list[BibtexEntry]:
    """Every entry of a BibTeX text, in order (``@string``/``@comment``/``@preamble`` consumed)."""
    return _Parser(text, file).entries()


def _arxiv_id(fields: dict[str, str]) -> str:
    prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").lower()
    if fields.get("eprint") and prefix in ("", "arxiv"):
        found = clean_arxiv_id(fields["eprint"])
        if found:
            return found
    for name in ("url", "journal", "note", "howpublished"):
        if "arxiv" in fields.get(name, "").lower():
            found = clean_arxiv_id(fields[name])
            if found:
                return found
    return ""


def entry_record(entry: BibtexEntry) -> dict | None:
    """A BibTeX entry → a ``bib_entries_upsert`` record, or None without a usable title."""
    f = {k: " ".join(v.split()) for k, v in entry.fields.items()}
    title = f.get("title", "")
    if not has_usable_title(title):
        return None
    url = f.get("url", "")
    doi = clean_doi(f.get("doi", "")) or (clean_doi(url) if "doi.org" in url else "")
    return {
        "title": title,
        "authors": f.get("author", ""),
        "year": year_from(f.get("year")),
        "venue": f.get("journal") or f.get("booktitle") or "",
        "arxiv_id": _arxiv_id(f),
        "doi": doi,
        "url": url if url.startswith(("http://", "https://")) else "",
        "abstract": f.get("abstract", ""),
        "extra": {"bibtex_key": entry.key, "entry_type": entry.type},
    }


def import_bibtex(path: Path, *, result: ImportResult) -> None:
    path = Path(path)
    if not path.is_file():
        raise ImportFailed("expected a .bib file", file=path.name)
    entries = parse_bibtex(read_text(path), file=path.name)
    records, seen = [], {}
    for entry in entries:
        if entry.key.lower() in seen:
            raise ImportFailed(
                f"duplicate citation key {entry.key!r}, first used at line {seen[entry.key.lower()]}",
                file=path.name, line=entry.line,
            )
        seen[entry.key.lower()] = entry.line
        record = entry_record(entry)
        if record is None:
            result.messages.append(f"{path.name}, line {entry.line}: skipped @{entry.type}{{{entry.key}}} without a usable title")
            result.add("bibtex entry", "skipped")
            continue
        records.append(record)
    if not records:
        result.messages.append(f"{path.name}: no entries with a title")
        return
    bib_entries_store(records, result=result)
