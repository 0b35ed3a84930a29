"""The parser on every real system output in the datasets folder.

The expected numbers were checked by hand against the files (grep counts of
``](http`` links, ``[n]`` markers, ``^#`` headings and reference lines, an
independent count of bracket citations in the SurveyLens contents, and
reading the shorter outputs sentence by sentence); see the comments.
"""

from __future__ import annotations

import collections
import json

import pytest

from benchmark.parsing import parse_report, samples

from .invariants import check_report

EXPECTED = {
    # DeepSynth surveys are pasted chat output: plain text, no blank lines, ChatGPT source chips.
    "deepsynth/0": dict(outline=0, paragraphs=5, sentences=16, citations={"author_year": 3, "source_chip": 3}, references=0, resolved=0, tables=0),
    "deepsynth/1": dict(outline=4, paragraphs=12, sentences=49, citations={"source_chip": 2}, references=0, resolved=0, tables=0),
    "deepsynth/2": dict(outline=3, paragraphs=19, sentences=43, citations={"source_chip": 7}, references=0, resolved=0, tables=3),
    "deepsynth/3": dict(outline=0, paragraphs=15, sentences=50, citations={}, references=0, resolved=0, tables=0),
    # grep -o '](http' before "## References": 12 and 17; grep -c '^\\\[' after it: 19 and 29.
    "deepscholar/deepscholar-base/0": dict(outline=2, paragraphs=5, sentences=11, citations={"link": 12}, references=19, resolved=12, tables=0),
    "deepscholar/deepscholar-base/1": dict(outline=2, paragraphs=6, sentences=17, citations={"link": 17}, references=29, resolved=17, tables=0),
    # 9 '#' headings + "**References**"; 49 links, 22 entries, one summary table. Row 1 has no reference list at all.
    "deepscholar/deepscholar_base_gpt_4.1/0": dict(outline=10, paragraphs=12, sentences=42, citations={"link": 49}, references=22, resolved=49, tables=1),
    "deepscholar/deepscholar_base_gpt_4.1/1": dict(outline=10, paragraphs=12, sentences=44, citations={"link": 57}, references=0, resolved=0, tables=1),
    # plain "Related Works" / "References" lines; [n] markers; entry numbers skip (1-5, 10, 14, 20, 22).
    "deepscholar/search_ai_gpt_4.1/0": dict(outline=2, paragraphs=4, sentences=17, citations={"numeric": 11}, references=9, resolved=11, tables=0),
    "deepscholar/search_ai_gpt_4.1/1": dict(outline=2, paragraphs=5, sentences=17, citations={"numeric": 7}, references=7, resolved=7, tables=0),
    # STORM: two parts, each with its own "## References"; 29 '[n]' = 17 citations + 12 entries in row 1.
    "deepscholar/storm/0": dict(outline=4, paragraphs=9, sentences=26, citations={"numeric": 22}, references=20, resolved=22, tables=0),
    "deepscholar/storm/1": dict(outline=5, paragraphs=10, sentences=25, citations={"numeric": 17}, references=12, resolved=17, tables=0),
    # SurveyLens SSR files rebuilt as markdown; numeric counts equal an independent count of the
    # bracket groups ("[78; 82; 26]", "[[5,12]]", "[cite: 8, 9]") with duplicates in a group removed.
    "surveylens/Autosurvey": dict(outline=85, paragraphs=705, sentences=3025, citations={"numeric": 712}, references=192, resolved=712, tables=0),
    "surveylens/Gemini": dict(outline=19, paragraphs=49, sentences=96, citations={"numeric": 82}, references=42, resolved=0, tables=1),
    "surveylens/Human": dict(outline=7, paragraphs=38, sentences=149, citations={}, references=0, resolved=0, tables=2),
    "surveylens/InteractiveSurvey": dict(outline=24, paragraphs=66, sentences=297, citations={"numeric": 49}, references=8, resolved=49, tables=0),
    "surveylens/Qwen": dict(outline=9, paragraphs=24, sentences=163, citations={"numeric": 121}, references=19, resolved=119, tables=3),
    "surveylens/SciSage": dict(outline=11, paragraphs=20, sentences=99, citations={"numeric": 21}, references=15, resolved=20, tables=0),
    "surveylens/SurveyForge": dict(outline=36, paragraphs=161, sentences=645, citations={"numeric": 264}, references=23, resolved=264, tables=0),
    "surveylens/SurveyX": dict(outline=25, paragraphs=76, sentences=322, citations={"numeric": 92}, references=3, resolved=0, tables=0),
}


def test_every_system_output_is_covered(real):
    assert sorted(real) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_counts(real, name):
    report = real[name]
    expected = EXPECTED[name]
    kinds = collections.Counter(c.kind for c in report.citations)
    actual = dict(
        outline=len(report.outline),
        paragraphs=report.stats.paragraphs,
        sentences=report.stats.sentences,
        citations=dict(kinds),
        references=report.stats.references,
        resolved=report.stats.resolved_citations,
        tables=report.stats.tables,
    )
    assert actual == expected
    check_report(report)


def test_deepscholar_links_resolve_by_arxiv_id(real):
    report = real["deepscholar/deepscholar-base/0"]
    first = report.citations[0]
    assert first.raw == "[Stephan Zheng' 2021-08-05](http://arxiv.org/abs/2108.02755v1)"
    assert (first.kind, first.arxiv_id) == ("link", "2108.02755")
    reference = report.references[first.reference_index]
    assert reference.label == "Stephan Zheng' 2021-08-05"
    assert reference.title == "The AI Economist: Optimal Economic Policy Design via Two-level Deep Reinforcement Learning"
    assert all(report.references[c.reference_index].arxiv_id == c.arxiv_id for c in report.citations)
    # "[Ozan Candogan...]" (entry 4) is listed but never cited
    assert 3 not in {c.reference_index for c in report.citations}


def test_storm_parts_resolve_against_their_own_lists(real):
    report = real["deepscholar/storm/0"]
    assert [(o.level, o.title) for o in report.outline] == [(1, "summary"), (2, "References"), (1, "Related Works"), (2, "References")]
    summary = [c for c in report.citations if c.section_index == 0]
    related = [c for c in report.citations if c.section_index == 2]
    assert len(summary) == 10 and len(related) == 12
    assert {report.references[c.reference_index].section_index for c in summary} == {1}
    assert {report.references[c.reference_index].section_index for c in related} == {3}
    assert report.references[summary[0].reference_index].title == "The Spirit Level: Why Greater Equality Makes Societies Stronger"
    assert report.references[related[0].reference_index].title == "Restless bandits: activity allocation in a changing world"


def test_search_ai_numbered_references(real):
    report = real["deepscholar/search_ai_gpt_4.1/0"]
    assert [r.number for r in report.references] == [1, 2, 3, 4, 5, 10, 14, 20, 22]
    assert report.references[0].title == "Optimal taxation and the Domar-Musgrave effect"
    assert report.references[0].arxiv_id == "2311.05822"
    pair = [c for c in report.citations if c.raw in ("[10]", "[22]")]
    assert [report.references[c.reference_index].number for c in pair] == [10, 22]
    report = real["deepscholar/search_ai_gpt_4.1/1"]
    assert [r.style for r in report.references] == ["numbered"] * 7
    assert report.references[2].title == "Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget Allocation for Efficient LLM Inference"


def test_deepsynth_structure(real):
    assert [(o.level, o.title, o.style) for o in real["deepsynth/1"].outline] == [
        (1, "Introduction", "numbered"),
        (1, "Adversarial Attack Goals: Targeted vs. Untargeted", "numbered"),
        (1, "Digital vs. Physical Adversarial Domains", "numbered"),
        (1, "Physical Realizations and Challenges", "numbered"),
    ]
    assert [o.title for o in real["deepsynth/2"].outline] == ["Introduction", "Discussion", "Conclusion"]
    report = real["deepsynth/0"]
    assert [c.target for c in report.citations if c.kind == "author_year"] == ["Li 2018", "McCormac 2017", "Li 2016"]
    chip = report.citations[1]
    assert (chip.raw, chip.target) == ("arXiv\n+1", "arxiv")
    assert report.sentences[chip.sentence_index].text.endswith("compared with baseline approaches.\narXiv\n+1")


def test_deepsynth_also_parses_as_markdown(datasets_root):
    for sample in samples.deepsynth_samples(datasets_root):
        check_report(parse_report(sample.text, format="markdown"))


@pytest.fixture(scope="module")
def ssr_files(datasets_root):
    folder = datasets_root / "surveylens" / "luciferase"
    return {f"surveylens/{p.stem}": json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))}


def test_surveylens_text_statistics_match_the_ssr_stats(real, ssr_files):
    """chars / words / naive sentences reproduce the SSR per-section stats.

    Deviation: SciSage's "Conclusion" content starts with a standalone
    "**Conclusion**" line, which we read as a heading (one more section, one
    word and 16 characters fewer)."""
    deviations = {"surveylens/SciSage": dict(sections=1, words=-1, chars=-16, sentences=0)}
    for name, ssr in ssr_files.items():
        report = real[name]
        expected = dict(
            sections=len(ssr["content"]) + bool(ssr["references"]),
            words=sum(c["stats"]["word_count"] for c in ssr["content"]),
            chars=sum(c["stats"]["char_count"] for c in ssr["content"]),
            sentences=sum(c["stats"]["sentence_count"] for c in ssr["content"]),
        )
        for key, delta in deviations.get(name, {}).items():
            expected[key] += delta
        actual = dict(
            sections=len(report.sections),
            words=report.stats.words,
            chars=report.stats.chars,
            sentences=report.stats.surveylens_sentences,
        )
        assert actual == expected, name


def test_surveylens_absolute_statistics(real):
    autosurvey, human, surveyx = real["surveylens/Autosurvey"], real["surveylens/Human"], real["surveylens/SurveyX"]
    assert (autosurvey.stats.words, autosurvey.stats.chars, autosurvey.stats.surveylens_sentences) == (74492, 535753, 3030)
    # Human.json: "Figure1..." - "Figure4..." caption lines and two <table> blocks; 68 $...$ spans (units)
    assert (human.stats.images, human.stats.tables, human.stats.equations, human.stats.inline_math) == (4, 2, 0, 68)
    # SurveyX: captions "Figure 1:" ... "Figure 6:" ("Figure 3 illustrates" is a mention, not a caption)
    assert (surveyx.stats.images, surveyx.stats.inline_math) == (6, 23)
    assert real["surveylens/Gemini"].stats.inline_math == 7


def test_surveylens_reference_titles_extend_the_ssr_titles(real, ssr_files):
    """Every SSR title (their pipeline truncates some at a comma) is a prefix
    of ours after lowercasing and dropping punctuation."""

    def norm(title: str) -> str:
        return " ".join("".join(ch if ch.isalnum() or ch.isspace() else " " for ch in title.lower()).split())

    for name, ssr in ssr_files.items():
        ours = real[name].references
        assert len(ours) == len(ssr["references"]), name
        for mine, theirs in zip(ours, ssr["references"]):
            assert norm(mine.title).startswith(norm(theirs["title"])), (name, mine.title, theirs["title"])


def test_unresolved_surveylens_citations_point_at_missing_entries(real):
    qwen = real["surveylens/Qwen"]
    assert {c.target for c in qwen.citations if c.reference_index is None} == {"14"}
    assert 14 not in {r.number for r in qwen.references}
    scisage = real["surveylens/SciSage"]
    assert [c.raw for c in scisage.citations if c.reference_index is None] == ["[17]"]
    # Gemini and SurveyX list their references without numbers: numeric citations stay unresolved
    assert all(r.number is None for r in real["surveylens/Gemini"].references)


def test_latex_related_work_sections(datasets_root):
    latex = list(samples.latex_related_work_samples(datasets_root))
    assert len(latex) == 63
    reports = [parse_report(s.text) for s in latex]
    kinds = collections.Counter(c.kind for r in reports for c in r.citations)
    # 2,067 keys in \cite-like commands over the 63 exemplars (independent regex count)
    assert kinds == {"latex": 2067, "url": 10}
    first = reports[0]
    assert [o.title for o in first.outline] == ["Traditional Tax Systems", "Artificial Intelligence(AI) in Economic Policy Research"]
    # 15 \cite commands holding 19 keys; "\cite{10.1257/jep.25.4.165}" is a key, not a DOI citation
    assert (first.stats.citations, first.stats.citation_groups) == (19, 15)
    assert first.citations[0].raw == "\\cite{NBERw21340, NBERw21211}"
    # "\subsection{Industrial Anomaly Detection} Although ..." keeps the text after the heading
    assert len(reports[18].outline) == 3
    for report in reports[:10]:
        check_report(report)
