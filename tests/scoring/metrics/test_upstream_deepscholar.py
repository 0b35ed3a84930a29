"""DeepScholar-bench's upstream variants pinned to what the released code computed.

``tests/fixtures/upstream/deepscholar-bench.json`` holds the outputs of guestrin-lab/deepscholar-bench's
own ``cite_p.py``, ``claim_coverage.py`` and ``calculate_nugget_scores`` (commit and how they were run are
in the file), its LLM replaced by a deterministic rule: a reference supports a claim when its text holds
``SUPPORTS[<tag>]`` for the claim's leading tag. The tests rebuild our metrics' inputs from the same
cases with the same rule and compare.
"""

import json
import re
from pathlib import Path

import pytest

from scoring.metrics import NUGGET_MODES, citation_precision, claim_coverage, nugget_coverage

FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures/upstream/deepscholar-bench.json").read_text())
CITE = re.compile(r"\[(\d+)\]")


def supports(document: list[str], claim: str) -> bool:
    tag = re.match(r"\s*(c\d+):", claim)
    return bool(tag) and f"SUPPORTS[{tag.group(1)}]" in f"Title: {document[0]}\n{document[1]}"


def citation_inputs(case: dict) -> tuple[list[bool], list[int], int]:
    """Per-citation support, each citation's sentence, and the uncited claim sentences: a citation
    outside the document list is no citation (the released code skips it)."""
    flags, sentence_of, uncited = [], [], 0
    for i, sentence in enumerate(case["sentences"]):
        if len(sentence) < 50:
            continue
        cited = [int(n) - 1 for n in CITE.findall(sentence) if 0 < int(n) <= len(case["documents"])]
        if not cited:
            uncited += 1
        for k in cited:
            flags.append(supports(case["documents"][k], sentence))
            sentence_of.append(i)
    return flags, sentence_of, uncited


def test_fixture_names_the_released_code():
    assert FIXTURE["repository"] == "guestrin-lab/deepscholar-bench"
    assert re.fullmatch(r"[0-9a-f]{40}", FIXTURE["commit"])


@pytest.mark.parametrize("name", sorted(FIXTURE["citation_precision"]))
def test_citation_precision_upstream_gives_the_released_value(name):
    case = FIXTURE["citation_precision"][name]
    flags, sentence_of, uncited = citation_inputs(case)
    got = citation_precision(flags, variant="upstream", sentences=sentence_of, uncited_sentences=uncited)
    assert got == pytest.approx(case["upstream"], abs=1e-12)


def test_issue_case_before_and_after():
    case = FIXTURE["citation_precision"]["issue_case"]
    flags, sentence_of, uncited = citation_inputs(case)
    assert case["upstream"] == pytest.approx(0.5)
    # before: the uncited claim was left out (0.750); the paper's mean over citations is 2/3
    assert citation_precision(flags, variant="upstream", sentences=sentence_of) == pytest.approx(0.75)
    assert citation_precision(flags) == pytest.approx(2 / 3)


def test_citation_precision_upstream_edges():
    assert citation_precision([], variant="upstream", sentences=[], uncited_sentences=2) == 0.0
    assert citation_precision([], variant="upstream", sentences=[]) is None
    with pytest.raises(ValueError, match="uncited_sentences"):
        citation_precision([True], variant="upstream", sentences=[0], uncited_sentences=-1)


@pytest.mark.parametrize("name", sorted(FIXTURE["nugget_scores"]))
def test_nugget_coverage_upstream_gives_the_released_scores(name):
    case = FIXTURE["nugget_scores"][name]
    labels = [n["assignment"] for n in case["nuggets"]]
    importance = [n["importance"] for n in case["nuggets"]]
    for mode in NUGGET_MODES:
        got = nugget_coverage(labels, importance, mode, variant="upstream")
        assert got == pytest.approx(case["upstream"][f"{mode}_score"], abs=1e-12), mode


def test_nugget_coverage_paper_keeps_none_for_an_empty_set():
    case = FIXTURE["nugget_scores"]["no_vital_nugget"]
    labels = [n["assignment"] for n in case["nuggets"]]
    importance = [n["importance"] for n in case["nuggets"]]
    assert case["upstream"]["vital_score"] == 0.0
    assert nugget_coverage(labels, importance, "vital") is None
    assert nugget_coverage(labels, importance, "strict_all") == case["upstream"]["strict_all_score"]


def test_claim_coverage_docstring_difference_is_what_the_released_code_does():
    """The released code gives 2/3 at every window where our window=0 gives 1: the middle claim
    cites nothing, and only the query context (the paper's title) supports it."""
    case = FIXTURE["claim_coverage"]["query_context_without_citation"]
    assert case["upstream"] == {"0": pytest.approx(2 / 3), "1": pytest.approx(2 / 3)}
    sentences = re.split(r"(?<=\.) ", case["text"])
    context = case["title"] + case["abstract"]
    n = len(sentences)
    support = [[False] * n for _ in range(n)]
    for i, claim in enumerate(sentences):
        for j, other in enumerate(sentences):
            docs = [case["documents"][int(k) - 1] for k in CITE.findall(other)]
            support[i][j] = any(supports(d, claim) for d in docs) or supports(["", context], claim)
    assert claim_coverage(support, window=0) == 1.0
    # what the released code counts: only claims that cite a document, judged with the context appended
    cited_only = [[support[i][j] and bool(CITE.search(sentences[i])) for j in range(n)] for i in range(n)]
    assert claim_coverage(cited_only, window=0) == pytest.approx(case["upstream"]["0"])
