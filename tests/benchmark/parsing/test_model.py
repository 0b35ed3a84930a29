"""Public API shape: frozen dataclasses, JSON form, round trip, argument checks."""

from __future__ import annotations

import dataclasses
import json

import pytest

from benchmark.parsing import (
    CITATION_KINDS,
    Citation,
    OutlineEntry,
    Paragraph,
    ParsedReport,
    Reference,
    ReportStats,
    Section,
    Sentence,
    parse_report,
)

REPORT = """# Survey of Things

Intro text cites [1] and (Smith et al., 2020). See https://example.org/x.

## Methods

We follow Lee and Kim (2019) [2, 3].

| a | b |
|---|---|
| 1 | 2 |

## References

[1] Smith, J., & Doe, A. (2020). A Study of Things. Journal of Stuff. https://arxiv.org/abs/2001.01234v2
[2] Lee, K., Kim, H. "Another Title," in Proc. X, 2019. doi:10.1000/ABC.1
[3] Third entry title
"""


def test_parse_returns_frozen_dataclasses():
    report = parse_report(REPORT)
    assert isinstance(report, ParsedReport)
    for item, cls in [
        (report.outline[0], OutlineEntry),
        (report.sections[0], Section),
        (report.paragraphs[0], Paragraph),
        (report.sentences[0], Sentence),
        (report.citations[0], Citation),
        (report.references[0], Reference),
        (report.stats, ReportStats),
    ]:
        assert isinstance(item, cls)
        first_field = dataclasses.fields(item)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field"):
            setattr(item, first_field, 3)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'text'"):
        report.text = ""  # type: ignore[misc]
    assert isinstance(report.citations, tuple)


def test_to_dict_is_json_with_stable_key_order():
    data = parse_report(REPORT).to_dict()
    assert list(data) == [
        "schema_version", "format", "text", "outline", "sections", "paragraphs",
        "sentences", "citations", "references", "stats",
    ]
    assert list(data["citations"][0]) == [
        "index", "kind", "raw", "start", "end", "target", "group", "sentence_index",
        "section_index", "reference_index", "arxiv_id", "doi",
    ]
    assert list(data["references"][0]) == [
        "index", "section_index", "style", "number", "label", "raw", "start", "end",
        "title", "url", "arxiv_id", "doi",
    ]
    assert list(data["stats"]) == [
        "images", "tables", "equations", "inline_math", "paragraphs", "words", "sentences",
        "citations", "citation_groups", "resolved_citations", "references", "chars", "surveylens_sentences",
    ]
    assert json.loads(json.dumps(data)) == data
    assert json.dumps(data) == json.dumps(parse_report(REPORT).to_dict())


def test_from_dict_round_trip():
    report = parse_report(REPORT)
    data = json.loads(json.dumps(report.to_dict()))
    assert ParsedReport.from_dict(data) == report


def test_from_dict_rejects_other_schema_versions():
    data = parse_report("x").to_dict()
    data["schema_version"] = 999
    with pytest.raises(ValueError, match="unsupported parsed-report schema_version 999"):
        ParsedReport.from_dict(data)


def test_example_report_end_to_end():
    report = parse_report(REPORT)
    assert [(o.level, o.title) for o in report.outline] == [(1, "Survey of Things"), (2, "Methods"), (2, "References")]
    assert [s.is_references for s in report.sections] == [False, False, True]
    kinds = [(c.kind, c.target, c.reference_index) for c in report.citations]
    assert kinds == [
        ("numeric", "1", 0),
        ("author_year", "Smith 2020", 0),
        ("url", "https://example.org/x", None),
        ("author_year", "Lee 2019", 1),
        ("numeric", "2", 1),
        ("numeric", "3", 2),
    ]
    first, second, third = report.references
    assert (first.number, first.title, first.arxiv_id) == (1, "A Study of Things", "2001.01234")
    assert (second.title, second.doi) == ("Another Title", "10.1000/abc.1")
    assert third.title == "Third entry title"
    assert report.stats.tables == 1
    assert report.stats.references == 3
    assert report.stats.resolved_citations == 5
    assert set(c.kind for c in report.citations) <= set(CITATION_KINDS)


@pytest.mark.parametrize("value", [None, b"bytes", 12, ["a"], object()])
def test_non_str_input_raises_type_error(value):
    with pytest.raises(TypeError, match=r"parse_report\(\) needs a str, not "):
        parse_report(value)  # type: ignore[arg-type]


def test_format_argument():
    assert parse_report("x", format="md").format == "markdown"
    assert parse_report("x", format="TEXT").format == "text"
    assert parse_report("x", format="plain").format == "text"
    with pytest.raises(ValueError, match="unknown report format 'html'"):
        parse_report("x", format="html")
    with pytest.raises(TypeError, match="format must be a str, not NoneType"):
        parse_report("x", format=None)  # type: ignore[arg-type]


def test_empty_and_blank_inputs():
    for text in ["", " ", "\n\n\t\n"]:
        report = parse_report(text)
        assert report.sections == ()
        assert report.sentences == ()
        assert report.stats.words == 0
