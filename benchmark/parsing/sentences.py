"""Sentence splitting with offsets.

A boundary is sentence-final punctuation (``. ! ? …`` and CJK full stops),
optionally followed by closing quotes, brackets, emphasis markers and
citation markers (``.[1][2]``, ``."``), then whitespace or the end of the
paragraph.  A candidate is rejected when

* the punctuation lies inside a protected span (citations, URLs, inline
  code and math - passed in by the caller);
* the next word is all lowercase (``e.g. the``, ``approx. five``; a
  camel-case word such as ``vLLM`` or ``iPhone`` may open a sentence);
* a period follows a known abbreviation (``e.g.``, ``i.e.``, ``et al.``,
  ``Fig.``, ``vs.``, ``cf.``, ``Eq.``, ``No.``, ``Dr.``, ...), a single
  capital letter (an initial, ``J. Smith``, ``P. pyralis``), a dotted
  acronym (``U.S.``) or an enumeration number opening the paragraph.

Decimals (``3.5``) and version numbers never split because no whitespace
follows their period.  Two OCR repairs (SurveyLens texts come from MinerU):
reference numbers glued to the period (``the peak.13 However``) and a lost
space (``living animals.BLI is``) still end a sentence.
"""

from __future__ import annotations

import re

from .spans import SpanSet, strip_span

_BOUNDARY_RE = re.compile(
    # ". " / "?" / "!)" / ".[1][2] " / '."' then whitespace or the end
    r"[.!?\u2026\u3002\uff01\uff1f]+"
    r"(?:[\"'\u201d\u2019)\]*_]|\[\^?[\w ,;\u2013\u2014-]{1,40}\])*"
    r"(?=\s|$)"
    # OCR text (MinerU): superscript reference numbers glued to the period,
    # "the peak.13 However" - only after a word, never after a digit (3.5 Hz)
    r"|\.(?<=[^\W\d_]{2}\.)\d{1,3}(?:[,\u2013-]\d{1,3}){0,5}(?=\s)"
    # OCR text: the space after the period lost - "in animals.BLI is"
    r"|[.!?](?<=[a-z]{2}[.!?])(?=[A-Z])"
)
_TOKEN_BEFORE_RE = re.compile(r"[\w.'\u2019-]{1,30}$")
_WORD_AFTER_RE = re.compile(r"[^\W\d_]+")
_DOTTED_ACRONYM_RE = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")

ABBREVIATIONS = frozenset(
    """
    e.g eg i.e ie et al cf vs v viz fig figs eq eqs eqn eqns sec secs sect ref refs ch chap chaps
    tab vol vols pp p ed eds dr mr mrs ms prof st mt jr sr inc ltd co corp approx ca resp
    dept univ est op cit ibid fn jan feb mar apr jun jul aug sep sept oct nov dec al suppl
    a.k.a w.r.t i.i.d ph.d u.s u.k e.u resp n.b
    """.split()
)
# Abbreviations only when a number follows ("No. 5"; "no." may end a sentence).
NUMBER_ABBREVIATIONS = frozenset({"no", "nos", "art", "para"})


def split_sentences(
    text: str, start: int, end: int, protected: SpanSet, trailing: dict[int, int] | None = None
) -> list[tuple[int, int]]:
    """Sentence spans inside ``text[start:end]`` (stripped, non-empty).

    ``trailing`` maps the start of each citation marker that follows its
    sentence (``works. [1]``, a pasted ``arXiv +1`` chip) to its end: such a
    marker right after a boundary joins the sentence before it."""
    spans: list[tuple[int, int]] = []
    sent_start = start
    for m in _BOUNDARY_RE.finditer(text, start, end):
        punct = m.start()
        if punct < sent_start or protected.contains(punct):
            continue
        if not _is_boundary(text, punct, m.group(), m.end(), end, sent_start):
            continue
        boundary = m.end()
        while trailing:
            nxt = boundary
            while nxt < end and text[nxt].isspace():
                nxt += 1
            if nxt not in trailing or trailing[nxt] > end:
                break
            boundary = trailing[nxt]
        s, e = strip_span(text, sent_start, boundary)
        if s < e:
            spans.append((s, e))
        sent_start = boundary
    s, e = strip_span(text, sent_start, end)
    if s < e:
        spans.append((s, e))
    return spans


def _is_boundary(text: str, punct: int, marker: str, after: int, end: int, sent_start: int) -> bool:
    nxt = after
    while nxt < end and text[nxt].isspace():
        nxt += 1
    if nxt < end:
        ch = text[nxt]
        if ch in ",;:":
            return False
        if ch.islower():
            word = _WORD_AFTER_RE.match(text, nxt, min(end, nxt + 40))
            if not (word and any(c.isupper() for c in word.group())):
                return False  # "e.g. the"; but "vLLM", "iPhone", "mRNA" may open a sentence
    if marker[0] != "." or marker.startswith(".."):
        return True
    m = _TOKEN_BEFORE_RE.search(text, max(sent_start, punct - 30), punct)
    if not m:
        return True
    token = m.group().lstrip("'\u2019-")
    if not token:
        return True
    lowered = token.lower().rstrip(".")
    if lowered in ABBREVIATIONS:
        return False
    if lowered in NUMBER_ABBREVIATIONS and nxt < end and text[nxt].isdigit():
        return False
    if len(token) == 1 and token.isupper():
        return False  # an initial
    if _DOTTED_ACRONYM_RE.fullmatch(token):
        return False
    if token.isdigit() and not text[sent_start : m.start()].strip(" \t*_#>"):
        return False  # "1. Intro..." enumeration at the start of the paragraph
    return True
