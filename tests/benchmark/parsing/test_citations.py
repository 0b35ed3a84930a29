"""Every inline citation form, normalization and resolution."""

from __future__ import annotations

import pytest

from benchmark.parsing import parse_report


def cites(text: str, fmt: str = "markdown") -> list[tuple[str, str, str]]:
    report = parse_report(text, format=fmt)
    for c in report.citations:
        assert report.text[c.start : c.end] == c.raw
    return [(c.kind, c.raw, c.target) for c in report.citations]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A [1] b.", [("numeric", "[1]", "1")]),
        ("A [1, 3] b.", [("numeric", "[1, 3]", "1"), ("numeric", "[1, 3]", "3")]),
        ("A [1; 3] b.", [("numeric", "[1; 3]", "1"), ("numeric", "[1; 3]", "3")]),
        ("A [1-3] b.", [("numeric", "[1-3]", t) for t in "123"]),
        ("A [2\u20134] b.", [("numeric", "[2\u20134]", t) for t in "234"]),
        ("A [1, 4-5] b.", [("numeric", "[1, 4-5]", t) for t in "145"]),
        ("A [12][15] b.", [("numeric", "[12]", "12"), ("numeric", "[15]", "15")]),
        ("A [[11,16]] b.", [("numeric", "[[11,16]]", "11"), ("numeric", "[[11,16]]", "16")]),
        ("A [cite: 8, 9] b.", [("numeric", "[cite: 8, 9]", "8"), ("numeric", "[cite: 8, 9]", "9")]),
        ("A \\[3\\] b.", [("numeric", "\\[3\\]", "3")]),
        ("A \u30104\u2020source\u3011 b.", [("numeric", "\u30104\u2020source\u3011", "4")]),
        ("A [1](#ref-1) b.", [("numeric", "[1](#ref-1)", "1")]),
        ("A [1, 1] b.", [("numeric", "[1, 1]", "1")]),
    ],
)
def test_numeric_forms(text, expected):
    assert cites(text) == expected


def test_numeric_groups_share_the_marker():
    report = parse_report("A [1, 3] then [2].")
    assert [c.group for c in report.citations] == [0, 0, 1]
    assert report.stats.citations == 3
    assert report.stats.citation_groups == 2


def test_huge_ranges_are_not_expanded():
    assert [c.target for c in parse_report("A [1-9999] b.").citations] == ["1", "9999"]
    assert [c.target for c in parse_report("A [5-2] b.").citations] == ["5", "2"]


def test_markdown_links():
    report = parse_report(
        "Link [Attention](https://arxiv.org/abs/1706.03762v5), [doc](https://doi.org/10.1145/ABC.1) "
        "and \\[[Stephan Zheng' 2021-08-05](http://arxiv.org/abs/2108.02755v1)\\]."
    )
    assert [(c.kind, c.target, c.arxiv_id, c.doi) for c in report.citations] == [
        ("link", "https://arxiv.org/abs/1706.03762v5", "1706.03762", None),
        ("link", "https://doi.org/10.1145/ABC.1", None, "10.1145/abc.1"),
        ("link", "http://arxiv.org/abs/2108.02755v1", "2108.02755", None),
    ]
    assert report.citations[2].raw == "[Stephan Zheng' 2021-08-05](http://arxiv.org/abs/2108.02755v1)"


def test_links_that_are_not_citations():
    assert cites("See [the section](#methods), [file](notes.md) and ![fig](https://x.org/a.png).") == []


def test_bare_urls_are_trimmed_and_normalized():
    assert cites("Bare https://WWW.Example.com/path/ and www.test.org/x, (see https://en.wikipedia.org/wiki/A_(b)).") == [
        ("url", "https://WWW.Example.com/path/", "https://www.example.com/path"),
        ("url", "www.test.org/x", "http://www.test.org/x"),
        ("url", "https://en.wikipedia.org/wiki/A_(b)", "https://en.wikipedia.org/wiki/A_(b)"),
    ]


def test_arxiv_ids():
    assert cites("See arXiv:2301.01234v2, 2302.05678 and arXiv: hep-th/9901001v1.") == [
        ("arxiv", "arXiv:2301.01234v2", "2301.01234"),
        ("arxiv", "2302.05678", "2302.05678"),
        ("arxiv", "arXiv: hep-th/9901001v1", "hep-th/9901001"),
    ]


@pytest.mark.parametrize("text", ["Pi is 3.14159 here.", "Year 2020.12345 x.", "Not 1501.1234 (wrong digits)."])
def test_numbers_are_not_arxiv_ids(text):
    assert cites(text) == []


def test_dois():
    assert cites("DOI 10.1038/nature14539 and doi:10.1000/XYZ.123. Also 10.1016/S0140-6736(20)30183-5.") == [
        ("doi", "10.1038/nature14539", "10.1038/nature14539"),
        ("doi", "doi:10.1000/XYZ.123", "10.1000/xyz.123"),
        ("doi", "10.1016/S0140-6736(20)30183-5", "10.1016/s0140-6736(20)30183-5"),
    ]


def test_url_containing_identifiers_is_one_citation():
    report = parse_report("See https://arxiv.org/abs/2301.01234v3 and https://doi.org/10.1000/ab.")
    assert [(c.kind, c.arxiv_id, c.doi) for c in report.citations] == [
        ("url", "2301.01234", None),
        ("url", None, "10.1000/ab"),
    ]


@pytest.mark.parametrize(
    ("text", "targets"),
    [
        ("It holds (Smith et al., 2020).", ["Smith 2020"]),
        ("It holds (Smith & Lee, 2019; Kim, 2021a).", ["Smith 2019", "Kim 2021a"]),
        ("It holds (Smith, 2020; Lee, 2021).", ["Smith 2020", "Lee 2021"]),
        ("It holds (see Vaswani et al. 2017).", ["Vaswani 2017"]),
        ("It holds (e.g., Smith, Jones, and Lee, 2018, p. 4).", ["Smith 2018"]),
        ("It holds (Li, Qin & Shen, ECCV\u202f2018).", ["Li 2018"]),
        ("It holds (Müller and Østergaard, 2015).", ["Müller 2015"]),
        ("It holds (O'Brien et al. 2003).", ["O'Brien 2003"]),
        ("As Smith and Lee (2019) show.", ["Smith 2019"]),
        ("As Vaswani et al. (2017) show.", ["Vaswani 2017"]),
        ("As van der Maaten (2008) shows.", ["van der Maaten 2008"]),
        ("As Hinton (2006a, 2012) shows.", ["Hinton 2006a", "Hinton 2012"]),
    ],
)
def test_author_year(text, targets):
    report = parse_report(text)
    assert [c.kind for c in report.citations] == ["author_year"] * len(targets)
    assert [c.target for c in report.citations] == targets


@pytest.mark.parametrize(
    "text",
    [
        "It was released (In 2020) widely.",
        "The GPT (2023) model and BERT (2018) too.",
        "See the summary (Table 2) and (2020).",
        "Values [x] and [ ] and arr[0] here.",
        "Costs rose (from 2019 to 2020) sharply.",
    ],
)
def test_not_citations(text):
    assert cites(text) == []


def test_latex_cite_commands():
    assert cites("Latex \\cite{a,b} and \\citep[p.~3]{c} and \\citet*{d} and \\parencite{e}.") == [
        ("latex", "\\cite{a,b}", "a"),
        ("latex", "\\cite{a,b}", "b"),
        ("latex", "\\citep[p.~3]{c}", "c"),
        ("latex", "\\citet*{d}", "d"),
        ("latex", "\\parencite{e}", "e"),
    ]


def test_latex_keys_that_look_like_dois_stay_latex():
    assert cites("Optimal taxation\\cite{10.1257/jep.25.4.165} works.") == [
        ("latex", "\\cite{10.1257/jep.25.4.165}", "10.1257/jep.25.4.165")
    ]


def test_footnotes_resolve_to_their_definitions():
    report = parse_report("Claim[^1] and more[^note].\n\n[^1]: First source https://x.org\n[^note]: Second note.\n")
    assert [(c.kind, c.target, c.reference_index) for c in report.citations] == [
        ("footnote", "1", 0),
        ("footnote", "note", 1),
    ]
    assert [(r.style, r.label, r.number, r.url) for r in report.references] == [
        ("footnote", "1", 1, "https://x.org"),
        ("footnote", "note", None, None),
    ]


def test_source_chips_from_chat_interfaces():
    text = "First claim holds.\narXiv\n+1\nNext (Li & Belaroussi,\narXiv\n2016) text.\narxiv.org\n"
    assert cites(text, "text") == [
        ("source_chip", "arXiv\n+1", "arxiv"),
        ("author_year", "(Li & Belaroussi,\narXiv\n2016)", "Li 2016"),
        ("source_chip", "arxiv.org", "arxiv.org"),
    ]


def test_code_math_and_images_hold_no_citations():
    assert cites("Code `[1]` and $x[2]$ and ![img [3]](a.png).\n\n```\nsee [4]\n```\n") == []


def test_citations_in_tables_count_but_have_no_sentence():
    report = parse_report("| a | b |\n|---|---|\n| x [1] | y |\n\n## References\n\n[1] Entry one\n")
    (citation,) = report.citations
    assert (citation.target, citation.sentence_index, citation.reference_index) == ("1", None, 0)


def test_reference_list_is_not_cited_text():
    report = parse_report("Body [2].\n\n## References\n\n[1] A see [3].\n[2] B https://x.org\n")
    assert [c.target for c in report.citations] == ["2"]
    assert report.citations[0].reference_index == 1


def test_resolution_by_identifier():
    text = (
        "One [A](https://arxiv.org/abs/2301.01234v1), two 2302.00001, three https://doi.org/10.1000/X, "
        "four https://www.site.org/page/ and five [B](http://other.org).\n\n"
        "## Sources\n\n"
        "- [Paper A](https://arxiv.org/abs/2301.01234v3)\n"
        "- Paper B, arXiv:2302.00001\n"
        "- Paper C. doi:10.1000/x\n"
        "- Site https://site.org/page\n"
    )
    report = parse_report(text)
    assert [(c.kind, c.reference_index) for c in report.citations] == [
        ("link", 0),
        ("arxiv", 1),
        ("url", 2),
        ("url", 3),
        ("link", None),
    ]


def test_resolution_of_author_year():
    text = (
        "Known (Smith et al., 2020) and Lee and Kim (2019), unknown (Doe, 2001).\n\n"
        "# Bibliography\n\n"
        "- Lee, K., & Kim, H. (2019). Another study. Venue.\n"
        "- Smith, J., Doe, A. (2020). A study. Journal.\n"
    )
    report = parse_report(text)
    assert [(c.target, c.reference_index) for c in report.citations] == [
        ("Smith 2020", 1),
        ("Lee 2019", 0),
        ("Doe 2001", None),
    ]


def test_numeric_resolution_prefers_the_following_list():
    text = (
        "# Part one\n\nAlpha [1].\n\n## References\n\n[1] First list entry\n\n"
        "# Part two\n\nBeta [1] and [2].\n\n## References\n\n[2] Second list two\n[1] Second list one\n"
    )
    report = parse_report(text)
    assert [(c.target, c.reference_index) for c in report.citations] == [("1", 0), ("1", 2), ("2", 1)]
    assert report.references[2].title == "Second list one"


def test_openscholar_numbered_passage_links_are_numeric_citations():
    report = parse_report("Agents were studied [0](abc) and simulated [1](9f8e7d), see [2](notes.md).\n\n"
                          "References\n[0] The AI Economist\n[1] EconAgent\n")
    assert [(c.kind, c.target, c.reference_index) for c in report.citations] == [("numeric", "0", 0),
                                                                                  ("numeric", "1", 1)]
