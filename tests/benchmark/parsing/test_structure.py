"""Outline, sections and paragraphs."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from benchmark.parsing import parse_report


def outline(text: str, fmt: str = "markdown") -> list[tuple[int, str, str]]:
    report = parse_report(text, format=fmt)
    for o in report.outline:
        assert report.text[o.start : o.end] == o.title
    return [(o.level, o.title, o.style) for o in report.outline]


def test_atx_headings():
    assert outline("# One\n\n## Two ##\n\n###### Six\n\n####### seven\n\n#hashtag\n   ### Indented\n") == [
        (1, "One", "atx"),
        (2, "Two", "atx"),
        (6, "Six", "atx"),
        (3, "Indented", "atx"),
    ]


def test_setext_headings():
    assert outline("Title\n=====\n\nText.\n\nSub\n---\n\nMore.\n") == [(1, "Title", "setext"), (2, "Sub", "setext")]


def test_rule_under_a_paragraph_is_not_a_heading():
    report = parse_report("Line one\nline two\n---\n\nAfter.\n")
    assert report.outline == ()
    assert [p.text for p in report.paragraphs] == ["Line one\nline two", "After."]


def test_headings_inside_code_fences_are_ignored():
    assert outline("# Real\n\n```python\n# comment\nx = 1\n```\n\n~~~\n## also code\n~~~\n") == [(1, "Real", "atx")]


def test_latex_headings():
    report = parse_report("\\section{Intro}\nText \\cite{a}.\n\\subsection{Deep} More text here.\n")
    assert [(o.level, o.title, o.style) for o in report.outline] == [(1, "Intro", "latex"), (2, "Deep", "latex")]
    assert [p.text for p in report.paragraphs] == ["Text \\cite{a}.", "More text here."]


def test_named_headings_in_markdown_need_a_standalone_line():
    text = "Intro text.\n\n**Conclusion**\n\nDone.\n\nThe conclusion is clear.\n\nReferences:\n\n[1] A\n"
    assert outline(text) == [(1, "Conclusion", "named"), (1, "References", "named")]


def test_named_heading_level_follows_the_document():
    text = "# Title\n\n## Intro\n\nText.\n\n**References**\n\n[1] A\n"
    assert outline(text) == [(1, "Title", "atx"), (2, "Intro", "atx"), (2, "References", "named")]


def test_plain_text_numbered_headings():
    text = (
        "1. Introduction\nBody text here.\n2.3 Methods and Data\nMore body text.\n"
        "Chapter\u202f4\u202f\u2013\u202fResults\nText.\nIII. DISCUSSION\nText.\n"
    )
    assert outline(text, "text") == [
        (1, "Introduction", "numbered"),
        (2, "Methods and Data", "numbered"),
        (1, "Results", "numbered"),
        (1, "DISCUSSION", "numbered"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Steps:\n1. Collect the data\n2. Train the model\n3. Evaluate it\n",  # a list
        "Contents\n1 Introduction\n2 Methods\n3 Results\n",  # a table of contents
        "We found 2 effects.\n3 of them failed.\n",  # sentence, not a heading
        "1. the first item is lowercase\n",
        "12. A heading that ends with a period.\n",
        "2020 was a year of change\n",
    ],
)
def test_plain_text_numbered_lines_that_are_not_headings(text):
    assert [o for o in outline(text, "text") if o[2] == "numbered"] == []


def test_numbered_headings_are_plain_text_only():
    assert outline("1. Introduction\n\nBody.\n") == []


def test_sections_are_flat_and_tile_the_document():
    text = "Preamble line.\n\n# A\n\nText A.\n\n## A.1\n\nText A1.\n\n# B\n"
    report = parse_report(text)
    assert [(s.heading, s.level, s.outline_index, s.text) for s in report.sections] == [
        ("", 0, None, "Preamble line."),
        ("A", 1, 0, "Text A."),
        ("A.1", 2, 1, "Text A1."),
        ("B", 1, 2, ""),
    ]
    assert report.sections[0].start == 0
    assert report.sections[-1].end == len(text)
    for a, b in zip(report.sections, report.sections[1:]):
        assert a.end == b.start
    for s in report.sections:
        assert report.text[s.text_start : s.text_end] == s.text


def test_nested_headings_inside_references_stay_references():
    text = "# Body\n\nText [1].\n\n## References\n\n### Papers\n\n[1] A paper\n\n# Appendix\n\nMore.\n"
    report = parse_report(text)
    assert [s.is_references for s in report.sections] == [False, True, True, False]
    assert [r.title for r in report.references] == ["A paper"]
    assert report.citations[0].reference_index == 0


def test_paragraph_kinds_and_markers():
    text = "Intro para\nwrapped.\n\n- item one\n  continues\n- item two\n1. numbered\n\n> quoted\n> more\n"
    report = parse_report(text)
    assert [(p.kind, p.text) for p in report.paragraphs] == [
        ("text", "Intro para\nwrapped."),
        ("list_item", "item one\n  continues"),
        ("list_item", "item two"),
        ("list_item", "numbered"),
        ("quote", "quoted\n> more"),
    ]


def test_ordered_item_other_than_one_does_not_interrupt_a_paragraph():
    report = parse_report("(Li & Belaroussi,\n2016) addresses it.\n")
    assert len(report.paragraphs) == 1


def test_one_paragraph_per_long_line():
    long_a = "A sentence that is long enough to be a paragraph of its own in generated output. " * 2
    long_b = "Another long paragraph that follows on the next line without a blank line between. " * 2
    report = parse_report(f"{long_a.strip()}\n{long_b.strip()}\nshort wrapped line.\ncontinues here.\n")
    assert len(report.paragraphs) == 3


def test_crlf_and_cr_line_endings():
    report = parse_report("# A\r\n\r\nText one.\r\n\r\n## B\rText two.\r")
    assert [o.title for o in report.outline] == ["A", "B"]
    assert [p.text for p in report.paragraphs] == ["Text one.", "Text two."]


def test_atx_and_setext_agree_with_markdown_it(real):
    """CommonMark cross-check on the real markdown outputs (ATX/setext only)."""
    md = MarkdownIt("commonmark")
    for name, report in real.items():
        if report.format != "markdown" or name.startswith("surveylens/"):
            continue
        expected = [
            (int(tok.tag[1]), md.parseInline(report.text.splitlines()[tok.map[0]].lstrip("# ").rstrip("# "))[0].content)
            for tok in md.parse(report.text)
            if tok.type == "heading_open"
        ]
        ours = [(o.level, o.title) for o in report.outline if o.style in ("atx", "setext")]
        assert ours == expected, name
