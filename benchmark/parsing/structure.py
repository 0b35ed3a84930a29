"""Block structure: headings, sections, paragraphs, tables, code and math blocks.

A single forward pass over the line table classifies lines into blocks.  It
follows CommonMark where that matters for generated reports (fenced code,
ATX and setext headings, thematic breaks, lists, block quotes, GFM pipe
tables) and adds what real outputs need:

* ``\\section{}``-style LaTeX headings (both formats);
* a standalone canonical section name (``References``, ``**Sources:**``,
  ``Conclusion``) as a heading - in markdown only when it forms a one-line
  paragraph, in plain text on any line;
* for ``format="text"``: numbered headings (``1. Introduction``,
  ``2.3 Methods``, ``Chapter 1 – Introduction``), accepted conservatively:
  short, capitalised, no closing punctuation, not inside a reference list,
  and not one of a run of consecutively numbered lines (a list or a table
  of contents);
* for plain text without blank lines (copy-pasted chat output), a line ending
  with closing punctuation ends the paragraph, other line breaks are wraps;
* otherwise (markdown, or text with blank lines) a single line break ends a
  paragraph when the line is long (over 100 characters) and ends a sentence:
  generated reports often put one paragraph per line (STORM), while
  hard-wrapped prose keeps its lines short.  CommonMark would join them.

Deliberate deviation from CommonMark: ``---`` under a multi-line paragraph is
a thematic break, not a setext heading (only a one-line paragraph becomes a
setext heading), so a stray rule does not turn a paragraph into a heading.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from .markup import CHIP_LINE_RE, PUNCTUATION_LINE_RE
from .spans import Lines, strip_span

FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
ATX_RE = re.compile(r"^[ \t]{0,3}(#{1,6})(?=[ \t]|$)")
SETEXT_RE = re.compile(r"^[ \t]{0,3}(?:=+|-+)[ \t]*$")
HR_RE = re.compile(r"^[ \t]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
LIST_RE = re.compile(r"^[ \t]*(?:[-*+•]|\d{1,9}[.)])(?:[ \t]+|$)")
ORDERED_ONE_RE = re.compile(r"^[ \t]*0*1[.)]")
QUOTE_RE = re.compile(r"^[ \t]{0,3}>[ \t]?")
DEF_RE = re.compile(r"^[ \t]{0,3}\[(\^?[^\]\n]{1,100})\]:(?:[ \t]+|$)")
TABLE_DELIM_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
LATEX_HEADING_RE = re.compile(r"^[ \t]*\\(section|subsection|subsubsection)\*?\{")
BEGIN_ENV_RE = re.compile(r"^[ \t]*\\begin\{([A-Za-z]{1,30}\*?)\}")
# LaTeX environments that form blocks, and the block kind each one makes.
ENV_BLOCK_KINDS = {
    **dict.fromkeys(
        ("equation", "align", "gather", "multline", "eqnarray", "displaymath", "flalign", "alignat", "math"), "math"
    ),
    "table": "table",
    "tabular": "table",
    "figure": "figure",
}
END_ENV_RE = re.compile(r"\\end\{([A-Za-z]{1,30}\*?)\}")
_SP = r"[^\S\r\n]"  # horizontal whitespace, including no-break spaces
NUMBERED_HEADING_RE = re.compile(
    rf"^{_SP}*(?:(?P<word>Chapter|Section|Part|CHAPTER|SECTION|PART){_SP}+(?P<wnum>\d{{1,2}}|[IVXLC]{{1,6}})"
    rf"(?:{_SP}*[:.\u2013\u2014-])?{_SP}+"
    rf"|(?P<num>\d{{1,2}}(?:\.\d{{1,2}}){{0,3}})\.?{_SP}+"
    rf"|(?P<roman>[IVX]{{1,5}})\.{_SP}+)"
    rf"(?P<title>\S.*?){_SP}*$"
)
_TERMINAL_RE = re.compile(r"[.!?:\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]*_]*$")
_NAME_DECOR_RE = re.compile(
    r"^\s*(?:[*_]{1,3})?(?:(?:\d{1,2}|[IVX]{1,5})\.?\s+)?(?P<name>.*?)\s*:?\s*(?:[*_]{1,3})?\s*:?\s*$"
)

REFERENCE_NAME_RE = re.compile(
    r"(?:references?|bibliography|sources|sources cited|sources used|works cited|literature cited|"
    r"cited works|cited literature|citations|reference list|list of references|further reading|"
    r"notes and references|references and notes|references and further reading|key sources|"
    r"selected references|selected bibliography)",
    re.IGNORECASE,
)
# Deep-research agents (DeepScholar-bench's deepresearcher, openscholar) close their
# answer with the list wrapped in a tag line: "<references>" ... "</references>".
REFERENCE_TAG_RE = re.compile(r"^[ \t]*<(?P<name>references?|bibliography|sources|citations)>[ \t]*$", re.IGNORECASE)
SECTION_NAMES = frozenset(
    {
        "abstract", "introduction", "background", "related work", "related works", "literature review",
        "methods", "methodology", "materials and methods", "results", "discussion", "conclusion",
        "conclusions", "concluding remarks", "summary", "future work", "future directions",
        "future research directions", "limitations", "acknowledgements", "acknowledgments", "appendix",
        "overview", "executive summary", "key findings", "open challenges", "preliminaries",
        "challenges and future directions", "conclusion and future work", "conclusions and future work",
    }
)

_ENTRY_START_RE = re.compile(r"^[ \t]*(?:\\?\[\[?\^?\d{1,4}\]|\\?\[\[)")
_SENTENCE_END_RE = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]*_]*(?:\[[^\[\]\n]{1,40}\])*$")
_LONG_LINE = 100  # hard-wrapped prose stays below this; paragraph-per-line output does not
_DISPLAY_MATH = (("$$", "$$"), ("\\[", "\\]"))  # (opening, closing) of display-math blocks
_MAX_BLOCK_LINES = 400  # how far a math / html block may look for its end
_MAX_HEADING_LINE = 160


@dataclass(slots=True)
class Heading:
    start: int  # start of the heading's first line
    end: int  # end of the heading's last line (underline included)
    title_start: int
    title_end: int
    level: int  # 0 until resolved, for ``named`` headings
    style: str
    is_reference_name: bool


@dataclass(slots=True)
class Block:
    kind: str  # para, table, html_table, figure, code, math, hr, def
    start: int
    end: int
    para_kind: str = "text"  # for para: text, list_item, quote


@dataclass(slots=True)
class Structure:
    headings: list[Heading]
    blocks: list[Block]


def heading_name(title: str) -> str:
    """Lowercased title without emphasis markers, numbering or a trailing colon."""
    m = _NAME_DECOR_RE.match(title)
    name = m.group("name") if m else title
    return " ".join(name.strip("*_ \t").lower().split())


def is_reference_title(title: str) -> bool:
    return REFERENCE_NAME_RE.fullmatch(heading_name(title)) is not None


def _is_named_line(line: str) -> tuple[bool, bool]:
    """(is a canonical section name, is a reference-list name)."""
    if len(line) > 60 or not line.strip():
        return False, False
    if REFERENCE_TAG_RE.match(line):
        return True, True
    name = heading_name(line)
    if REFERENCE_NAME_RE.fullmatch(name):
        return True, True
    return name in SECTION_NAMES, False


def _latex_title(text: str, open_brace: int, limit: int) -> int | None:
    """Offset of the brace closing the one opened at ``open_brace`` (same line)."""
    depth = 0
    for i in range(open_brace, limit):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


class _Scanner:
    def __init__(self, text: str, lines: Lines, fmt: str) -> None:
        self.text = text
        self.lines = lines
        self.fmt = fmt
        self.n = len(lines)
        self.headings: list[Heading] = []
        self.blocks: list[Block] = []
        self.in_refs = False
        self._closers: dict[str, list[int]] = {}
        self.line_mode = fmt == "text" and not self._has_blank_separation()
        self.numbered = self._numbered_candidates() if fmt == "text" else {}

    # -- helpers ---------------------------------------------------------
    def _line(self, i: int) -> str:
        return self.lines.line(i)

    def _blank(self, i: int) -> bool:
        return i >= self.n or not self._line(i).strip()

    def _has_blank_separation(self) -> bool:
        seen_text = False
        pending_blank = False
        for i in range(self.n):
            if self._line(i).strip():
                if pending_blank and seen_text:
                    return True
                seen_text = True
                pending_blank = False
            else:
                pending_blank = True
        return False

    def _numbered_candidates(self) -> dict[int, tuple[int, tuple[int, ...], int, int]]:
        """line -> (level, number path, title start, title end) for plain text."""
        found: dict[int, tuple[int, tuple[int, ...], int, int]] = {}
        for i in range(self.n):
            line = self._line(i)
            if len(line) > _MAX_HEADING_LINE or not line.strip():
                continue
            m = NUMBERED_HEADING_RE.match(line)
            if not m:
                continue
            title = m.group("title")
            words = title.split()
            if not title[0].isupper() or len(words) > 12 or title[-1] in ".,;:" or LIST_RE.match(title):
                continue
            if m.group("word"):
                level, path = 1, (_roman_or_int(m.group("wnum")),)
            elif m.group("num"):
                path = tuple(int(p) for p in m.group("num").split("."))
                level = len(path)
            else:
                level, path = 1, (_roman_or_int(m.group("roman")),)
            base = self.lines.starts[i]
            found[i] = (level, path, base + m.start("title"), base + m.end("title"))
        # A run of consecutively numbered lines at one depth is a list or a
        # table of contents, not a sequence of headings.
        rejected = set()
        ordered = sorted(found)
        for a, b in zip(ordered, ordered[1:]):
            if any(self._line(k).strip() for k in range(a + 1, b)):
                continue
            pa, pb = found[a][1], found[b][1]
            if len(pa) == len(pb) and pa[:-1] == pb[:-1] and pb[-1] == pa[-1] + 1:
                rejected.update((a, b))
        return {i: v for i, v in found.items() if i not in rejected}

    def _add_heading(self, first: int, last: int, t_start: int, t_end: int, level: int, style: str) -> None:
        t_start, t_end = strip_span(self.text, t_start, t_end)
        title = self.text[t_start:t_end]
        is_ref = is_reference_title(title)
        self.headings.append(
            Heading(self.lines.starts[first], self.lines.ends[last], t_start, t_end, level, style, is_ref)
        )
        if is_ref:
            self.in_refs = True
        elif style != "numbered":
            self.in_refs = False

    def _find_closing(self, i: int, key: str) -> int | None:
        """First line ``j >= i`` (within ``_MAX_BLOCK_LINES``) that can close a
        block of kind ``key``; line lists are computed once per kind, so
        many unclosed openers stay linear."""
        candidates = self._closers.get(key)
        if candidates is None:
            candidates = self._closers[key] = self._closing_lines(key)
        k = bisect_left(candidates, i)
        if k < len(candidates) and candidates[k] < i + _MAX_BLOCK_LINES:
            return candidates[k]
        return None

    def _closing_lines(self, key: str) -> list[int]:
        if key == "$$":
            return [j for j in range(self.n) if "$$" in self._line(j)]
        if key == "\\]":
            return [j for j in range(self.n) if self._line(j).rstrip().endswith("\\]")]
        if key == "</table>":
            return [j for j in range(self.n) if "</table>" in self._line(j).lower()]
        if "\\end{" not in self._closers:  # every \end{env} line, computed in one pass
            ends: dict[str, list[int]] = {}
            for m in END_ENV_RE.finditer(self.text):
                line = self.lines.index_at(m.start())
                found = ends.setdefault("\\end{" + m.group(1) + "}", [])
                if not found or found[-1] != line:
                    found.append(line)
            self._closers.update(ends)
            self._closers["\\end{"] = []
        return self._closers.get(key, [])

    def _block(self, kind: str, first: int, last: int, para_kind: str = "text", start: int | None = None) -> None:
        s = self.lines.starts[first] if start is None else start
        self.blocks.append(Block(kind, s, self.lines.ends[last], para_kind))

    # -- block openers ---------------------------------------------------
    def _opener(self, i: int) -> int | None:
        """If line ``i`` opens a non-paragraph block, consume it; return the
        next line index.  Otherwise return None."""
        line = self._line(i)
        stripped = line.strip()
        if FENCE_RE.match(line):
            fence = FENCE_RE.match(line).group(1)
            close = self._find_closing_fence(i + 1, fence)
            self._block("code", i, close)
            return close + 1
        for opener, closer in _DISPLAY_MATH:
            if stripped.startswith(opener) and not stripped.startswith("\\[["):  # "\[[x](url)\]" is a link
                if len(stripped) >= 4 and stripped.endswith(closer):
                    self._block("math", i, i)
                    return i + 1
                j = self._find_closing(i + 1, closer)
                if j is not None:
                    self._block("math", i, j)
                    return j + 1
        m = BEGIN_ENV_RE.match(line)
        if m and m.group(1).rstrip("*") in ENV_BLOCK_KINDS:
            j = self._find_closing(i, "\\end{" + m.group(1) + "}")
            if j is not None:
                self._block(ENV_BLOCK_KINDS[m.group(1).rstrip("*")], i, j)
                return j + 1
        low = stripped[:200].lower()
        if low.startswith("<table") or (low.startswith(("<html", "<body", "<div")) and "<table" in low):
            j = self._find_closing(i, "</table>")
            self._block("html_table", i, i if j is None else j)
            return (i if j is None else j) + 1
        m = ATX_RE.match(line)
        if m:
            t_start = self.lines.starts[i] + m.end()
            t_end = self.lines.ends[i]
            body = self.text[t_start:t_end].rstrip()
            closing = body.rstrip("#")
            if closing != body and (not closing or closing[-1] in " \t"):
                body = closing
            self._add_heading(i, i, t_start, t_start + len(body), len(m.group(1)), "atx")
            return i + 1
        m = LATEX_HEADING_RE.match(line)
        if m:
            base = self.lines.starts[i]
            close = _latex_title(self.text, base + m.end() - 1, self.lines.ends[i])
            if close is not None:
                level = {"section": 1, "subsection": 2, "subsubsection": 3}[m.group(1)]
                self._add_heading(i, i, base + m.end(), close, level, "latex")
                if self.text[close + 1 : self.lines.ends[i]].strip():
                    # "\subsection{X} Text ..." - the text opens a paragraph
                    self.headings[-1].end = close + 1
                    return self._paragraph(i, start=close + 1)
                return i + 1
        if HR_RE.match(line):
            self._block("hr", i, i)
            return i + 1
        m = DEF_RE.match(line)
        if m:
            j = i + 1
            while j < self.n and not self._blank(j) and self._line(j)[:1] in (" ", "\t"):
                j += 1
            self._block("def", i, j - 1)
            return j
        if "|" in line and i + 1 < self.n and "|" in self._line(i + 1) and TABLE_DELIM_RE.match(self._line(i + 1)):
            j = i + 2
            while j < self.n and not self._blank(j) and "|" in self._line(j):
                j += 1
            self._block("table", i, j - 1)
            return j
        if self.fmt == "text" and i in self.numbered and not self.in_refs:
            level, _, t_start, t_end = self.numbered[i]
            self._add_heading(i, i, t_start, t_end, level, "numbered")
            return i + 1
        return None

    @staticmethod
    def _env_opener(line: str) -> bool:
        m = BEGIN_ENV_RE.match(line)
        return bool(m) and m.group(1).rstrip("*") in ENV_BLOCK_KINDS

    def _find_closing_fence(self, i: int, fence: str) -> int:
        char, size = fence[0], len(fence)
        for j in range(i, self.n):
            stripped = self._line(j).strip()
            if stripped.startswith(char * size) and not stripped.strip(char):
                return j
        return self.n - 1

    def _starts_block(self, i: int, in_text: bool = False) -> bool:
        """Would line ``i`` interrupt a paragraph?  As in CommonMark, an
        ordered list item interrupts a plain paragraph (``in_text``) only
        when it is numbered 1 ("2016) addresses ..." continues the text)."""
        line = self._line(i)
        stripped = line.strip()
        if not stripped:
            return True
        m = LIST_RE.match(line)
        if m and (not in_text or not stripped[0].isdigit() or ORDERED_ONE_RE.match(line)):
            return True
        if (
            FENCE_RE.match(line)
            or ATX_RE.match(line)
            or HR_RE.match(line)
            or QUOTE_RE.match(line)
            or DEF_RE.match(line)
            or LATEX_HEADING_RE.match(line)
            or self._env_opener(line)
            or stripped.startswith("$$")
            or (stripped.startswith("\\[") and not stripped.startswith("\\[["))
            or stripped[:6].lower() == "<table"
        ):
            return True
        if "|" in line and i + 1 < self.n and "|" in self._line(i + 1) and TABLE_DELIM_RE.match(self._line(i + 1)):
            return True
        if self.fmt == "text":
            if i in self.numbered and not self.in_refs:
                return True
            if _is_named_line(line)[0]:
                return True
        return False

    # -- main loop --------------------------------------------------------
    def scan(self) -> Structure:
        i = 0
        while i < self.n:
            if self._blank(i):
                i += 1
                continue
            nxt = self._opener(i)
            if nxt is not None:
                i = nxt
                continue
            i = self._paragraph(i)
        return Structure(self.headings, self.blocks)

    def _paragraph(self, first: int, start: int | None = None) -> int:
        """Consume the paragraph opened on line ``first`` (at offset ``start``
        when it opens mid-line, after a LaTeX heading)."""
        line = self._line(first)
        para_kind, content_start = "text", self.lines.starts[first] if start is None else start
        if start is None:
            m = LIST_RE.match(line)
            if m:
                para_kind, content_start = "list_item", self.lines.starts[first] + m.end()
            elif m := QUOTE_RE.match(line):
                para_kind, content_start = "quote", self.lines.starts[first] + m.end()
        if para_kind in ("text", "list_item") and start is None:
            underline = self._line(first + 1) if first + 1 < self.n else ""
            if para_kind == "text" and self.fmt == "markdown" and SETEXT_RE.match(underline):
                if len(line.strip()) <= _MAX_HEADING_LINE * 2:
                    level = 1 if underline.strip()[0] == "=" else 2
                    base, end = self.lines.starts[first], self.lines.ends[first]
                    self._add_heading(first, first + 1, base, end, level, "setext")
                    return first + 2
            named, is_ref = _is_named_line(line)
            numbered_ref = is_ref and line.lstrip()[:1].isdigit()  # "7. References" is no list item
            standalone = self.fmt == "text" or self._standalone(first) or (is_ref and self._entry_follows(first))
            if named and (para_kind == "text" or numbered_ref) and standalone:
                m = REFERENCE_TAG_RE.match(line) or _NAME_DECOR_RE.match(line)
                base = self.lines.starts[first]
                self._add_heading(first, first, base + m.start("name"), base + m.end("name"), 0, "named")
                return first + 1
        last = first
        closed = self._closes(line, False)
        j = first + 1
        while j < self.n:
            line_j = self._line(j)
            if not line_j.strip():
                break
            if self.line_mode and closed and not self._attachable(line_j):
                break
            if not self.line_mode and len(line) > _LONG_LINE and _SENTENCE_END_RE.search(line.rstrip()):
                break  # one paragraph per line, see module doc
            if self.fmt == "markdown" and SETEXT_RE.match(line_j):
                break  # underline of a multi-line paragraph: a rule, see module doc
            if not (para_kind == "quote" and QUOTE_RE.match(line_j)) and self._starts_block(
                j, in_text=para_kind == "text"
            ):
                break
            last, line, j = j, line_j, j + 1
            closed = self._closes(line, closed)
        if self.fmt == "markdown" and j < self.n and SETEXT_RE.match(self._line(j)) and j > first + 1:
            self._block("para", first, last, para_kind, content_start)
            self._block("hr", j, j)
            return j + 1
        self._block("para", first, last, para_kind, content_start)
        return j

    def _closes(self, line: str, previous_closed: bool) -> bool:
        """In line mode: does ``line`` end its paragraph?  Closing punctuation
        does; a pasted source chip does when the line before it did (else the
        chip sits inside a sentence)."""
        if not self.line_mode:
            return False
        if _TERMINAL_RE.search(line.rstrip()):
            return True
        return previous_closed and bool(CHIP_LINE_RE.match(line))

    @staticmethod
    def _attachable(line: str) -> bool:
        """A source chip or lone punctuation belongs to the paragraph before."""
        return bool(CHIP_LINE_RE.match(line) or PUNCTUATION_LINE_RE.match(line))

    def _entry_follows(self, i: int) -> bool:
        """Does a reference entry ("[1] ...", "\\[[x](url)\\] ...") follow line ``i``?"""
        return i + 1 < self.n and bool(_ENTRY_START_RE.match(self._line(i + 1)))

    def _standalone(self, i: int) -> bool:
        """A markdown paragraph only starts after a blank line or another
        block, so a one-line paragraph is one whose next line ends it."""
        return i + 1 >= self.n or self._starts_block(i + 1)


def _roman_or_int(token: str) -> int:
    if token.isdigit():
        return int(token)
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}
    total = 0
    for a, b in zip(token, token[1:] + " "):
        va, vb = values[a], values.get(b, 0)
        total += -va if va < vb else va
    return total


def scan(text: str, lines: Lines, fmt: str) -> Structure:
    structure = _Scanner(text, lines, fmt).scan()
    _resolve_named_levels(structure.headings)
    return structure


def _resolve_named_levels(headings: list[Heading]) -> None:
    """A ``named`` heading takes the top section level of the document:
    the smallest level of the other headings, ignoring a single level-1
    title that opens the document."""
    levels = [h.level for h in headings if h.style != "named"]
    if not levels:
        top = 1
    else:
        rest = levels[1:] if levels[0] == 1 and levels.count(1) == 1 and len(levels) > 1 else levels
        top = min(rest)
    for h in headings:
        if h.style == "named":
            h.level = top
