"""Reference-list detection, entry forms and title extraction."""

from __future__ import annotations

import pytest

from benchmark.parsing import parse_report
from benchmark.parsing.references import extract_title


def refs(text: str, fmt: str = "markdown"):
    report = parse_report(text, format=fmt)
    for r in report.references:
        assert report.text[r.start : r.end] == r.raw
    return report.references


@pytest.mark.parametrize(
    "heading",
    [
        "## References",
        "# Bibliography",
        "### Sources",
        "## Works Cited",
        "**References**",
        "References:",
        "**Sources:**",
        "7. References",
        "References\n----------",
        "## Reference List",
        "## Further Reading",
    ],
)
def test_reference_section_headings(heading):
    entries = refs(f"Body [1].\n\n{heading}\n\n[1] Only entry title\n")
    assert [(r.number, r.title) for r in entries] == [(1, "Only entry title")]


def test_plain_text_references_heading():
    entries = refs("Body text [1].\nReferences\n1. First title\n2. Second title\n", fmt="text")
    assert [(r.style, r.number, r.title) for r in entries] == [("numbered", 1, "First title"), ("numbered", 2, "Second title")]


def test_not_a_reference_section():
    report = parse_report("## Referencing styles\n\n[1] is how IEEE cites.\n")
    assert report.references == ()
    assert report.sections[0].is_references is False


@pytest.mark.parametrize(
    ("entry", "style", "number", "label"),
    [
        ("[1] Title one", "bracketed", 1, None),
        ("[1]: Title one", "bracketed", 1, None),
        ("[[1]] Title one", "bracketed", 1, None),
        ("1. Title one", "numbered", 1, None),
        ("1) Title one", "numbered", 1, None),
        ("(1) Title one", "numbered", 1, None),
        ("- [1] Title one", "bracketed", 1, None),
        ("- Title one", "bullet", None, None),
        ("* Title one", "bullet", None, None),
        ("[^1]: Title one", "footnote", 1, "1"),
        ("[Smith2020]: Title one", "definition", None, "Smith2020"),
        ("- [Title one](https://x.org/a)", "link", None, "Title one"),
        ("[Title one](https://x.org/a)", "link", None, "Title one"),
        ("Title one", "plain", None, None),
    ],
)
def test_entry_forms(entry, style, number, label):
    (reference,) = refs(f"## References\n\n{entry}\n")
    assert (reference.style, reference.number, reference.label, reference.title) == (style, number, label, "Title one")


def test_link_list_with_descriptions():
    entries = refs(
        "## Sources\n\n"
        "- [Attention Is All You Need](https://arxiv.org/abs/1706.03762) - the transformer paper\n"
        "- [BERT](https://arxiv.org/abs/1810.04805v2): Devlin et al.\n"
    )
    assert [(r.title, r.url, r.arxiv_id) for r in entries] == [
        ("Attention Is All You Need", "https://arxiv.org/abs/1706.03762", "1706.03762"),
        ("BERT", "https://arxiv.org/abs/1810.04805v2", "1810.04805"),
    ]


def test_deepscholar_label_links():
    (entry,) = refs(
        "## References\n\n\\[[Stephan Zheng' 2021-08-05](http://arxiv.org/abs/2108.02755v1)\\] \tDocument 1: "
        "The AI Economist: Optimal Economic Policy Design via Two-level Deep Reinforcement Learning\n"
    )
    assert entry.style == "link"
    assert entry.label == "Stephan Zheng' 2021-08-05"
    assert entry.title == "The AI Economist: Optimal Economic Policy Design via Two-level Deep Reinforcement Learning"
    assert entry.arxiv_id == "2108.02755"


def test_wrapped_entries_and_trailing_remarks():
    entries = refs(
        "## References\n\n"
        "[1] Smith, J. (2020). A long title that\n"
        "    wraps onto a second line. Journal.\n"
        "[2] Lee, K. (2019). Short, and\n"
        "continued here. Venue.\n"
        "[3] Reference 3 from collected information\n"
        "Please let me know if this meets your requirements!\n"
    )
    assert [r.raw.count("\n") for r in entries] == [1, 1, 0]
    assert entries[0].title == "A long title that wraps onto a second line"
    assert entries[2].title == "Reference 3 from collected information"


def test_unmarked_lines_are_one_entry_each():
    entries = refs("## References\n\nSeeing into darkness: Scotopic visual recognition\nPixel detectors for tracking\n")
    assert [r.title for r in entries] == ["Seeing into darkness: Scotopic visual recognition", "Pixel detectors for tracking"]


def test_identifiers_in_entries():
    (a, b, c) = refs(
        "## References\n\n"
        "[1] A. Author. Title A. arXiv:2301.01234v2, 2023.\n"
        "[2] B. Author. Title B. https://doi.org/10.1145/3292500.3330701.\n"
        "[3] C. Author. Title C. doi: 10.1000/ABC. Available at: https://c.org/x\n"
    )
    assert (a.arxiv_id, a.doi, a.url) == ("2301.01234", None, None)
    assert (b.doi, b.url) == ("10.1145/3292500.3330701", "https://doi.org/10.1145/3292500.3330701")
    assert (c.doi, c.url) == ("10.1000/abc", "https://c.org/x")


@pytest.mark.parametrize(
    ("body", "title"),
    [
        (
            "Wilkinson, R., & Pickett, K. (2009). The Spirit Level: Why Greater Equality Makes Societies Stronger. "
            "Penguin Books.",
            "The Spirit Level: Why Greater Equality Makes Societies Stronger",
        ),
        ("Saez, E. (2010). Do Taxpayers Bunch at Kink Points? American Economic Journal, 2(3).", "Do Taxpayers Bunch at Kink Points?"),
        ("Gani, J. (ed.). (1988). A Celebration of Applied Probability. J. Appl. Probab.", "A Celebration of Applied Probability"),
        ('A. Vaswani et al., "Attention is all you need," in NeurIPS, 2017.', "Attention is all you need"),
        ("Smith, John. \u201cA Quoted Title.\u201d Journal 3 (2001): 1-2.", "A Quoted Title"),
        ("Optimal taxation and the Domar-Musgrave effect (2023) http://arxiv.org/abs/2311.05822v2", "Optimal taxation and the Domar-Musgrave effect"),
        ("In-context KV-Cache Eviction for LLMs (Oct 2024), http://arxiv.org/abs/2410.12876v3", "In-context KV-Cache Eviction for LLMs"),
        (
            "NanoLuc: A Small Luciferase Is Brightening Up the Field. Christopher G. England, Weibo Cai",
            "NanoLuc: A Small Luciferase Is Brightening Up the Field",
        ),
        ("Firefly luminescence: A historical perspective and recent ...", "Firefly luminescence: A historical perspective and recent"),
        ("Output, Employment, and Price Effects of U.S. Narrative Tax Changes", "Output, Employment, and Price Effects of U.S. Narrative Tax Changes"),
        ("Smith, J., Lee, K. Learning things fast. In Proc. ICML, 2020.", "Learning things fast"),
        ("Document 12: Can Taxes Improve Congestion on All Networks?", "Can Taxes Improve Congestion on All Networks?"),
        ("(reference 7 from collected information)", "reference 7 from collected information"),
    ],
)
def test_title_extraction(body, title):
    assert extract_title(body) == title


def test_references_tag_block_resolves_numeric_markers():
    # The deepresearcher / openscholar answers of DeepScholar-bench wrap their list in a tag pair.
    text = (
        "## Related Work\n\nAgents plan with language models [1]. Retrieval helps [2][3].\n\n"
        "<references>\n"
        "[1] https://arxiv.org/abs/2005.11401\n"
        "[2] Dense Passage Retrieval for Open-Domain Question Answering\n"
        "[3] http://arxiv.org/abs/2007.00808v1 Approximate nearest neighbor negative contrastive learning\n"
        "</references>\n"
    )
    report = parse_report(text)
    assert [r.number for r in report.references] == [1, 2, 3]
    assert report.references[0].arxiv_id == "2005.11401"
    assert report.references[1].title == "Dense Passage Retrieval for Open-Domain Question Answering"
    assert "</references>" not in report.references[2].raw
    assert [(c.target, c.reference_index) for c in report.citations] == [("1", 0), ("2", 1), ("3", 2)]
    assert report.sections[-1].is_references and report.sections[-1].heading == "references"


def test_references_tag_inside_prose_is_not_a_heading():
    report = parse_report("We write <references> inline here [1].\n\nReferences\n[1] A title of a paper\n")
    assert [s.heading for s in report.sections if s.is_references] == ["References"]
    assert report.citations[0].reference_index == 0


def test_leading_arxiv_id_is_not_part_of_the_title():
    report = parse_report("Agents plan [1].\n\n<references>\n1. [2204.06547v2] Language agents as planners\n"
                          "2. [2301.00001](http://arxiv.org/abs/2301.00001) Another paper on agents\n</references>\n")
    assert [(r.title, r.arxiv_id) for r in report.references] == [
        ("Language agents as planners", "2204.06547"), ("Another paper on agents", "2301.00001")]
