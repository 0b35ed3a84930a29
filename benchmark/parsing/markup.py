"""Inline markup recognized by several modules: code, math, images, captions
and chat-interface source chips.  Every pattern is bounded so that a scan
is linear in the input."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .spans import SpanSet

# Performance note for every pattern of this package that scans whole texts:
# start it with a literal character or a character class, and put
# look-behind checks after that first character, so that the regex engine can
# skip ahead to candidate positions instead of trying every offset.

# `code` with single backticks; LaTeX ``quotes'' are not code.
INLINE_CODE_RE = re.compile(r"`(?<!``)(?!`)[^`\n]{1,1000}(?<!`)`(?!`)")
MD_IMAGE_RE = re.compile(r"!\[(?:[^\[\]\n]|\[[^\[\]\n]{0,300}\]){0,1000}\]\([^()\n]{0,2000}\)")
HTML_IMG_RE = re.compile(r"<img\b[^<>]{0,2000}>", re.IGNORECASE)
HTML_TABLE_OPEN_RE = re.compile(r"<table\b", re.IGNORECASE)

DISPLAY_DOLLAR_RE = re.compile(r"\$\$([^$]{1,20000})\$\$")
# $x$: no space inside either delimiter, the opening $ not glued to a word
# ("KV$ caching", "US$5") nor followed by punctuation, and the closing $
# followed by a digit only after TeX ("$\sim$560 nm"; "$5-$10" is no math).
INLINE_DOLLAR_RE = re.compile(
    r"\$(?<![\w\\$]\$)(?=[^\s$,.;:!?)])[^$\n]{1,1000}?(?<=[^\s\\$])\$(?!\$)"
)
INLINE_PAREN_MATH_RE = re.compile(r"\\\([^\n]{1,300}?\\\)")

# "Figure 3: ...", "Fig. 2.", "Figure1In vivo ..." (OCR) at the start of a line;
# "Figure 3 illustrates ..." is a reference to a figure, not a caption.
FIGURE_CAPTION_RE = re.compile(
    r"^[ \t>]*(?:[*_]{1,2})?(?:Figure|FIGURE|Fig\.?|FIG\.?)[ \t]*(\d{1,3})(?:[ \t]*[:.|\u2013\u2014-]|(?=[A-Z]))",
    re.MULTILINE,
)
TABLE_CAPTION_RE = re.compile(
    r"^[ \t>]*(?:[*_]{1,2})?(?:Table|TABLE|Tab\.)[ \t]*(\d{1,3})(?:[ \t]*[:.|\u2013\u2014-]|(?=[A-Z]))",
    re.MULTILINE,
)

# A source chip pasted from a chat interface: a line that is only a source
# name or a domain, optionally followed by a "+N" line (N more sources).
_CHIP_NAME = (
    r"(?:arXiv|arxiv|Wikipedia|GitHub|PubMed|ResearchGate|Semantic Scholar|Google Scholar|"
    r"ScienceDirect|OpenReview|IEEE Xplore|"
    r"(?:[a-z0-9-]{1,63}\.){1,4}(?:org|com|net|edu|gov|io|ai|info|int|co\.uk|ac\.uk|de|fr|cn|jp))"
)
SOURCE_CHIP_RE = re.compile(
    rf"^[ \t]*(?P<name>{_CHIP_NAME})[ \t]*(?:(?:\r\n|\r|\n)[ \t]*\+(?P<more>\d{{1,3}})[ \t]*)?$",
    re.MULTILINE,
)
CHIP_LINE_RE = re.compile(rf"^[ \t]*(?:{_CHIP_NAME}|\+\d{{1,3}})[ \t]*$")
PUNCTUATION_LINE_RE = re.compile(r"^[ \t]*[.,;:!?)\]\u3002\uff0c]+[ \t]*$")


@dataclass(slots=True)
class InlineMarkup:
    """Inline spans inside the searched regions: never citations, and
    opaque to the sentence splitter."""

    code: list[tuple[int, int]]
    images: list[tuple[int, int]]
    display_math: list[tuple[int, int]]
    inline_math: list[tuple[int, int]]

    @property
    def spans(self) -> list[tuple[int, int]]:
        return self.code + self.images + self.display_math + self.inline_math


def _is_math(text: str, start: int, end: int) -> bool:
    """A ``$...$`` followed by a digit is math only if it holds TeX."""
    return not text[end : end + 1].isdigit() or any(c in "\\^_{" for c in text[start:end])


def find_inline_markup(text: str, regions: SpanSet) -> InlineMarkup:
    """Scan the whole text once per pattern, keeping matches inside ``regions``."""

    def inside(*patterns: re.Pattern) -> list[tuple[int, int]]:
        return [m.span() for p in patterns for m in p.finditer(text) if regions.covers(m.start(), m.end())]

    return InlineMarkup(
        code=inside(INLINE_CODE_RE),
        images=inside(MD_IMAGE_RE, HTML_IMG_RE),
        display_math=inside(DISPLAY_DOLLAR_RE),
        inline_math=[
            span for span in inside(INLINE_DOLLAR_RE) if _is_math(text, *span)
        ] + inside(INLINE_PAREN_MATH_RE),
    )
