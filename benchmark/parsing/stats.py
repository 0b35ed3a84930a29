"""SurveyLens structural statistics (paper Table 1 / Table 6: Img, Tab, Eq,
Para, Word, Sent, Cite, Ref, Char).

The SurveyLens SSR files store per section ``char_count = len(content)``,
``word_count = len(content.split())`` and
``sentence_count = len([s for s in re.split(r"[.!?]+", content) if s.strip()])``
(verified against every section of the released luciferase files).  Here:

* ``chars``, ``words``, ``surveylens_sentences`` - exactly those formulas
  summed over the section texts (heading lines excluded, reference lists
  excluded), so they reproduce the SSR numbers;
* ``sentences`` - our careful splitter over prose paragraphs (no split on
  "e.g.", "et al.", "3.5", ...; tables, code and headings excluded), which is
  lower than the naive count;
* ``images`` - markdown images, ``<img>`` tags, LaTeX figure environments
  and figure caption lines (``Figure 3: ...`` / ``Fig. 2.`` at a line start,
  as MinerU leaves them); an image and a caption on the line above or within
  two lines below it count once, and captions are deduplicated by number;
* ``tables`` - GFM pipe tables, HTML ``<table>`` elements and LaTeX table
  environments (tables, not rows) plus ``Table N:`` caption lines, merged
  the same way (caption within three lines above or on the line below);
* ``equations`` - display math only: ``$$...$$``, ``\\[...\\]`` blocks and
  ``\\begin{equation|align|gather|multline|...}`` blocks.  Inline ``$...$`` and
  ``\\(...\\)`` are counted separately as ``inline_math``: MinerU writes units
  and symbols as inline math (``$5 6 0 \\mathrm{nm}$``), so counting them as
  equations would inflate the count by an order of magnitude;
* ``paragraphs`` - prose paragraphs (list items count one each);
* ``citations`` - in-text citations, one per cited target; ``citation_groups``
  - citation markers; ``resolved_citations`` - citations resolved to an entry
  of the report's own reference list; ``references`` - reference entries.
"""

from __future__ import annotations

import re

from .markup import FIGURE_CAPTION_RE, HTML_TABLE_OPEN_RE, TABLE_CAPTION_RE, InlineMarkup
from .model import ReportStats
from .spans import Lines, SpanSet

_NAIVE_SENTENCE_SPLIT_RE = re.compile(r"[.!?]+")


def surveylens_sentence_count(text: str) -> int:
    return sum(1 for s in _NAIVE_SENTENCE_SPLIT_RE.split(text) if s.strip())


def _captions(regex: re.Pattern, text: str, lines: Lines, excluded: SpanSet) -> dict[int, int]:
    """line index -> figure/table number of each caption line."""
    return {
        lines.index_at(m.start()): int(m.group(1))
        for m in regex.finditer(text)
        if not excluded.contains(m.start())
    }


def _count_units(elements: list[tuple[int, int]], captions: dict[int, int], before: int, after: int) -> int:
    """Distinct figures/tables: each element (first line, last line) takes the
    number of a caption at most ``before`` lines above or ``after`` below it."""
    keys: set[tuple[str, int]] = {("n", number) for number in captions.values()}
    for k, (first, last) in enumerate(elements):
        number = None
        for line in [*range(last, last + after + 1), *range(first - 1, first - before - 1, -1)]:
            if line in captions:
                number = captions[line]
                break
        keys.add(("n", number) if number is not None else ("e", k))
    return len(keys)


def compute_stats(
    text: str,
    lines: Lines,
    body_sections: list,
    body_blocks: list,
    excluded: SpanSet,
    *,
    inline: InlineMarkup,
    paragraphs: int,
    sentences: int,
    citations: list,
    references: int,
) -> ReportStats:
    """``body_blocks`` are the structure blocks outside reference lists,
    ``inline`` the inline markup found in their prose and tables;
    ``excluded`` covers code blocks and reference lists."""
    images = [(lines.index_at(s), lines.index_at(s)) for s, _ in inline.images]
    tables: list[tuple[int, int]] = []
    equations = len(inline.display_math)
    for block in body_blocks:
        first, last = lines.index_at(block.start), lines.index_at(max(block.start, block.end - 1))
        if block.kind == "math":
            equations += 1
        elif block.kind == "figure":
            images.append((first, last))
        elif block.kind == "table":
            tables.append((first, last))
        elif block.kind == "html_table":
            tables.extend((first, last) for _ in HTML_TABLE_OPEN_RE.finditer(text, block.start, block.end))
    image_count = _count_units(images, _captions(FIGURE_CAPTION_RE, text, lines, excluded), before=1, after=2)
    table_count = _count_units(tables, _captions(TABLE_CAPTION_RE, text, lines, excluded), before=3, after=1)
    section_texts = [s.text for s in body_sections]
    return ReportStats(
        images=image_count,
        tables=table_count,
        equations=equations,
        inline_math=len(inline.inline_math),
        paragraphs=paragraphs,
        words=sum(len(t.split()) for t in section_texts),
        sentences=sentences,
        citations=len(citations),
        citation_groups=len({c.group for c in citations}),
        resolved_citations=sum(1 for c in citations if c.reference_index is not None),
        references=references,
        chars=sum(len(t) for t in section_texts),
        surveylens_sentences=sum(surveylens_sentence_count(t) for t in section_texts),
    )
