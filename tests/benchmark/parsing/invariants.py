"""Properties every ParsedReport must have, whatever its input."""

from __future__ import annotations

import json

from benchmark.parsing import CITATION_KINDS, ParsedReport


def check_report(report: ParsedReport) -> None:
    text = report.text
    n = len(text)

    def check_span(start: int, end: int, value: str) -> None:
        assert 0 <= start <= end <= n
        assert text[start:end] == value

    for o in report.outline:
        check_span(o.start, o.end, o.title)
        assert 0 <= o.level <= 6
    previous_end = 0
    for i, s in enumerate(report.sections):
        assert s.index == i
        if i == 0:
            assert not text[: s.start].strip()
        else:
            assert s.start == previous_end
        assert s.start <= s.text_start <= s.text_end <= s.end
        check_span(s.text_start, s.text_end, s.text)
        previous_end = s.end
    if report.sections:
        assert report.sections[-1].end == n
    for i, p in enumerate(report.paragraphs):
        assert p.index == i
        check_span(p.start, p.end, p.text)
        section = report.sections[p.section_index]
        assert section.start <= p.start and p.end <= section.end and not section.is_references
    last_end = -1
    for i, s in enumerate(report.sentences):
        assert s.index == i
        check_span(s.start, s.end, s.text)
        paragraph = report.paragraphs[s.paragraph_index]
        assert paragraph.start <= s.start and s.end <= paragraph.end
        assert s.section_index == paragraph.section_index
        assert s.start >= last_end
        last_end = s.end
    for i, c in enumerate(report.citations):
        assert c.index == i
        assert c.kind in CITATION_KINDS
        check_span(c.start, c.end, c.raw)
        assert c.target
        if c.sentence_index is not None:
            sentence = report.sentences[c.sentence_index]
            assert sentence.start <= c.start < sentence.end
        if c.reference_index is not None:
            assert 0 <= c.reference_index < len(report.references)
    for i, r in enumerate(report.references):
        assert r.index == i
        check_span(r.start, r.end, r.raw)
    stats = report.stats
    assert stats.paragraphs == len(report.paragraphs)
    assert stats.sentences == len(report.sentences)
    assert stats.citations == len(report.citations)
    assert stats.references == len(report.references)
    assert stats.resolved_citations == sum(c.reference_index is not None for c in report.citations)
    data = report.to_dict()
    assert ParsedReport.from_dict(json.loads(json.dumps(data))) == report
