"""Lexical evidence for the offline judge: sentences, citations, numbers, names and negation.

Everything here is deterministic string processing (no model): the offline judge
combines it with sentence embeddings. Conventions:

* text is normalised first: NFKC, every dash variant (‐ ‑ – — −) to ``-``, non-breaking
  spaces to spaces;
* a *value* is a number with its kind — ``year`` (1900–2099, no decimals), ``percent``
  (``70%``, ``70 percent``) or ``number`` (with an optional unit such as ``40 FPS`` or
  ``39.2km``) — and its *anchor*, the nearest content word before it;
* a *name* is a token that looks like a named method, dataset or acronym: two or more
  capitals (``SSD``, ``R-CNN``), CamelCase (``SegNet``), letters with digits
  (``YOLOv3``, ``ORB-SLAM2``, ``3D``), or a capitalised word that does not start its
  sentence. Names compare squashed: lower case without ``-``, ``/``, ``.`` and spaces.
"""

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

_DASHES = {ord(c): "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"}
_SPACES = {ord(c): " " for c in "\u00a0\u2007\u202f\u2009\u200a\u2002\u2003"}

STOPWORDS = frozenset("""
a about above after again against all also although am among an and any are as at be because been before being
below between both but by can could did do does doing done down during each either else etc even ever every
few for from further had has have having he her here hers him his how however i if in into is it its itself just
least less like made make makes many may me might more most much must my neither no nor not now of off often on
once one only or other others otherwise our ours out over own per rather same several shall she should since so
some such than that the their theirs them then there therefore these they this those though through thus to too
toward towards under until up upon us use used uses using very via was we well were what when where whereas
whether which while who whom whose why will with within without would yet you your
article survey report paper review text table section should must include includes including mention mentions
mentioned describe describes explain explains discuss discusses note notes state states example examples
""".split())

# Capitalised words that are not names even in mid-sentence.
_NOT_NAMES = frozenset("""
i a the this that these those in on at of for and or but however table figure fig section chapter appendix
equation eq part step stage phase type level first second third fourth fifth finally moreover furthermore
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday english
""".split())

NEGATIONS = frozenset("not no never without cannot neither nor none fails fail failed lacks lack unable "
                      "isn't aren't wasn't weren't doesn't don't didn't can't couldn't won't wouldn't".split())

_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|et al|etc|vs|cf|fig|figs|eq|eqs|approx|no|nos|dr|prof|sec|ref|refs|"
                            r"resp|al|ca|vol|pp|incl|esp|viz|jr|sr|st|mr|ms|mrs)\.", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]*[A-Z0-9])")
_BLOCK_START = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+|\|)")
_HEADING = re.compile(r"^\s*(#{1,6})\s+(.*?)\s*#*\s*$")
TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")

URL = re.compile(r"https?://[^\s<>\"'\])]+[^\s<>\"'\]).,;:]")
MARKDOWN_LINK = re.compile(r"\[([^\]\n]{1,300})\]\((https?://[^)\s]+)\)")
NUMERIC_CITATION = re.compile(r"\[(\d{1,4}(?:\s*[,;\u2013-]\s*\d{1,4})*)\]")
AUTHOR_YEAR_CITATION = re.compile(r"\((?:[A-Z][A-Za-z'\-]+(?: et al\.?| and [A-Z][A-Za-z'\-]+)?,? (?:19|20)\d{2}[a-z]?"
                                  r"(?:;\s*)?)+\)")
DOI = re.compile(r"\b10\.\d{4,9}/[^\s\]\)]+")

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9+]*(?:[-/.][A-Za-z0-9+]+)*")
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9.,])(?<![A-Za-z]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"  # digits (1,000 style) and decimals
    r"(?:(\s*%|\s+percent\b)|([A-Za-z]{1,3})\b)?(?![A-Za-z0-9])"  # then a percent sign or a glued unit
)
_UNITS = frozenset("k m b km m cm mm nm ms s h hz khz mhz ghz gb mb tb kb x fps k".split())
_NEXT_WORD = re.compile(r"\s*([A-Za-z][A-Za-z\-]*)")


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").translate(_DASHES).translate(_SPACES)


def squash(token: str) -> str:
    return re.sub(r"[\s\-/.]+", "", token.lower())


def stem(word: str) -> str:
    """A crude English stem: enough to match 'methods'/'method' and 'detected'/'detection'."""
    word = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
    return word


def strip_citations(text: str) -> str:
    """The text without URLs, DOIs and citation markers; markdown links keep their text."""
    text = MARKDOWN_LINK.sub(lambda m: m.group(1) if not URL.fullmatch(m.group(1)) else "", text)
    text = URL.sub("", text)
    text = DOI.sub("", text)
    text = NUMERIC_CITATION.sub("", text)
    text = AUTHOR_YEAR_CITATION.sub("", text)
    return re.sub(r"\s+([,.;:])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()


def citations_in(text: str) -> list[str]:
    """The citations a sentence carries, in order of appearance: URLs (links included), DOIs, [n] markers."""
    found: list[tuple[int, str]] = []
    for m in URL.finditer(text):
        found.append((m.start(), m.group(0)))
    for m in DOI.finditer(text):
        if not any(m.group(0) in url for _, url in found):
            found.append((m.start(), m.group(0)))
    for m in NUMERIC_CITATION.finditer(text):
        found.append((m.start(), m.group(0)))
    for m in AUTHOR_YEAR_CITATION.finditer(text):
        found.append((m.start(), m.group(0)))
    seen, ordered = set(), []
    for _, citation in sorted(found):
        if citation not in seen:
            seen.add(citation)
            ordered.append(citation)
    return ordered


# --- sentences ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    text: str
    kind: str  # "heading", "paragraph", "item" (list item), "row" (table row)
    level: int = 0  # heading level


def table_row(cells_line: str) -> list[str]:
    return [c.strip() for c in cells_line.strip().strip("|").split("|")]


def blocks(text: str) -> list[Block]:
    """Markdown-ish structure: headings, paragraphs (single newlines join lines), list items, table rows.

    A table row is rewritten as ``header: cell; header: cell`` so that a row can stand
    on its own as a sentence.
    """
    out: list[Block] = []
    lines = normalize(text).splitlines()
    current: list[str] = []
    kind = "paragraph"

    def flush() -> None:
        nonlocal current
        if current:
            out.append(Block(" ".join(current).strip(), kind))
        current = []

    header: list[str] | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            flush()
            header = None
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            out.append(Block(heading.group(2).strip(), "heading", len(heading.group(1))))
            header = None
            continue
        if stripped.startswith("|"):
            flush()
            if TABLE_SEPARATOR.match(stripped):
                continue
            cells = table_row(stripped)
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if header is None and TABLE_SEPARATOR.match(following):
                header = cells
                continue
            if header and len(header) == len(cells):
                row = "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells) if c)
            else:
                row = "; ".join(c for c in cells if c)
            if row:
                out.append(Block(row, "row"))
            continue
        header = None
        if _BLOCK_START.match(line):
            flush()
            kind = "item"
            current = [re.sub(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+", "", line).strip()]
            continue
        if not current:
            kind = "paragraph"
        current.append(stripped)
    flush()
    return [b for b in out if b.text]


def split_text(text: str) -> list[str]:
    """Sentences of one block of running text (no markdown structure)."""
    protected = _ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\x00"), text)
    return [s.replace("\x00", ".").strip() for s in _SENTENCE_END.split(protected) if s.strip()]


@lru_cache(maxsize=64)
def split_sentences(text: str, *, headings: bool = False) -> tuple[str, ...]:
    """Sentences in document order; headings only when asked (they carry topic, not claims)."""
    sentences: list[str] = []
    for block in blocks(text):
        if block.kind == "heading":
            if headings:
                sentences.append(block.text)
            continue
        if block.kind == "row":
            sentences.append(block.text)
            continue
        sentences.extend(s for s in split_text(block.text) if _TOKEN.search(s))
    return tuple(sentences)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def content_words(text: str) -> set[str]:
    return {stem(t) for t in tokens(text.lower()) if t.isalpha() and len(t) > 2 and t not in STOPWORDS}


# --- values and names ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    kind: str  # "year", "percent", "number"
    value: float
    unit: str
    anchor: str
    raw: str


@dataclass(frozen=True)
class Name:
    key: str  # squashed
    raw: str
    anchor: str
    strong: bool  # an acronym, CamelCase or a token with digits, not merely a capitalised word


@dataclass
class Evidence:
    """What a text asserts that can be checked word for word."""

    values: list[Value] = field(default_factory=list)
    names: list[Name] = field(default_factory=list)
    negated: bool = False
    squashed: str = ""
    name_keys: frozenset = frozenset()

    @property
    def terms(self) -> list[str]:
        seen, out = set(), []
        for v in self.values:
            key = f"{v.kind}:{v.value:g}"
            if key not in seen:
                seen.add(key)
                out.append(v.raw)
        for n in self.names:
            if n.key not in seen:
                seen.add(n.key)
                out.append(n.raw)
        return out

    def has_value(self, value: Value) -> bool:
        """The same quantity: equal number, same kind, and the same unit where both sides give one."""
        return any(abs(v.value - value.value) < 1e-9 and v.kind == value.kind
                   and (not v.unit or not value.unit or v.unit == value.unit) for v in self.values)

    def without(self, keys: frozenset) -> "Evidence":
        """The same evidence less the names in ``keys`` (words too common in a text to prove anything)."""
        if not keys:
            return self
        return Evidence(self.values, [n for n in self.names if n.key not in keys], self.negated, self.squashed,
                        self.name_keys)

    def has_name(self, name: Name) -> bool:
        if name.key in self.name_keys:
            return True
        return len(name.key) >= 4 and name.key in self.squashed


def _anchor_before(text: str, start: int, reach: int = 4) -> str:
    """The nearest content word among the ``reach`` words before ``start`` (stemmed), or ""."""
    words = re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)*", text[max(0, start - 60):start])[-reach:]
    for word in reversed(words):
        lowered = word.lower()
        if len(lowered) > 2 and lowered not in STOPWORDS:
            return stem(lowered)
    return ""


def _name_kind(token: str, sentence_initial: bool) -> str:
    """"strong" (acronym, CamelCase, letters with digits), "weak" (a mid-sentence capital) or ""."""
    if not any(c.isalpha() for c in token):
        return ""
    if any(c.isdigit() for c in token) or sum(1 for c in token if c.isupper()) >= 2 or re.search(r"[a-z][A-Z]", token):
        return "strong"
    if token[0].isupper() and not sentence_initial and token.lower() not in _NOT_NAMES and len(token) > 2:
        return "weak"
    return ""


@lru_cache(maxsize=20000)
def evidence(text: str) -> Evidence:
    """Values, names and negation of one sentence or short passage."""
    clean = strip_citations(normalize(text))
    values: list[Value] = []
    spans: list[tuple[int, int]] = []
    for m in _NUMBER.finditer(clean):
        digits, decimals, percent, unit = m.groups()
        if unit and unit.lower() not in _UNITS:
            continue  # "3D", "5G": a name, not a quantity
        number = float(digits.replace(",", "") + (decimals or ""))
        if percent:
            kind, unit = "percent", "%"
        elif not decimals and not unit and len(digits) == 4 and 1900 <= number <= 2099:
            kind = "year"
        else:
            kind = "number"
        if not unit and kind == "number":
            following = _NEXT_WORD.match(clean, m.end())
            unit = following.group(1) if following and following.group(1).lower() not in STOPWORDS else ""
        values.append(Value(kind, number, stem(unit or ""), _anchor_before(clean, m.start()), m.group(0).strip()))
        spans.append(m.span())
    names: list[Name] = []
    for sentence_start, sentence in _sentence_spans(clean):
        previous_end = -1  # end of the last name token, to join "Faster R-CNN" into one name
        for m in _TOKEN.finditer(sentence):
            token = m.group(0).rstrip(".")
            start = sentence_start + m.start()
            if any(a <= start < b for a, b in spans) or token.replace(".", "").replace(",", "").isdigit():
                previous_end = -1
                continue  # a quantity, not a name
            kind = _name_kind(token, m.start() == _first_token_start(sentence))
            if not kind:
                previous_end = -1
                continue
            if previous_end >= 0 and sentence[previous_end:m.start()] == " ":
                last = names.pop()
                raw = f"{last.raw} {token}"
                names.append(Name(squash(raw), raw, last.anchor, last.strong or kind == "strong"))
            else:
                names.append(Name(squash(token), token, _anchor_before(clean, start, reach=2), kind == "strong"))
            previous_end = m.start() + len(token)
    words = {w.lower() for w in re.findall(r"[A-Za-z']+", clean)}
    # "not only X but Y", "not confined to X but Y" contrast rather than deny
    negated = bool(words & NEGATIONS) and not re.search(r"\bnot\b[^.;]{0,80}\bbut\b", clean, re.IGNORECASE)
    return Evidence(values, names, negated, squash(clean), frozenset(n.key for n in names))


def _sentence_spans(text: str) -> list[tuple[int, str]]:
    spans, position = [], 0
    for part in _SENTENCE_END.split(text):
        index = text.find(part, position)
        spans.append((max(index, 0), part))
        position = max(index, 0) + len(part)
    return spans


def _first_token_start(sentence: str) -> int:
    m = _TOKEN.search(sentence)
    return m.start() if m else -1


def coverage(claim: Evidence, text_evidence: Evidence) -> tuple[list[str], list[str]]:
    """The claim's checkable terms found in, and missing from, a text."""
    found, missing = [], []
    seen = set()
    for v in claim.values:
        key = ("v", v.value)
        if key in seen:
            continue
        seen.add(key)
        (found if text_evidence.has_value(v) else missing).append(v.raw)
    for n in claim.names:
        if n.key in seen:
            continue
        seen.add(n.key)
        (found if text_evidence.has_name(n) else missing).append(n.raw)
    return found, missing


def shares_subject(claim: Evidence, text: Evidence) -> bool | None:
    """Whether the text names what the claim is about: its first specific name (a strong name of
    four or more characters or with a digit); None when the claim has no specific name."""
    subjects = [n for n in claim.names if n.strong and (len(n.key) >= 4 or any(c.isdigit() for c in n.key))]
    if not subjects:
        return None
    return text.has_name(subjects[0])


def conflicts(claim: Evidence, text: Evidence) -> list[str]:
    """Where a text gives a different value or name in the same context as the claim.

    Same subject: when the claim names something specific, the text names the first
    such name too (``shares_subject``). Same context: the same anchor word before the value, or the same
    unit after it, or the only value of its kind on both sides. Names conflict only
    between strong names right after the same anchor word (one is not part of the other). A value or name the text also
    states is never a conflict.
    """
    if shares_subject(claim, text) is False:
        return []
    found = []
    for v in claim.values:
        if text.has_value(v):
            continue
        same_kind = [t for t in text.values if t.kind == v.kind and (v.kind != "number" or t.unit == v.unit)]
        claim_kind = [c for c in claim.values if c.kind == v.kind]
        for t in same_kind:
            anchored = (v.anchor and t.anchor == v.anchor) or (v.unit and t.unit == v.unit and v.kind == "number")
            sole = len(same_kind) == 1 and len(claim_kind) == 1
            if anchored or sole:
                found.append(f"{v.raw} ≠ {t.raw}")
                break
    claim_names = {n.key for n in claim.names}
    for n in claim.names:
        if not n.strong or not n.anchor or text.has_name(n):
            continue
        for t in text.names:
            if (t.strong and t.anchor == n.anchor and t.key not in claim_names
                    and t.key not in n.key and n.key not in t.key):  # "ImageNet" is not a rival of "ImageNet 256x256"
                found.append(f"{n.raw} ≠ {t.raw}")
                break
    return found


_BOILERPLATE = re.compile(
    r"^\s*(?:in\s+(?:the|a)\s+[^,]{0,80},\s*)?"
    r"(?:[^.;:]{0,120}?\b(?:should|must|needs?\s+to|is\s+expected\s+to|has\s+to|shall)\s+"
    r"(?:also\s+)?(?:clearly\s+|explicitly\s+|briefly\s+)?)?"
    r"(?:(?:report|mention|state|note|explain|describe|discuss|include|indicate|list|cover|present|identify|"
    r"highlight|emphasi[sz]e|specify|point\s+out|clarify|introduce)s?\s+(?:that\s+|how\s+)?)?",
    re.IGNORECASE,
)


def strip_requirement(text: str) -> str:
    """A checklist requirement without its framing: "The article should mention that X" → "X".

    Everything up to "should/must <reporting verb> (that)" within the first 120
    characters is framing; "In the comparison table, report that X" → "X" too.
    """
    stripped = _BOILERPLATE.sub("", normalize(text), count=1).strip()
    return stripped if len(tokens(stripped)) >= 2 else normalize(text).strip()


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of the headings of a markdown text, or of an outline written as lines.

    Lines like ``2.1 Title`` or ``- Title`` count in an outline without ``#`` marks;
    their level is the depth of the numbering or the indentation.
    """
    found = [(b.level, b.text) for b in blocks(text) if b.kind == "heading"]
    if found:
        return found
    out = []
    for line in normalize(text).splitlines():
        if not line.strip():
            continue
        numbered = re.match(r"^\s*((?:\d+|[IVXLC]+|[A-Z])(?:\.\d+)*)[.)]?\s+(\S.*)$", line)
        if numbered:
            out.append((numbered.group(1).count(".") + 1, numbered.group(2).strip()))
            continue
        bullet = re.match(r"^(\s*)(?:[-*+•]\s+)?(\S.*)$", line)
        out.append((len(bullet.group(1).expandtabs(4)) // 2 + 1, bullet.group(2).strip()))
    return out
