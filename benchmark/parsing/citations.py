"""Inline citation detection.

Detectors run in priority order; a later detector never claims text that an
earlier one (or a blocked span: inline code, math, images) already holds, so
an arXiv id inside a URL inside a markdown link is one ``link`` citation.
Only text inside the ``allowed`` regions (prose paragraphs and tables outside
reference lists) is searched.

Forms (``kind``):

* ``link`` - ``[text](https://...)``; ``[1](#ref-1)`` (an anchor with a
  numeric text) and OpenScholar's ``[0](paperId)`` count as ``numeric``;
* ``latex`` - ``\\cite{a,b}``, ``\\citep[p.~3]{a}``, ``\\citet*{a}``, ...;
* ``footnote`` - ``[^1]``;
* ``numeric`` - ``[1]``, ``[1, 3]``, ``[1-3]``/``[1–3]`` (expanded, ranges of
  at most 200), ``[[11,16]]``, ``[cite: 8, 9]``, ``\\[1\\]``, ``【1†source】``;
  ``[12][15]`` is two markers;
* ``url`` - bare ``https://...`` / ``www.`` URLs;
* ``doi`` - ``10.1234/abc`` with an optional ``doi:`` prefix;
* ``arxiv`` - ``arXiv:2301.01234v2`` or a bare new-style id ``2301.01234v2``;
* ``author_year`` - ``(Smith et al., 2020)``, ``(Smith, 2020; Lee, 2021a)``,
  ``(see Li & Shen, ECCV 2018)``, narrative ``Smith and Lee (2019)``;
* ``source_chip`` - a line holding only a source name or domain, with an
  optional ``+N`` line, as pasted from chat interfaces (``arXiv`` / ``+1``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import identifiers as ids
from .markup import SOURCE_CHIP_RE
from .spans import SpanSet

LINK_RE = re.compile(
    r"\[(?<!!\[)(?P<label>(?:[^\[\]\n]|\[[^\[\]\n]{0,300}\]){0,300})\]"
    r"\([ \t]*<?(?P<url>[^\s()<>]{1,2000}(?:\([^\s()<>]{0,500}\)[^\s()<>]{0,500}){0,5})>?"
    r"(?:[ \t]+(?:\"[^\"\n]{0,300}\"|'[^'\n]{0,300}'))?[ \t]*\)"
)
LATEX_CITE_RE = re.compile(
    r"\\[A-Za-z]{0,12}cite[A-Za-z]{0,8}\*?(?:\[[^\]\n]{0,200}\]){0,2}\{(?P<keys>[^{}\n]{1,2000})\}"
)
_PAPER_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a retrieval id, not a URL, path or file name
FOOTNOTE_REF_RE = re.compile(r"\[\^(?P<label>[^\]\s]{1,64})\](?!:)")
_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014\u2212"
_NUM_ITEM = rf"\d{{1,4}}(?:[ \t]*[{_DASHES}][ \t]*\d{{1,4}})?"


def _numeric_body(group: str) -> str:
    prefix = r"(?:(?:cite|citation|citations|ref|refs|source|sources)[ \t]*:[ \t]*)?"
    return rf"{prefix}(?P<{group}>{_NUM_ITEM}(?:[ \t]*[,;][ \t]*{_NUM_ITEM}){{0,60}})"


NUMERIC_RE = re.compile(
    r"[\[\\\u3010](?:"
    rf"(?<=\[)\[[ \t]*{_numeric_body('body1')}[ \t]*\]\]"
    rf"|(?<=\[)[ \t]*{_numeric_body('body2')}[ \t]*\\?\](?![(:])"
    rf"|(?<=\\)\[[ \t]*{_numeric_body('body3')}[ \t]*\\?\](?![(:])"
    rf"|(?<=\u3010)(?P<body4>\d{{1,4}})(?:\u2020[^\u3011\n]{{0,100}})?\u3011)",
    re.IGNORECASE,
)
_LIST_SPLIT_RE = re.compile(r"[ \t]*[,;][ \t]*")
_RANGE_SPLIT_RE = re.compile(rf"[ \t]*[{_DASHES}][ \t]*")
_MAX_RANGE = 200

_UPPER = "A-Z\u00c0-\u00d6\u00d8-\u00de\u0100-\u017f"
_SURNAME = (
    r"(?:(?:van|von|der|den|de|del|della|di|da|du|dos|das|la|le|ten|ter)[ -]){0,3}"
    rf"[{_UPPER}][^\W\d_]*(?:[-'\u2019][^\W\d_]+){{0,3}}"
)
_AUTHORS = (
    rf"(?P<first>{_SURNAME})(?:\s+et\s+al\.?"
    rf"|(?:\s*,\s*{_SURNAME}){{0,6}}(?:\s*,?\s+(?:&|and)\s+{_SURNAME}|\s*&\s*{_SURNAME})?)"
)
_YEAR = r"(?:19|20)\d{2}[a-z]?(?!\d)"
_LOCATOR = r"(?:\s*,\s*(?:pp?\.|p|ch\.|chap\.|sec\.|\u00a7)\s*[\w\u2013-]{1,20})?"
_VENUE = r"(?:(?:[A-Z][A-Za-z]*[A-Z][A-Za-z]*|arXiv)\s+)?"
PAREN_RE = re.compile(r"\((?P<content>[^()]{3,300})\)")
YEAR_RE = re.compile(_YEAR)
PAREN_PART_RE = re.compile(
    rf"(?:(?:[a-z][\w.,]*|See|See also|Cf\.|E\.g\.,?)\s+){{0,6}}{_AUTHORS}\s*,?\s*{_VENUE}"
    rf"(?P<years>{_YEAR}(?:\s*,\s*{_YEAR})*){_LOCATOR}"
)
YEARS_ONLY_RE = re.compile(rf"(?P<years>{_YEAR}(?:\s*[,;]\s*{_YEAR})*){_LOCATOR}")
NARRATIVE_RE = re.compile(rf"(?<![\w-]){_AUTHORS}(?:'s|\u2019s)?\s*$")
_NARRATIVE_WINDOW = 160

# Capitalised words that precede "(2020)" or open "(In 2020)" without being authors.
NOT_SURNAMES = frozenset(
    """
    In On At By For From Since Until Before After During Circa About Around Through The A An See Between
    Table Figure Fig Section Chapter Eq Equation Version Released Published Updated Accessed Retrieved
    Copyright January February March April May June July August September October November December
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Spring Summer Fall Autumn Winter Year Years Vol No
    Page Pages Edition Volume And Or Of To As Also Both Early Late Mid This That These Those It Its We Our
    Their Here There When While Where Which Since Today Now Last Next Each Every Some All Many Most
    """.split()
)


@dataclass(slots=True)
class Marker:
    """One citation marker: a span naming one or more targets."""

    kind: str
    start: int
    end: int
    targets: list[str]
    arxiv_id: str | None = None
    doi: str | None = None
    number: int | None = None  # a numeric link text, for resolution


def find_markers(text: str, allowed: SpanSet, blocked: list[tuple[int, int]]) -> list[Marker]:
    """All citation markers inside ``allowed``, sorted by offset, non-overlapping."""
    claimed = SpanSet(blocked)
    markers: list[Marker] = []
    for detector in DETECTORS:
        taken: list[tuple[int, int]] = []
        batch_end = -1  # within one detector, the earliest (then longest) marker wins
        for marker in sorted(detector(text, allowed), key=lambda m: (m.start, m.start - m.end)):
            if marker.start < batch_end or claimed.overlaps(marker.start, marker.end):
                continue
            if marker.targets:  # a link that is no citation still claims its text
                markers.append(marker)
            taken.append((marker.start, marker.end))
            batch_end = marker.end
        claimed = SpanSet([*claimed, *taken])
    markers.sort(key=lambda m: m.start)
    return markers


def url_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.start() + len(ids.trim_url(m.group()))) for m in ids.URL_RE.finditer(text)]


# -- detectors ------------------------------------------------------------


def _inside(regex: re.Pattern, text: str, allowed: SpanSet):
    return (m for m in regex.finditer(text) if allowed.covers(m.start(), m.end()))


def _latex(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for m in _inside(LATEX_CITE_RE, text, allowed):
        keys = [k.strip() for k in m.group("keys").split(",") if k.strip()]
        out.append(Marker("latex", m.start(), m.end(), keys))
    return out


def _links(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for m in _inside(LINK_RE, text, allowed):
        url = m.group("url")
        label = m.group("label").strip().strip("[]^").strip()
        number = int(label) if label.isdigit() and len(label) <= 4 and int(label) > 0 else None
        low = url.lower()
        if low.startswith(("http://", "https://", "ftp://", "www.", "doi:")):
            if low.startswith("doi:"):
                doi = ids.normalize_doi(url[4:])
                out.append(Marker("link", m.start(), m.end(), [doi], doi=doi, number=number))
                continue
            arxiv, doi = ids.url_identifiers(url)
            out.append(
                Marker("link", m.start(), m.end(), [ids.normalize_url(url)], arxiv_id=arxiv, doi=doi, number=number)
            )
        elif low.startswith("#") and number is not None:
            out.append(Marker("numeric", m.start(), m.end(), [str(number)], number=number))
        elif label.isdigit() and len(label) <= 4 and _PAPER_ID_RE.fullmatch(url):
            # OpenScholar's "[n](paper id)": the n-th retrieved passage (from 0), listed as "[n] ..."
            out.append(Marker("numeric", m.start(), m.end(), [str(int(label))], number=int(label)))
        else:
            out.append(Marker("other", m.start(), m.end(), []))  # claimed, not a citation
    return out


def _footnotes(text: str, allowed: SpanSet) -> list[Marker]:
    return [Marker("footnote", m.start(), m.end(), [m.group("label")]) for m in _inside(FOOTNOTE_REF_RE, text, allowed)]


def expand_numbers(body: str) -> list[int]:
    numbers: list[int] = []
    for part in _LIST_SPLIT_RE.split(body.strip()):
        bounds = [int(p) for p in _RANGE_SPLIT_RE.split(part) if p.isdigit()]
        if len(bounds) == 2 and 0 < bounds[1] - bounds[0] <= _MAX_RANGE:
            numbers.extend(range(bounds[0], bounds[1] + 1))
        else:
            numbers.extend(bounds)
    seen = set()
    return [n for n in numbers if n > 0 and not (n in seen or seen.add(n))]


def _numeric(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for m in _inside(NUMERIC_RE, text, allowed):
        body = m.group("body1") or m.group("body2") or m.group("body3") or m.group("body4")
        numbers = expand_numbers(body)
        if numbers:
            out.append(Marker("numeric", m.start(), m.end(), [str(n) for n in numbers]))
    return out


def _urls(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for start, end in url_spans(text):
        url = text[start:end]
        if end - start < 8 or not allowed.covers(start, end):
            continue
        arxiv, doi = ids.url_identifiers(url)
        out.append(Marker("url", start, end, [ids.normalize_url(url)], arxiv_id=arxiv, doi=doi))
    return out


def _dois(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for m in _inside(ids.DOI_RE, text, allowed):
        doi = ids.trim_url(m.group())
        start = m.start()
        prefix = ids.DOI_PREFIX_BEFORE_RE.search(text[max(0, start - 8) : start])
        if prefix:
            start -= len(prefix.group())
        normalized = ids.normalize_doi(doi)
        out.append(Marker("doi", start, m.start() + len(doi), [normalized], doi=normalized))
    return out


def _arxiv(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for regex in (ids.ARXIV_PREFIXED_RE, ids.ARXIV_BARE_RE):
        for m in _inside(regex, text, allowed):
            identifier = m.group(1)
            if "/" not in identifier and not ids.valid_arxiv_new(identifier):
                continue
            normalized = ids.normalize_arxiv(identifier)
            out.append(Marker("arxiv", m.start(), m.end(), [normalized], arxiv_id=normalized))
    return out


def _surname_ok(name: str) -> bool:
    last_word = name.split()[-1] if name.split() else name
    if name in NOT_SURNAMES:
        return False
    letters = [c for c in last_word if c.isalpha()]
    return not (len(letters) > 1 and all(c.isupper() for c in letters))  # GPT, BERT


def _years(raw: str) -> list[str]:
    return YEAR_RE.findall(raw)


def _author_year_parenthetical(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for m in _inside(PAREN_RE, text, allowed):
        content = m.group("content")
        if not YEAR_RE.search(content):
            continue
        targets = []
        for part in content.split(";"):
            pm = PAREN_PART_RE.fullmatch(part.strip())
            if pm and _surname_ok(pm.group("first")):
                targets.extend(f"{pm.group('first')} {year}" for year in _years(pm.group("years")))
        if targets:
            out.append(Marker("author_year", m.start(), m.end(), targets))
    return out


def _author_year_narrative(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for m in _inside(PAREN_RE, text, allowed):
        ym = YEARS_ONLY_RE.fullmatch(m.group("content").strip())
        if not ym:
            continue
        window_start = max(0, m.start() - _NARRATIVE_WINDOW)
        nm = NARRATIVE_RE.search(text, window_start, m.start())
        if not nm or not _surname_ok(nm.group("first")) or not allowed.covers(nm.start(), m.end()):
            continue
        targets = [f"{nm.group('first')} {year}" for year in _years(ym.group("years"))]
        out.append(Marker("author_year", nm.start(), m.end(), targets))
    return out


def _source_chips(text: str, allowed: SpanSet) -> list[Marker]:
    out = []
    for m in _inside(SOURCE_CHIP_RE, text, allowed):
        line_start = text.rfind("\n", 0, m.start()) + 1
        previous_line = text[text.rfind("\n", 0, max(0, line_start - 1)) + 1 : line_start]
        if previous_line.count("(") > previous_line.count(")"):
            continue  # a venue inside an open parenthesis, not a chip
        start = m.start("name")
        end = m.end("more") if m.group("more") else m.end("name")
        out.append(Marker("source_chip", start, end, [m.group("name").lower()]))
    return out


# in priority order: an earlier detector's markers win overlaps
DETECTORS = (
    _latex,
    _links,
    _footnotes,
    _numeric,
    _urls,
    _dois,
    _arxiv,
    _author_year_parenthetical,
    _author_year_narrative,
    _source_chips,
)
