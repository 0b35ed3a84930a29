"""Reference normalisation, matching and P/R/F1 (ReportBench §3.2, SciSage §5.1.3)."""

import random
from difflib import SequenceMatcher

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.metrics import (
    deduplicate_references,
    match_references,
    normalize_arxiv_id,
    normalize_doi,
    normalize_title,
    normalize_url,
    reference_prf,
    title_similarity,
)


class TestNormalizeTitle:
    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("{BERT}: Pre-training of Deep Bidirectional Transformers", "bert pretraining of deep bidirectional transformers"),
            ('Sch{\\"u}tze', "schutze"),
            ('Sch\\"utze', "schutze"),
            ("Schütze", "schutze"),
            ("Schu\u0308tze", "schutze"),  # decomposed ü
            ("Caf\\'e na\\\"{\\i}ve", "cafe naive"),
            ("\\v{S}koda \\c{c}a \\ss", "skoda ca ss"),
            ("“Smart” quotes — and – dashes", "smart quotes and dashes"),
            ("It’s a model's world", "its a models world"),
            ("ﬁne-tuning ＧＰＴ", "finetuning gpt"),
            ("  many\t spaces\n here ", "many spaces here"),
            ("\\emph{Deep} \\textbf{Learning}", "deep learning"),
            ("$\\alpha$-divergence", "αdivergence"),
            ("α-divergence", "αdivergence"),
            ("STRASSE", "strasse"),
            ("Straße", "strasse"),
            ("Ελληνικά", "ελληνικά"),
            ("", ""),
            ("?!", ""),
        ],
    )
    def test_cases(self, raw, expected):
        assert normalize_title(raw) == expected

    def test_variants_agree(self):
        variants = [
            "Attention Is All You Need",
            "attention is all you need.",
            "“Attention is all you need”",
            "{Attention} {I}s {A}ll {Y}ou {N}eed",
        ]
        assert len({normalize_title(v) for v in variants}) == 1

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=60))
    def test_idempotent_and_clean(self, text):
        once = normalize_title(text)
        assert normalize_title(once) == once
        assert once == once.strip() and "  " not in once

    def test_rejects_non_string(self):
        with pytest.raises(ValueError, match="string"):
            normalize_title(None)


class TestIdentifiers:
    @pytest.mark.parametrize(
        "raw",
        [
            "10.1162/TACL_A_00454",
            "https://doi.org/10.1162/tacl_a_00454",
            "http://dx.doi.org/10.1162/tacl_a_00454",
            "doi:10.1162/tacl_a_00454",
            " DOI: 10.1162/TACL_a_00454. ",
            "https://doi.org/10.1162%2Ftacl_a_00454",
        ],
    )
    def test_doi(self, raw):
        assert normalize_doi(raw) == "10.1162/tacl_a_00454"

    @pytest.mark.parametrize(
        "raw",
        [
            "2506.06287",
            "2506.06287v2",
            "arXiv:2506.06287v12",
            "https://arxiv.org/abs/2506.06287v1",
            "http://www.arxiv.org/pdf/2506.06287v3.pdf",
            "arxiv.org/pdf/2506.06287",
        ],
    )
    def test_arxiv(self, raw):
        assert normalize_arxiv_id(raw) == "2506.06287"

    def test_old_style_arxiv(self):
        assert normalize_arxiv_id("arXiv:hep-th/9901001v2") == "hep-th/9901001"
        assert normalize_arxiv_id("https://arxiv.org/abs/cs/0112017v1") == "cs/0112017"

    @pytest.mark.parametrize(
        "raw",
        ["https://www.example.org/paper/", "http://example.org/paper", "example.org/paper#section-2", "HTTPS://Example.ORG/paper"],
    )
    def test_url(self, raw):
        assert normalize_url(raw) == "example.org/paper"

    def test_url_keeps_path_case_and_query(self):
        assert normalize_url("https://example.org/A/b?id=3") == "example.org/A/b?id=3"


class TestMatching:
    def test_identifier_forms_match(self):
        pred = [
            {"doi": "https://doi.org/10.48550/arXiv.2506.06287", "title": "A"},
            {"url": "https://arxiv.org/pdf/2401.00001v2.pdf"},
            {"url": "https://doi.org/10.1000/XYZ"},
            {"url": "http://www.example.org/x/"},
        ]
        gold = [
            {"url": "https://example.org/x"},
            {"doi": "10.1000/xyz"},
            {"arxiv_id": "arXiv:2401.00001"},
            {"arxiv_id": "2506.06287v3", "title": "Completely different title"},
        ]
        assert match_references(pred, gold) == [(0, 3), (1, 2), (2, 1), (3, 0)]

    def test_exact_and_fuzzy_titles(self):
        pred = [{"title": "Attention is all you need"}, {"title": "Deep residual learning for image recognitio"}, {"title": "Unrelated"}]
        gold = [{"title": "Deep Residual Learning for Image Recognition"}, {"title": "Attention Is All You Need."}]
        assert match_references(pred, gold) == [(0, 1), (1, 0)]
        assert match_references(pred, gold, fuzzy_threshold=1.0) == [(0, 1)]

    def test_one_to_one(self):
        pred = [{"title": "Same paper"}, {"title": "Same paper"}, {"doi": "10.1/a"}, {"doi": "10.1/A"}]
        gold = [{"title": "same paper"}, {"doi": "10.1/a"}]
        pairs = match_references(pred, gold)
        assert pairs == [(0, 0), (2, 1)]
        assert len({p for p, _ in pairs}) == len(pairs) and len({g for _, g in pairs}) == len(pairs)

    def test_identifiers_take_precedence_over_titles(self):
        pred = [{"title": "Paper One", "doi": "10.1/two"}]
        gold = [{"title": "Paper One"}, {"title": "Paper Two", "doi": "10.1/two"}]
        assert match_references(pred, gold) == [(0, 1)]

    def test_fuzzy_prefers_most_similar_pair(self):
        pred = [{"title": "graph neural networks for molecules a survey"}]
        gold = [{"title": "graph neural networks for molecule a surveys"}, {"title": "graph neural networks for molecules a surve"}]
        sims = [title_similarity(normalize_title(pred[0]["title"]), normalize_title(g["title"])) for g in gold]
        assert match_references(pred, gold, fuzzy_threshold=0.8) == [(0, int(sims[1] > sims[0]))]

    def test_empty_inputs(self):
        assert match_references([], [{"title": "x"}]) == []
        assert match_references([{"title": ""}, {}], [{"title": ""}]) == []

    def test_prefilter_loses_no_fuzzy_match(self):
        """The length / character-bag bounds only prune pairs that cannot reach the threshold."""
        rng = random.Random(7)
        words = "deep learning graph neural network survey model language large vision transformer attention data".split()
        titles = [" ".join(rng.choices(words, k=rng.randint(2, 7))) for _ in range(60)]
        noisy = [t[: max(1, len(t) - rng.randint(0, 3))] + rng.choice(["", "s", "x"]) for t in titles]
        pred = [{"title": t} for t in noisy[:40]]
        gold = [{"title": t} for t in titles[20:]]
        for threshold in (0.6, 0.8, 0.9):
            got = match_references(pred, gold, fuzzy_threshold=threshold)
            assert got == _naive_match(pred, gold, threshold)

    @pytest.mark.parametrize("threshold", [0, -0.1, 1.1, float("nan"), "0.9"])
    def test_bad_threshold(self, threshold):
        with pytest.raises(ValueError, match="fuzzy_threshold"):
            match_references([], [], fuzzy_threshold=threshold)

    @pytest.mark.parametrize(
        ("pred", "message"),
        [(["a title"], "must be a dict"), ([{"title": 3}], "string or None"), ({"title": "x"}, "list of reference dicts")],
    )
    def test_bad_references(self, pred, message):
        with pytest.raises(ValueError, match=message):
            match_references(pred, [])


def _naive_match(pred, gold, threshold):
    """Reference implementation: exact title stage, then brute-force greedy fuzzy stage."""
    pt = [normalize_title(r["title"]) for r in pred]
    gt = [normalize_title(r["title"]) for r in gold]
    free_p, free_g, pairs = set(range(len(pt))), set(range(len(gt))), []
    for i in range(len(pt)):
        for j in range(len(gt)):
            if i in free_p and j in free_g and pt[i] and pt[i] == gt[j]:
                pairs.append((i, j))
                free_p.discard(i)
                free_g.discard(j)
    scored = []
    for i in sorted(free_p):
        for j in sorted(free_g):
            a, b = sorted([pt[i], gt[j]])
            s = SequenceMatcher(None, a, b, autojunk=False).ratio() if a and b else 0.0
            if s >= threshold:
                scored.append((-s, i, j))
    for _, i, j in sorted(scored):
        if i in free_p and j in free_g:
            pairs.append((i, j))
            free_p.discard(i)
            free_g.discard(j)
    return sorted(pairs)


def test_title_similarity_is_symmetric_difflib_ratio():
    a, b = "abcd efgh", "abxd efgq"
    assert title_similarity(a, b) == title_similarity(b, a) == pytest.approx(SequenceMatcher(None, a, b, autojunk=False).ratio())
    assert title_similarity("same", "same") == 1.0
    assert title_similarity("", "x") == 0.0


class TestDeduplicate:
    def test_groups_share_identifier_or_title(self):
        refs = [
            {"title": "A", "doi": "10.1/a"},
            {"title": "B"},
            {"title": "a."},  # same title as 0
            {"doi": "https://doi.org/10.1/A"},  # same DOI as 0
            {"title": "B", "arxiv_id": "2401.1"},  # same title as 1
            {"arxiv_id": "2401.1v2"},  # same arXiv id as 4 → 1 (transitive)
            {"title": "C"},
        ]
        assert deduplicate_references(refs) == [0, 1, 6]


class TestPRF:
    def test_hand_computed(self):
        pred = [{"title": "A"}, {"title": "B"}, {"title": "C"}, {"title": "D"}]
        gold = [{"title": "a"}, {"title": "b"}, {"title": "x"}, {"title": "y"}, {"title": "z"}]
        out = reference_prf(pred, gold)
        assert out["tp"] == 2
        assert out["precision"] == pytest.approx(0.5)
        assert out["recall"] == pytest.approx(0.4)
        assert out["f1"] == pytest.approx(2 * 0.5 * 0.4 / 0.9)

    def test_duplicates_count_once_by_default(self):
        pred = [{"title": "A"}, {"title": "A!"}, {"doi": "10.1/b"}, {"url": "https://doi.org/10.1/B"}]
        gold = [{"title": "a"}, {"doi": "10.1/b"}]
        assert reference_prf(pred, gold)["precision"] == 1.0
        assert reference_prf(pred, gold)["n_predicted"] == 2
        assert reference_prf(pred, gold, deduplicate=False)["precision"] == 0.5

    def test_empty_inputs_give_zero(self):
        zero = {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0}
        for pred, gold in (([], []), ([{"title": "a"}], []), ([], [{"title": "a"}])):
            out = reference_prf(pred, gold)
            assert {k: out[k] for k in zero} == zero

    def test_bad_deduplicate_flag(self):
        with pytest.raises(ValueError, match="deduplicate"):
            reference_prf([], [], deduplicate="yes")

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.sampled_from(["alpha beta", "gamma delta", "epsilon", "zeta eta theta", "iota"]), max_size=6),
        st.lists(st.sampled_from(["Alpha Beta", "gamma-delta", "epsilon!", "kappa", "iota"]), max_size=6),
    )
    def test_bounds(self, pred_titles, gold_titles):
        out = reference_prf([{"title": t} for t in pred_titles], [{"title": t} for t in gold_titles])
        for key in ("precision", "recall", "f1"):
            assert 0.0 <= out[key] <= 1.0
        assert out["tp"] <= min(out["n_predicted"], out["n_gold"])


@pytest.mark.parametrize("arxiv_id", ["2003.00653", "2301.07499", "2304.05482"])
def test_released_gold_bibliographies_survive_reformatting(datasets, arxiv_id):
    """Real ReportBench gold titles (LaTeX, Unicode, odd spacing) still match after typographic changes."""
    import json

    path = datasets / "reportbench" / "ReportBench_v1.1_GT" / f"{arxiv_id}.jsonl"
    gold = [{"title": json.loads(line).get("title") or None} for line in path.read_text(encoding="utf-8").splitlines()]

    def restyle(title):
        if title is None:
            return None
        styled = title.replace("-", "\u2010").replace("'", "\u2019")
        if "\\" not in styled:  # swapping case inside LaTeX macros would change them
            styled = styled.swapcase()
        return "\u201c" + styled + "\u201d."

    predicted = [{"title": restyle(ref["title"])} for ref in reversed(gold)]
    out = reference_prf(predicted, gold)
    assert out["tp"] == out["n_gold"] == out["n_predicted"]
    assert out["precision"] == out["recall"] == 1.0


def test_real_latex_quirks():
    assert normalize_title("\\textCIS2: A Simplified Commonsense Inference") == "cis2 a simplified commonsense inference"
    assert normalize_title("$\\$TESSERACT$\\$: Eliminating experimental bias") == "tesseract eliminating experimental bias"
