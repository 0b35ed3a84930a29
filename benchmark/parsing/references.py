"""The report's own reference list: entries, titles, and citation resolution.

Entries come from sections headed References / Bibliography / Sources /
Works cited (and similar, see ``structure.REFERENCE_NAME_RE``) and from
footnote / link definitions (``[^1]: ...``, ``[1]: https://...``) anywhere.

Inside a reference section a line opens an entry when it starts with a
marker - ``[1]``, ``1.``, ``1)``, ``(1)``, a bullet, or a markdown link
(``\\[[label](url)\\] ...``); other lines continue the entry above.  A
section without any marker has one entry per line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from . import identifiers as ids
from .citations import LINK_RE
from .spans import strip_span

ENTRY_MARKER_RE = re.compile(
    r"^[ \t]*(?:"
    r"\[\^(?P<foot>[^\]\n]{1,64})\]:[ \t]*"
    r"|\[\[?(?P<bracket>\d{1,4})\]?\]:?[ \t]*"
    r"|(?P<dotted>\d{1,4})[.)][ \t]+"
    r"|\((?P<paren>\d{1,4})\)[ \t]+"
    r"|\[(?P<label>[^\]\n]{1,80})\]:[ \t]*"
    r"|(?P<bullet>[-*+\u2022])[ \t]+"
    r")"
)
_INNER_NUMBER_RE = re.compile(r"\[\[?(\d{1,4})\]?\][ \t]*")
_LEADING_LINK_RE = re.compile(r"^[ \t]*(?:[-*+\u2022][ \t]+)?\\?\[?(?=\[)")
_LEADING_ARXIV_RE = re.compile(r"^\[(?:arXiv:)?\d{4}\.\d{4,5}(?:v\d+)?\](?:\([^()\s]*\))?[ \t]*", re.IGNORECASE)
_IDENTIFIER_RE = re.compile(r"https?://|www\.|\b10\.\d{4,9}/|arXiv:", re.IGNORECASE)
_CONTINUATION_START_RE = re.compile(r"[a-z\d(<]|(?i:https?://|www\.|doi|arxiv|available|retrieved|in:|pp\.)")
_DOCUMENT_PREFIX_RE = re.compile(r"^(?:Document|Doc|Source|Ref(?:erence)?)\s*\d{1,4}\s*[:.\-]\s*", re.IGNORECASE)
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]{0,6}\.?\s+(?:\d{1,2},?\s+)?"
_YEAR_PAREN_RE = re.compile(
    rf"\((?:{_MONTH})?(?:(?:19|20)\d{{2}}[a-z]?(?:,[^()]{{0,40}})?|n\.d\.|in press|forthcoming)\)"
)
_QUOTED_RE = re.compile(r"[\u201c\"\u00ab]\s*([^\u201d\"\u00bb\n]{3,400}?)\s*[\u201d\"\u00bb]")
_INITIAL_RE = re.compile(r"(?:^|[\s,(])[A-Z]\.(?=[\s,]|$)")
_DOTTED_ACRONYM_RE = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_FOUR_DIGITS_RE = re.compile(r"\d{4}")
_WORDS_RE = re.compile(r"[^\W\d_]{2,}")
_ET_AL_RE = re.compile(r"\bet al\b")
_NAME_SPLIT_RE = re.compile(r",|&|\band\b")
_ENDS_WITH_INITIAL_RE = re.compile(r"\b[A-Z]$")
_TOKEN_BEFORE_RE = re.compile(r"[\w.]{1,12}$")
_ELLIPSIS_END_RE = re.compile(r"\s*(?:\.\.\.|\u2026)$")
_LONE_INITIAL_RE = re.compile(r"(?:and\s+)?[A-Z]")
_INITIALS_CHUNK_RE = re.compile(r"(?:[A-Z]\.\s?-?){0,3}[A-Z]\.?")
_SEGMENT_END_RE = re.compile(r"[.?!](?=\s|$)")
_ABBREV_BEFORE_DOT = frozenset(
    {"vs", "e.g", "i.e", "al", "vol", "no", "pp", "jr", "sr", "st", "dr", "ed", "eds", "etc"}
)
_YEAR_TOKEN_RE = re.compile(r"(?<!\d)(?:1[5-9]|20)\d{2}(?!\d)")
_WORD_RE = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")
_BOILERPLATE_RE = re.compile(
    r"\b(?:Available (?:at|from)|Retrieved from|Accessed|URL|\[Online\])\b:?.*$|\bdoi\s*:\s*\S+", re.IGNORECASE
)


@dataclass(slots=True)
class Entry:
    section_index: int | None
    style: str
    number: int | None
    label: str | None
    start: int
    end: int
    body_start: int


def entries_in_region(text: str, lines, first: int, last: int, section_index: int | None) -> list[Entry]:
    """Split lines ``first..last`` (a reference section's content) into entries."""
    marked: list[tuple[int, Entry]] = []
    plain: list[Entry] = []
    for i in range(first, last + 1):
        s, e = lines.starts[i], lines.ends[i]
        line = text[s:e]
        if not line.strip():
            continue
        entry = _entry_at(text, line, s, e, section_index)
        if entry is not None:
            marked.append((i, entry))
        start, end = strip_span(text, s, e)
        plain.append(Entry(section_index, "plain", None, None, start, end, start))
    if not marked:
        return plain
    entries = [entry for _, entry in marked]
    # extend each marked entry over the unmarked lines that continue it
    marked_lines = {i for i, _ in marked}
    covered = set(marked_lines)
    for i, entry in marked:
        j = i + 1
        while j <= last and j not in marked_lines and _continues(lines.line(j - 1), lines.line(j)):
            covered.add(j)
            j += 1
        if j - 1 > i:
            entry.end = strip_span(text, lines.starts[i], lines.ends[j - 1])[1]
    # other unmarked lines are kept only when they name a source (a bare URL
    # line among bullets), not an intro ("Sources used:") or a closing remark
    loose = [e for e in plain if lines.index_at(e.start) not in covered and _IDENTIFIER_RE.search(text, e.start, e.end)]
    return sorted(entries + loose, key=lambda e: e.start)


def _continues(previous: str, line: str) -> bool:
    """Does ``line`` continue the entry on ``previous`` (a wrapped entry),
    rather than being a remark after the list ("Please let me know...")?"""
    if not line.strip() or line.lstrip().startswith("</"):  # "</references>" closes the list
        return False
    if line[:1] in (" ", "\t") or previous.rstrip()[-1:] in (",", ";", ":", "-", "\u2013", "&", "("):
        return True
    return bool(_CONTINUATION_START_RE.match(line))


def definition_entry(text: str, start: int, end: int, section_index: int | None) -> Entry | None:
    """A ``[^1]: ...`` / ``[1]: url`` definition block outside a reference section."""
    line_end = text.find("\n", start, end)
    line_end = end if line_end < 0 else line_end
    entry = _entry_at(text, text[start:line_end], start, line_end, section_index)
    if entry is None:
        return None
    entry.end = strip_span(text, start, end)[1]
    if entry.style == "bracketed":
        entry.style = "definition"
    return entry


def _entry_at(text: str, line: str, s: int, e: int, section_index: int | None) -> Entry | None:
    start, end = strip_span(text, s, e)
    link = _LEADING_LINK_RE.match(line)
    if link:
        lm = LINK_RE.match(line, link.end())
        if lm:
            label = lm.group("label").strip()
            return Entry(section_index, "link", _int(label), label, start, end, start)
    m = ENTRY_MARKER_RE.match(line)
    if not m or m.end() >= len(line.rstrip()):
        return None
    body_start = s + m.end()
    if m.group("foot") is not None:
        label = m.group("foot")
        return Entry(section_index, "footnote", _int(label), label, start, end, body_start)
    if m.group("bracket") is not None:
        return Entry(section_index, "bracketed", int(m.group("bracket")), None, start, end, body_start)
    if m.group("dotted") is not None:
        return Entry(section_index, "numbered", int(m.group("dotted")), None, start, end, body_start)
    if m.group("paren") is not None:
        return Entry(section_index, "numbered", int(m.group("paren")), None, start, end, body_start)
    if m.group("label") is not None:
        label = m.group("label")
        return Entry(section_index, "definition", _int(label), label, start, end, body_start)
    # a bullet: "- [3] Title" still carries a number
    inner = _INNER_NUMBER_RE.match(line, m.end())
    if inner and inner.end() < len(line.rstrip()):
        return Entry(section_index, "bracketed", int(inner.group(1)), None, start, end, s + inner.end())
    return Entry(section_index, "bullet", None, None, start, end, body_start)


def _int(label: str) -> int | None:
    label = label.strip()
    return int(label) if label.isdigit() and len(label) <= 6 else None


# -- fields ------------------------------------------------------------------


def entry_fields(text: str, entry: Entry) -> tuple[str, str | None, str | None, str | None]:
    """(title, url, arXiv id, DOI) of an entry."""
    body = text[entry.body_start : entry.end]
    url = None
    link = LINK_RE.search(body)
    bare = ids.URL_RE.search(body)
    if link and link.group("url").lower().startswith(("http", "www.", "ftp")):
        url = link.group("url")
    elif bare:
        url = ids.trim_url(bare.group())
    arxiv = ids.arxiv_in(body)
    doi = ids.doi_in(body)
    return extract_title(body, entry.style == "link"), url, arxiv, doi


def extract_title(body: str, starts_with_link: bool = False) -> str:
    """Title of a reference entry body (marker removed).

    In order: the link text of an entry that is a link (unless the text is a
    label - an author and date, a number, a URL - followed by a longer
    description); the segment after ``(Year).`` in an author-year entry, or
    the text before ``(Year)`` when nothing follows it; a quoted title; the
    first segment that is not an author list. A leading bare ``[2204.06547v2]`` (how deep-research
    agents open an entry) is an identifier, not part of the title."""
    body = _LEADING_ARXIV_RE.sub("", body.strip())
    if starts_with_link:
        m = LINK_RE.search(body)
        if m:
            label = _clean(m.group("label"))
            rest = _clean(_strip_urls(body[m.end() :].lstrip("\\]")).strip(" \t-\u2013\u2014:|"))
            if len(rest.split()) >= 3 and _looks_like_label(label):
                return _title_from_text(rest)
            if label:
                return label
    text = LINK_RE.sub(lambda m: m.group("label"), body)
    text = _clean(_BOILERPLATE_RE.sub("", _strip_urls(text)))
    return _title_from_text(text)


def _looks_like_label(label: str) -> bool:
    return bool(_FOUR_DIGITS_RE.search(label)) or label.isdigit() or "://" in label or not label


def _strip_urls(text: str) -> str:
    return ids.URL_RE.sub("", text)


def _clean(text: str) -> str:
    return " ".join(text.replace("\\", "").split()).strip()


def _title_from_text(text: str) -> str:
    text = _DOCUMENT_PREFIX_RE.sub("", text.strip())
    year = _YEAR_PAREN_RE.search(text)
    quoted = _QUOTED_RE.search(text)
    if quoted and len(quoted.group(1).split()) < 2:
        quoted = None
    if quoted and (year is None or quoted.start() < year.start()):
        return _finish(quoted.group(1))  # IEEE / MLA: Authors, "Title," ...
    if year:
        after = text[year.end() :].lstrip(" .,:;")
        if len(_WORDS_RE.findall(after)) >= 2:  # APA: Authors (2020). Title. Venue.
            quoted_after = _QUOTED_RE.match(after)
            return _finish(quoted_after.group(1) if quoted_after else _segments(after)[0])
        before = text[: year.start()].strip(" ,.-\u2013")
        if before and not _looks_like_authors(before):  # Title (2020) url
            return _finish(before)
    if quoted:
        return _finish(quoted.group(1))
    return _finish(_title_segment(text))


def _title_segment(text: str) -> str:
    """The first segment that is not part of a leading author list."""
    segments = _segments(text, split_at_initials=True)
    after_initial = False
    for segment in segments:
        if not _author_fragment(segment, after_initial):
            return segment
        after_initial = bool(_LONE_INITIAL_RE.fullmatch(segment.strip(" ,;&")))
    return segments[0] if segments else text


def _author_fragment(segment: str, after_initial: bool) -> bool:
    """``Smith, J`` / ``Lee, K`` / ``J`` / ``et al`` - or a surname right
    after initials (``J. R. R. | Tolkien``)."""
    core = segment.strip(" ,;&")
    if _LONE_INITIAL_RE.fullmatch(core) or _ET_AL_RE.search(core):
        return True
    words = core.split()
    if not words or len(words) > 6:
        return False
    if after_initial and len(words) <= 2 and "," not in core and all(w[:1].isupper() for w in words):
        return True
    chunks = [c.strip() for c in _NAME_SPLIT_RE.split(core) if c.strip()]
    has_initial = any(_INITIALS_CHUNK_RE.fullmatch(c) for c in chunks) or bool(_ENDS_WITH_INITIAL_RE.search(core))
    return has_initial and all(len(c.split()) <= 3 for c in chunks)


def _segments(text: str, split_at_initials: bool = False) -> list[str]:
    """Split at sentence punctuation followed by whitespace, but not after
    abbreviations, dotted acronyms (``U.S.``) or - unless asked to -
    single-letter initials."""
    out = []
    start = 0
    for m in _SEGMENT_END_RE.finditer(text):
        if m.group() == ".":
            word = _TOKEN_BEFORE_RE.search(text, max(start, m.start() - 12), m.start())
            token = word.group() if word else ""
            if (
                (len(token) == 1 and token.isupper() and not split_at_initials)
                or token.lower() in _ABBREV_BEFORE_DOT
                or _DOTTED_ACRONYM_RE.fullmatch(token)
            ):
                continue
        keep = 1 if m.group() in "?!" else 0
        segment = text[start : m.start() + keep].strip()
        if segment:
            out.append(segment)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out or [text]


def _looks_like_authors(segment: str) -> bool:
    if _ET_AL_RE.search(segment):
        return True
    chunks = [c for c in _NAME_SPLIT_RE.split(segment) if c.strip()]
    if not chunks or any(len(c.split()) > 4 for c in chunks):
        return False
    return bool(_INITIAL_RE.search(segment)) and ("," in segment or "&" in segment)


def _finish(title: str) -> str:
    title = title.strip()
    title = _ELLIPSIS_END_RE.sub("", title)
    title = title.strip(" \t.,;:")
    if len(title) >= 2 and title[0] in "*_" and title[-1] == title[0]:
        title = title.strip(title[0])
    if title.startswith("(") and title.endswith(")") and title.count("(") == 1:
        title = title[1:-1].strip()
    return title.strip(" \t\"'\u201c\u201d")


# -- resolution --------------------------------------------------------------


class Resolver:
    """Maps citation targets to reference-entry indices.

    Numeric, footnote and LaTeX citations prefer the first reference list
    that follows them (a report made of several parts, each with its own
    list), then the first matching entry anywhere; identifier matches (arXiv
    id, DOI, URL) take the first entry naming the identifier; author-year
    matches an entry containing the surname and the year, preferring the one
    where the surname comes earliest."""

    def __init__(self, text: str, entries: list, list_starts: list[int]) -> None:
        self.text = text
        self.entries = entries
        self.list_starts = list_starts  # start offset of each reference section, sorted
        self.by_number: dict[int, int] = {}
        self.by_label: dict[str, int] = {}
        self.scoped: dict[tuple[int | None, object], int] = {}
        self.by_id: dict[str, int] = {}
        self._words: dict[str, list[int]] | None = None
        for idx, ref in enumerate(entries):
            scope = self._scope_of(ref.start)
            keys: list[object] = []
            if ref.number is not None:
                keys.append(ref.number)
            if ref.label is not None:
                keys.append(ref.label.strip().lower())
            for key in keys:
                self.scoped.setdefault((scope, key), idx)
                target = self.by_number if isinstance(key, int) else self.by_label
                target.setdefault(key, idx)
            for key in self._keys(ref.arxiv_id, ref.doi, ref.url):
                self.by_id.setdefault(key, idx)
            for url_match in ids.URL_RE.finditer(text, ref.start, ref.end):
                self.by_id.setdefault("url:" + ids.url_key(ids.trim_url(url_match.group())), idx)

    def _scope_of(self, pos: int) -> int | None:
        """Start of the reference section at or before ``pos``."""
        k = bisect_right(self.list_starts, pos) - 1
        return self.list_starts[k] if k >= 0 else None

    @staticmethod
    def _keys(arxiv: str | None, doi: str | None, url: str | None) -> list[str]:
        keys = []
        if arxiv:
            keys.append("arxiv:" + arxiv)
        if doi:
            keys.append("doi:" + doi)
        if url:
            keys.append("url:" + ids.url_key(url))
        return keys

    def _lookup(self, key: object, pos: int) -> int | None:
        k = bisect_right(self.list_starts, pos)
        if k < len(self.list_starts):
            found = self.scoped.get((self.list_starts[k], key))
            if found is not None:
                return found
        table = self.by_number if isinstance(key, int) else self.by_label
        return table.get(key)

    def resolve(self, kind: str, target: str, pos: int, arxiv: str | None, doi: str | None, number: int | None):
        if kind in ("link", "url", "arxiv", "doi"):
            url = target if kind in ("link", "url") and "://" in target else None
            for key in self._keys(arxiv, doi, url):
                if key in self.by_id:
                    return self.by_id[key]
            return self._lookup(number, pos) if number is not None else None
        if kind == "numeric":
            return self._lookup(int(target), pos)
        if kind in ("footnote", "latex"):
            found = self._lookup(target.strip().lower(), pos)
            if found is None and target.isdigit():
                found = self._lookup(int(target), pos)
            return found
        if kind == "author_year":
            return self._author_year(target)
        return None

    def _word_index(self) -> dict[str, list[int]]:
        if self._words is None:
            self._words = {}
            self._lowered = [self.text[r.start : r.end].lower() for r in self.entries]
            self._years = [set(_YEAR_TOKEN_RE.findall(raw)) for raw in self._lowered]
            for idx, raw in enumerate(self._lowered):
                for word in set(_WORD_RE.findall(raw)):
                    self._words.setdefault(word, []).append(idx)
        return self._words

    def _author_year(self, target: str) -> int | None:
        surname, _, year = target.rpartition(" ")
        surname = surname.lower()
        words = _WORD_RE.findall(surname)
        best = None
        for idx in self._word_index().get(words[-1] if words else surname, ()):
            if year[:4] not in self._years[idx]:
                continue
            at = _word_at(self._lowered[idx], surname)
            if at >= 0 and (best is None or at < best[0]):
                best = (at, idx)
        return best[1] if best else None


def _word_at(haystack: str, word: str) -> int:
    """Offset of ``word`` as a whole word in ``haystack``, or -1."""
    at = haystack.find(word)
    while at >= 0:
        before = haystack[at - 1] if at else " "
        after = haystack[at + len(word) : at + len(word) + 1] or " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return at
        at = haystack.find(word, at + 1)
    return -1
