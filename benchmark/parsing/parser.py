"""``parse_report``: ties the structure, sentence, citation and reference
passes together into a ``ParsedReport``."""

from __future__ import annotations

from bisect import bisect_right

from .citations import find_markers, url_spans
from .markup import find_inline_markup
from .model import Citation, OutlineEntry, Paragraph, ParsedReport, Reference, Section, Sentence
from .references import Resolver, definition_entry, entries_in_region, entry_fields
from .sentences import split_sentences
from .spans import Lines, SpanSet, strip_span
from .stats import compute_stats
from .structure import Structure, scan

FORMATS = {"markdown": "markdown", "md": "markdown", "text": "text", "plain": "text", "txt": "text"}
_CITABLE_BLOCKS = ("para", "table", "html_table")
_TRAILING_KINDS = ("numeric", "footnote", "source_chip")  # markers that close a sentence, not open one


def parse_report(text: str, *, format: str = "markdown") -> ParsedReport:  # noqa: A002 - public API name
    """Parse a generated report (markdown or plain text).

    Never raises for a ``str``; raises ``TypeError`` for anything else and
    ``ValueError`` for an unknown ``format`` (``markdown``/``md`` or
    ``text``/``plain``/``txt``)."""
    if not isinstance(text, str):
        raise TypeError(f"parse_report() needs a str, not {type(text).__name__}")
    if not isinstance(format, str):
        raise TypeError(f"format must be a str, not {type(format).__name__}")
    fmt = FORMATS.get(format.strip().lower())
    if fmt is None:
        raise ValueError(f"unknown report format {format!r}; use 'markdown' or 'text'")
    return _Parse(text, fmt).run()


class _Parse:
    def __init__(self, text: str, fmt: str) -> None:
        self.text = text
        self.fmt = fmt
        self.lines = Lines(text)
        self.structure: Structure = scan(text, self.lines, fmt)

    def run(self) -> ParsedReport:
        text = self.text
        outline = tuple(
            OutlineEntry(h.level, text[h.title_start : h.title_end], h.title_start, h.title_end, h.style)
            for h in self.structure.headings
        )
        sections = self._sections()
        self.section_starts = [s.start for s in sections]
        ref_regions = SpanSet((s.start, s.end) for s in sections if s.is_references)
        code = [(b.start, b.end) for b in self.structure.blocks if b.kind == "code"]
        excluded = SpanSet(list(ref_regions) + code)
        body_blocks = [b for b in self.structure.blocks if not ref_regions.contains(b.start)]

        paragraphs = self._paragraphs(body_blocks)
        citable = [b for b in body_blocks if b.kind in _CITABLE_BLOCKS]
        allowed = SpanSet((b.start, b.end) for b in citable)
        inline = find_inline_markup(text, allowed)
        markers = find_markers(text, allowed, inline.spans)
        protected = SpanSet(inline.spans + url_spans(text) + [(m.start, m.end) for m in markers])
        trailing = {m.start: m.end for m in markers if m.kind in _TRAILING_KINDS}
        sentences = self._sentences(paragraphs, protected, trailing)
        references = self._references(sections)
        citations = self._citations(markers, sentences, references, sections)
        stats = compute_stats(
            text,
            self.lines,
            [s for s in sections if not s.is_references],
            body_blocks,
            excluded,
            inline=inline,
            paragraphs=len(paragraphs),
            sentences=len(sentences),
            citations=citations,
            references=len(references),
        )
        return ParsedReport(
            text=text,
            format=self.fmt,
            outline=outline,
            sections=tuple(sections),
            paragraphs=tuple(paragraphs),
            sentences=tuple(sentences),
            citations=tuple(citations),
            references=tuple(references),
            stats=stats,
        )

    # -- sections ----------------------------------------------------------
    def _sections(self) -> list[Section]:
        text = self.text
        headings = self.structure.headings
        bounds: list[tuple[int | None, int, int, int]] = []  # (heading, start, content start, end)
        first = headings[0].start if headings else len(text)
        if text[:first].strip():
            bounds.append((None, 0, 0, first))
        for k, h in enumerate(headings):
            end = headings[k + 1].start if k + 1 < len(headings) else len(text)
            bounds.append((k, h.start, min(h.end, end), end))
        sections = []
        ref_level: int | None = None
        for index, (k, start, content_start, end) in enumerate(bounds):
            t_start, t_end = strip_span(text, content_start, end)
            if k is None:
                heading, level, is_refs = "", 0, False
            else:
                h = headings[k]
                heading, level = text[h.title_start : h.title_end], h.level
                if h.is_reference_name:
                    ref_level = level
                elif ref_level is not None and level <= ref_level:
                    ref_level = None
                is_refs = ref_level is not None
            sections.append(Section(index, heading, level, k, start, end, text[t_start:t_end], t_start, t_end, is_refs))
        return sections

    def _section_at(self, pos: int) -> int | None:
        i = bisect_right(self.section_starts, pos) - 1
        return i if i >= 0 else None

    # -- paragraphs and sentences --------------------------------------------
    def _paragraphs(self, body_blocks) -> list[Paragraph]:
        paragraphs = []
        for block in body_blocks:
            if block.kind != "para":
                continue
            start, end = strip_span(self.text, block.start, block.end)
            if start >= end:
                continue
            section = self._section_at(start) or 0
            paragraphs.append(Paragraph(len(paragraphs), section, block.para_kind, self.text[start:end], start, end))
        return paragraphs

    def _sentences(self, paragraphs: list[Paragraph], protected: SpanSet, trailing: dict[int, int]) -> list[Sentence]:
        sentences = []
        for p in paragraphs:
            for start, end in split_sentences(self.text, p.start, p.end, protected, trailing):
                sentences.append(Sentence(len(sentences), p.index, p.section_index, self.text[start:end], start, end))
        return sentences

    # -- references and citations --------------------------------------------
    def _references(self, sections: list[Section]) -> list[Reference]:
        text, lines = self.text, self.lines
        entries = []
        for s in sections:
            if s.is_references and s.text_end > s.text_start:
                first, last = lines.index_at(s.text_start), lines.index_at(s.text_end - 1)
                entries.extend(entries_in_region(text, lines, first, last, s.index))
        ref_regions = SpanSet((s.start, s.end) for s in sections if s.is_references)
        for block in self.structure.blocks:
            if block.kind == "def" and not ref_regions.contains(block.start):
                entry = definition_entry(text, block.start, block.end, self._section_at(block.start))
                if entry is not None:
                    entries.append(entry)
        entries.sort(key=lambda e: e.start)
        references = []
        for entry in entries:
            title, url, arxiv, doi = entry_fields(text, entry)
            references.append(
                Reference(
                    index=len(references),
                    section_index=entry.section_index,
                    style=entry.style,
                    number=entry.number,
                    label=entry.label,
                    raw=text[entry.start : entry.end],
                    start=entry.start,
                    end=entry.end,
                    title=title,
                    url=url,
                    arxiv_id=arxiv,
                    doi=doi,
                )
            )
        self.reference_list_starts = [s.start for s in sections if s.is_references]
        return references

    def _citations(self, markers, sentences: list[Sentence], references: list[Reference], sections) -> list[Citation]:
        resolver = Resolver(self.text, references, self.reference_list_starts)
        sent_starts = [s.start for s in sentences]
        citations = []
        for group, marker in enumerate(markers):
            k = bisect_right(sent_starts, marker.start) - 1
            sentence = k if k >= 0 and marker.start < sentences[k].end else None
            section = self._section_at(marker.start)
            raw = self.text[marker.start : marker.end]
            for target in marker.targets:
                citations.append(
                    Citation(
                        index=len(citations),
                        kind=marker.kind,
                        raw=raw,
                        start=marker.start,
                        end=marker.end,
                        target=target,
                        group=group,
                        sentence_index=sentence,
                        section_index=section,
                        reference_index=resolver.resolve(
                            marker.kind, target, marker.start, marker.arxiv_id, marker.doi, marker.number
                        ),
                        arxiv_id=marker.arxiv_id,
                        doi=marker.doi,
                    )
                )
        return citations
