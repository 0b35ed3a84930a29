"""DeepScholar-bench pipeline with a scripted judge: every metric checked against ``scoring.metrics``
called directly on the same labels.

The hand-built case (``case`` fixture). The report has five sentences:
  s0 "Widget transformers …" cites [1] → arXiv 2101.00001 (Report.sources snippet; BibEntry A, 100 cites);
  s1 "Sparse gadgets …" cites [2] → example.org/gadgets (Report.sources snippet, ``citation_count`` 40);
  s2 "A new theory …" cites [3] → a title only: no stored text anywhere ("source not available");
  s3 "Gizmo networks …" links arXiv 2202.00002 → BibEntry C (abstract, 10 cites);
  s4 "Our fusion …" cites nothing.
Exemplar references: A (important), B (important, 300 cites, not cited), C (not important), one rejected.
Scripted labels: support for (s0, A), (s1, A), (s2, C), (s3, C) and (s4, query context); grades A 2,
gadgets 1, C 0; nuggets n0 vital support, n1 vital partial, n2 okay not, n3 okay support (+1 rejected).
"""

from __future__ import annotations

import threading
import time

import pytest
from scipy.stats import gmean

from django.db import connection

from benchmark.models import Origin, Protocol, ReviewStatus, Task
from benchmark.parsing import parse_report
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.metrics import (
    citation_precision, claim_coverage, document_importance, geometric_mean, nugget_coverage, reference_coverage,
    relevance_rate, win_rate,
)
from scoring.models import EvaluationRun, LLMCall, Verdict
from scoring.pipelines import PIPELINES
from scoring.pipelines.deepscholar.citation_support import CITATIONS
from scoring.pipelines.deepscholar.documents import report_citations
from scoring.pipelines.deepscholar.nuggets import NO_NUGGETS, NUGGETS
from scoring.pipelines.deepscholar.organization import ORGANIZATION
from scoring.pipelines.deepscholar.pipeline import STEPS
from scoring.pipelines.deepscholar.reference_coverage import IMPORTANCE
from scoring.pipelines.deepscholar.relevance import RELEVANCE
from tests.factories import (
    BibEntryFactory, GoldReferenceFactory, NuggetFactory, ReportFactory, SurveyFactory, SystemFactory, TaskFactory,
)
from tests.scoring.services.fakes import judge_config

pipeline = PIPELINES["deepscholar"]

EXEMPLAR = ("Prior work on widgets spans transformers [1] and gadgets [2].\n\n"
            "Gizmo networks [3] unify both lines of work.")
REPORT_TEXT = """# Related Work

Widget transformers improve accuracy on the benchmark by ten points in all settings [1]. Sparse gadgets reduce memory use by half across every tested configuration [2]. A new theory of everything explains all of the observed experimental results [3].

Gizmo networks combine widgets and gadgets into one efficient architecture ([Gizmo Networks](https://arxiv.org/abs/2202.00002v2)). Our fusion of widgets and gizmos is the first method to scale to a billion parameters.

## References

[1] Widget Transformers for Accurate Prediction. https://arxiv.org/abs/2101.00001
[2] Sparse Gadgets Reduce Memory. https://example.org/gadgets
[3] A Theory of Everything Unrelated.
"""
SOURCES = [
    {"title": "Widget Transformers for Accurate Prediction", "url": "http://arxiv.org/abs/2101.00001v1",
     "snippet": "Widget transformers improve accuracy on the benchmark by ten points."},
    {"title": "Sparse Gadgets Reduce Memory", "url": "https://example.org/gadgets", "citation_count": 40,
     "snippet": "Gadgets are sparse; we study their theory."},
]
QUERY_ABSTRACT = "We fuse widgets and gizmos, the first method to scale to a billion parameters."
NUGGET_ROWS = [("Widget transformers improve accuracy", "vital", "support"),
           ("Sparse gadgets save memory", "vital", "partial_support"),
           ("Doohickeys align widgets", "okay", "not_support"),
           ("Gizmo networks unify widgets and gadgets", "okay", "support")]
# sentence start -> the source titles (or "query") that support it
SUPPORTS = {
    "Widget transformers": {"Widget Transformers for Accurate Prediction"},
    "Sparse gadgets": {"Widget Transformers for Accurate Prediction"},
    "A new theory": {"Gizmo Networks"},
    "Gizmo networks": {"Gizmo Networks"},
    "Our fusion": {"query"},
}
GRADES = {"Widget Transformers for Accurate Prediction": 2, "Sparse Gadgets Reduce Memory": 1, "Gizmo Networks": 0}
IMPORTANT = {"Widget Transformers: Accurate Prediction at Scale": True, "Doohickey Alignment": True,
             "Gizmo Networks": False}


def support_of(sentence: str, source: str) -> str:
    title = source.split("\n", 1)[0].removeprefix("Title: ")
    for start, titles in SUPPORTS.items():
        if sentence.startswith(start):
            return "support" if (title in titles or ("query" in titles and source.startswith("Widget Gizmo"))) \
                else "not_support"
    raise AssertionError(f"unexpected sentence {sentence!r}")


class StepJudge(Judge):
    """Answers the DeepScholar steps from the tables above and counts its calls; ``respond(call)``
    may replace an answer (``None`` keeps the scripted one); ``prefer`` decides organization."""

    def __init__(self, config, *, respond=None, prefer="A") -> None:
        super().__init__(config)
        self.respond = respond
        self.prefer = prefer
        self.calls: list[JudgeCall] = []
        self._lock = threading.Lock()

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        with self._lock:
            self.calls.append(call)
        custom = self.respond(call) if self.respond is not None else None
        return custom if custom is not None else self.scripted(call)

    def scripted(self, call: JudgeCall) -> JudgeAnswer:
        v = call.variables
        if call.step == ORGANIZATION:
            winner = self.prefer if self.prefer in ("A", "B", "tie") else (
                "A" if (v["report_a"] == REPORT_TEXT) == (self.prefer == "report") else "B")
            data = {"winner": winner, "rationale": "scripted"}
        elif call.step == NUGGETS:
            by_text = {text: label for text, _, label in NUGGET_ROWS}
            data = {"labels": [{"id": n["id"], "label": by_text[n["text"]]} for n in v["nuggets"]]}
        elif call.step == RELEVANCE:
            data = {"grade": GRADES[v["document"].split("\n", 1)[0].removeprefix("Title: ")], "rationale": "scripted"}
        elif call.step == IMPORTANCE:
            data = {"important": IMPORTANT[v["document"].split(" (", 1)[0]]}
        elif call.step == CITATIONS:
            data = {"label": support_of(v["sentence"], v["source"])}
        else:
            raise AssertionError(call.step)
        return JudgeAnswer(data=data, raw="{}", model="scripted", tokens_in=100, tokens_out=10, latency_ms=5.0,
                           cost_usd=0.001)

    def steps_called(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for call in self.calls:
            counts[call.step] = counts.get(call.step, 0) + 1
        return counts


def make_report(task, text=REPORT_TEXT, sources=None, system=None):
    parsed = parse_report(text, format="markdown").to_dict()
    del parsed["text"]
    return ReportFactory(task=task, text=text, parsed=parsed, stats=parsed["stats"],
                         sources=SOURCES if sources is None else sources, system=system or SystemFactory())


def make_run(config) -> EvaluationRun:
    return EvaluationRun.objects.create(protocol="deepscholar", judge_config=config)


def run_all(run, report, judge) -> None:
    for step in pipeline.steps_for(report):
        pipeline.run_step(run=run, report=report, step=step, judge=judge)


def make_case():
    """The hand-built case of the module docstring: (task, report)."""
    survey = SurveyFactory(title="Widget Gizmo Fusion", abstract=QUERY_ABSTRACT, full_text=EXEMPLAR)
    task = TaskFactory(protocol=Protocol.DEEPSCHOLAR, survey=survey)
    a = BibEntryFactory(title="Widget Transformers: Accurate Prediction at Scale", arxiv_id="2101.00001",
                        abstract="Widget transformers are accurate.", citation_count=100)
    b = BibEntryFactory(title="Doohickey Alignment", abstract="", citation_count=300)
    c = BibEntryFactory(title="Gizmo Networks", arxiv_id="2202.00002", citation_count=10,
                        abstract="Gizmo networks combine widgets and gadgets into one efficient architecture.")
    rejected = BibEntryFactory(title="Rejected Reference Study", abstract="Everything.")
    for position, bib in enumerate([a, b, c]):
        GoldReferenceFactory(task=task, bib_entry=bib, position=position)
    GoldReferenceFactory(task=task, bib_entry=rejected, position=9, review_status=ReviewStatus.REJECTED)
    for position, (text, importance, _) in enumerate(NUGGET_ROWS):
        NuggetFactory(task=task, text=text, importance=importance, position=position)
    NuggetFactory(task=task, text="A rejected nugget", position=9, review_status=ReviewStatus.REJECTED)
    return task, make_report(task)


@pytest.fixture
def case():
    return make_case()


def expected_metrics() -> dict:
    """The seven metrics computed straight from the scripted labels with ``scoring.metrics``."""
    nug_labels = [label for _, _, label in NUGGET_ROWS]
    importance = [imp for _, imp, _ in NUGGET_ROWS]
    # claim coverage: rows = claims s0..s4, columns = sentences; M[i][j] = a document of sentence j
    # (or the query context) supports claim i. Sentence j cites: s0 A, s1 gadgets, s2 theory (no text), s3 C.
    # At w = 0, s2 is undetermined (its only pair has no source): the mean is over s0, s1, s3, s4.
    diagonal = [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]  # s0, s1, s3, s4 against themselves
    full = [  # A supports s0 and s1; C supports s2 and s3; the query supports s4 everywhere
        [1, 0, 0, 0, 0],
        [1, 0, 0, 0, 0],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 1, 0],
        [1, 1, 1, 1, 1],
    ]
    by_window = {"0": claim_coverage(diagonal, window=0)}
    by_window.update({str(w): claim_coverage(full, window=w) for w in range(1, 6)})
    metrics = {
        "organization": win_rate(["win", "loss"]),
        "nugget_coverage": nugget_coverage(nug_labels, importance, "strict_all"),
        "nugget_coverage_all": nugget_coverage(nug_labels, importance, "all"),
        "nugget_coverage_strict_vital": nugget_coverage(nug_labels, importance, "strict_vital"),
        "nugget_coverage_vital": nugget_coverage(nug_labels, importance, "vital"),
        "relevance_rate": relevance_rate([2, 1, 0]),
        "reference_coverage": reference_coverage(["A"], ["A", "B"]),
        "document_importance": document_importance([100, 40, 10], [100, 300, 10]),
        "citation_precision": citation_precision([True, False, True]),
        "claim_coverage": by_window["1"],
        "claim_coverage_by_window": by_window,
    }
    metrics["geometric_mean"] = geometric_mean([metrics[k] for k in (
        "organization", "nugget_coverage", "relevance_rate", "reference_coverage", "document_importance",
        "citation_precision", "claim_coverage")])
    return metrics


# --- resolution from stored data ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_cited_documents_resolve_from_report_sources_and_the_bibliography_only(case):
    task, report = case
    citations = report_citations(report)
    docs = [citations.documents[k] for k in citations.retrieved]
    assert [d.key for d in docs] == ["arxiv:2101.00001", "url:example.org/gadgets",
                                     "title:a theory of everything unrelated", "arxiv:2202.00002"]
    assert [d.origin for d in docs] == ["report_sources", "report_sources", "", "bib_entry"]
    assert [d.citation_count for d in docs] == [100, 40, None, 10]  # the BibEntry's count first, then the source's
    assert [c.index for c in citations.claims] == [0, 1, 2, 3, 4]
    assert citations.claims[3].text == "Gizmo networks combine widgets and gadgets into one efficient architecture."
    assert [c.documents for c in citations.claims] == [
        ("arxiv:2101.00001",), ("url:example.org/gadgets",), ("title:a theory of everything unrelated",),
        ("arxiv:2202.00002",), ()]


@pytest.mark.django_db
def test_storm_numbers_take_the_source_with_that_unified_index(case):
    task, _ = case
    text = ("A long enough sentence about widget transformers and their accuracy gains [2].\n\n"
            "## References\n\n[2] A hallucinated book title that names no real work.\n")
    sources = [
        {"url": "http://arxiv.org/abs/2101.00001v1", "title": "Widget Transformers", "snippet": "W.", "index": 2},
        {"url": "http://arxiv.org/abs/2303.00003v1", "title": "Other", "snippet": "O.", "index": 1},
    ]
    citations = report_citations(make_report(task, text=text, sources=sources))
    assert citations.retrieved == ["arxiv:2101.00001"]
    assert citations.claims[0].documents == ("arxiv:2101.00001",)
    doc = citations.documents["arxiv:2101.00001"]
    assert (doc.text, doc.origin, doc.citation_count) == ("W.", "report_sources", 100)  # count from BibEntry A


# --- judging and scoring --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_hand_computed_metrics_match_the_metric_library(case):
    task, report = case
    config = judge_config(options={"nugget_batch_size": 3})
    run = make_run(config)
    judge = StepJudge(config)
    assert pipeline.steps_for(report) == STEPS

    run_all(run, report, judge)

    # 2 orders; 4 nuggets in batches of 3; 3 documents with text; 3 exemplar references;
    # 5 claims x (4 documents, all within ±5) + 5 query pairs, less the 5 pairs of the text-less document
    assert judge.steps_called() == {ORGANIZATION: 2, NUGGETS: 2, RELEVANCE: 3, IMPORTANCE: 3, CITATIONS: 20}
    assert LLMCall.objects.filter(run=run).count() == 30
    unavailable = Verdict.objects.filter(report=report).exclude(error="")
    assert set(unavailable.values_list("error", flat=True)) == {"source not available"}
    assert unavailable.count() == 6 and not unavailable.exclude(call=None).exists()
    nugget = Verdict.objects.get(report=report, target_kind="nugget", evidence=NUGGET_ROWS[1][0])
    assert (nugget.label, nugget.score, nugget.tokens_in) == ("partial_support", 1.0, 33)  # share of a 3-nugget call

    score = pipeline.score_report(run=run, report=report)
    m, expected = score["metrics"], expected_metrics()
    for key, value in expected.items():
        assert m[key] == pytest.approx(value), key
    assert m["claim_coverage_by_window"]["0"] == pytest.approx(0.75)  # 3 of the 4 determined claims
    assert m["claim_coverage_by_window"]["1"] == pytest.approx(1.0)
    assert m["document_importance"] == pytest.approx(0.4)
    assert (m["nuggets"], m["documents"], m["documents_graded"], m["important_references"]) == (4, 4, 3, 2)
    assert (m["citations"], m["citations_judged"], m["claim_sentences"]) == (4, 3, 5)
    assert m["geometric_mean_over"] == ["organization", "nugget_coverage", "relevance_rate", "reference_coverage",
                                        "document_importance", "citation_precision", "claim_coverage"]
    # judged: 2 + 4 + 3 + 3 + 20; failed: the text-less document and its 5 pairs
    assert (score["items_judged"], score["items_failed"]) == (32, 6)


@pytest.mark.django_db
@pytest.mark.parametrize(("prefer", "outcomes"), [
    ("A", ["win", "loss"]),  # position bias: each order is one comparison
    ("report", ["win", "win"]),
    ("exemplar", ["loss", "loss"]),
    ("tie", ["tie", "tie"]),
])
def test_organization_is_asked_in_both_orders_and_read_from_the_reports_side(case, prefer, outcomes):
    task, report = case
    config = judge_config(repeats=2)
    run = make_run(config)
    judge = StepJudge(config, prefer=prefer)
    pipeline.run_step(run=run, report=report, step=ORGANIZATION, judge=judge)
    orders = sorted((c.repeat, c.variables["report_a"] == REPORT_TEXT) for c in judge.calls)
    assert orders == [(0, False), (0, True), (1, False), (1, True)]
    assert all(EXEMPLAR in (c.variables["report_a"], c.variables["report_b"]) for c in judge.calls)
    stored = dict(Verdict.objects.filter(report=report, target_kind="organization", repeat=0)
                  .values_list("target_key", "label"))
    assert stored == {"report_first": outcomes[0], "report_second": outcomes[1]}
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["organization"] == pytest.approx(win_rate(outcomes * 2))
    assert m["organization_comparisons"] == 4


@pytest.mark.django_db
def test_a_second_run_of_the_same_configuration_makes_no_call(case):
    task, report = case
    config = judge_config()
    run_all(make_run(config), report, StepJudge(config))
    count = Verdict.objects.count()
    again = StepJudge(config)
    run2 = make_run(config)
    run_all(run2, report, again)
    assert again.calls == [] and Verdict.objects.count() == count
    m = pipeline.score_report(run=run2, report=report)["metrics"]
    assert m["geometric_mean"] == pytest.approx(expected_metrics()["geometric_mean"])


@pytest.mark.django_db
def test_reference_importance_is_judged_once_per_task_and_copied_to_other_reports(case):
    task, report = case
    config = judge_config()
    run = make_run(config)
    first = StepJudge(config)
    pipeline.run_step(run=run, report=report, step=IMPORTANCE, judge=first)
    assert first.steps_called() == {IMPORTANCE: 3}
    other = make_report(task, text=REPORT_TEXT.replace("Related Work", "Background"))
    second = StepJudge(config)
    pipeline.run_step(run=run, report=other, step=IMPORTANCE, judge=second)
    assert second.calls == []
    copies = Verdict.objects.filter(report=other, target_kind="gold_reference")
    originals = {v.target_id: v for v in Verdict.objects.filter(report=report, target_kind="gold_reference")}
    assert copies.count() == 3
    for copy in copies:
        assert copy.label == originals[copy.target_id].label
        assert copy.raw_response["copied_from"] == originals[copy.target_id].id
        assert (copy.call, copy.cost_usd, copy.tokens_in) == (None, 0.0, 0)
    # another configuration asks again
    third = StepJudge(judge_config(name="other-judge"))
    pipeline.run_step(run=make_run(third.config), report=other, step=IMPORTANCE, judge=third)
    assert third.steps_called() == {IMPORTANCE: 3}


@pytest.mark.django_db
def test_an_expert_settled_importance_is_used_without_asking(case):
    task, report = case
    gizmo = task.gold_references.get(bib_entry__title="Gizmo Networks")
    gizmo.important, gizmo.review_status = True, ReviewStatus.ACCEPTED  # the judge would say not important
    gizmo.save()
    config = judge_config()
    run = make_run(config)
    judge = StepJudge(config)
    run_all(run, report, judge)
    assert judge.steps_called()[IMPORTANCE] == 2
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["reference_coverage"] == pytest.approx(reference_coverage(["A", "C"], ["A", "B", "C"]))


@pytest.mark.django_db
def test_importance_labelled_by_the_release_is_used_without_asking(case):
    task, report = case
    task.extra = {Task.RELEASED_IMPORTANCE: "important_citations.csv"}
    task.save()
    # The release's labels differ from the judge's (A and B important, C not): A, C important here.
    flags = {"Widget Transformers: Accurate Prediction at Scale": True, "Doohickey Alignment": False,
             "Gizmo Networks": True}
    for ref in task.gold_references.select_related("bib_entry"):
        if ref.bib_entry.title in flags:
            ref.important = flags[ref.bib_entry.title]
            ref.save()
    # A reference a model proposed is not the release's label: it is still asked.
    doohickey = task.gold_references.get(bib_entry__title="Doohickey Alignment")
    doohickey.origin = Origin.LLM
    doohickey.save()
    config = judge_config()
    run = make_run(config)
    judge = StepJudge(config)
    run_all(run, report, judge)
    assert judge.steps_called()[IMPORTANCE] == 1  # Doohickey only; the judge says important
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["reference_coverage"] == pytest.approx(reference_coverage(["A", "C"], ["A", "B", "C"]))
    assert m["important_references"] == 3

    # Without the release's mark the imported flags are proposals again, and all are asked.
    task.extra = {}
    task.save()
    again = StepJudge(config)
    run2 = make_run(config)
    run_all(run2, report, again)
    assert again.steps_called()[IMPORTANCE] == 2  # A and C; Doohickey's verdict is reused
    m = pipeline.score_report(run=run2, report=report)["metrics"]
    assert m["important_references"] == 2  # the judge's labels: A and Doohickey important
    assert m["reference_coverage"] == pytest.approx(reference_coverage(["A", "C"], ["A", "B"]))


@pytest.mark.django_db
def test_per_item_errors_are_failed_items_never_zeros_and_are_retried(case):
    task, report = case
    config = judge_config(options={"nugget_batch_size": 2})
    run = make_run(config)

    def flaky(call):
        if call.step == NUGGETS and any(n["text"] == NUGGET_ROWS[0][0] for n in call.variables["nuggets"]):
            # a batch answer that leaves one nugget out and names one twice
            return JudgeAnswer(data={"labels": [{"id": call.variables["nuggets"][1]["id"], "label": "support"},
                                                {"id": call.variables["nuggets"][1]["id"], "label": "support"}]},
                               raw="{}")
        if call.step == RELEVANCE and call.variables["document"].startswith("Title: Gizmo"):
            return JudgeAnswer(data={"grade": 7}, raw='{"grade": 7}')
        if call.step == ORGANIZATION and call.variables["report_a"] == REPORT_TEXT:
            return JudgeAnswer(data=None, error="HTTP 500 after 5 attempts", raw="Internal Server Error")
        if call.step == CITATIONS and call.variables["sentence"].startswith("Gizmo networks"):
            return JudgeAnswer(data={"label": "maybe"}, raw='{"label": "maybe"}')
        return None

    run_all(run, report, StepJudge(config, respond=flaky))
    errors = Verdict.objects.filter(report=report).exclude(error="")
    kinds = sorted(errors.values_list("target_kind", "error"))
    assert kinds.count(("nugget", "malformed answer: nugget missing from the judge's answer")) == 1
    assert kinds.count(("nugget", "malformed answer: nugget answered 2 times")) == 1
    assert ("cited_document", "malformed answer: grade must be 0, 1 or 2, got 7") in kinds
    assert ("organization", "judge error: HTTP 500 after 5 attempts") in kinds
    assert kinds.count(("citation_pair", "malformed answer: unknown label 'maybe'")) == 4  # s3: 3 docs + query

    score = pipeline.score_report(run=run, report=report)
    m = score["metrics"]
    assert m["organization"] == pytest.approx(win_rate(["loss"]))  # only the report-second order
    assert m["nugget_coverage"] == pytest.approx(nugget_coverage(["not_support", "support"], ["okay", "okay"]))
    assert m["relevance_rate"] == pytest.approx(relevance_rate([2, 1]))
    assert m["citation_precision"] == pytest.approx(citation_precision([True, False]))  # s3's citation failed
    assert m["claim_coverage_by_window"]["0"] == pytest.approx(claim_coverage([[1, 0, 0], [0, 0, 0], [0, 0, 1]], 0))
    assert (score["items_judged"], score["items_failed"]) == (32 - 2 - 1 - 1 - 4, 6 + 2 + 1 + 1 + 4)

    retry = StepJudge(config)
    run_all(run, report, retry)
    # only what failed, and never the sources that are not stored
    assert retry.steps_called() == {ORGANIZATION: 1, NUGGETS: 1, RELEVANCE: 1, CITATIONS: 4}
    assert pipeline.score_report(run=run, report=report)["metrics"]["geometric_mean"] == pytest.approx(
        expected_metrics()["geometric_mean"])


@pytest.mark.django_db
def test_without_nuggets_the_metric_is_none_and_the_card_says_why(case):
    task, report = case
    task.nuggets.all().delete()
    config = judge_config()
    run = make_run(config)
    judge = StepJudge(config)
    pipeline.run_step(run=run, report=report, step=NUGGETS, judge=judge)
    assert judge.calls == []
    run_all(run, report, judge)
    score = pipeline.score_report(run=run, report=report)
    m = score["metrics"]
    assert m["nugget_coverage"] is None and m["nuggets"] == 0
    assert NO_NUGGETS in m["notes"]
    # a report's geometric mean is over all seven or none: never silently over fewer
    assert m["geometric_mean"] is None and m["geometric_mean_over"] == []
    system = pipeline.score_system(report_scores=[score])["metrics"]
    assert system["nugget_coverage"] is None and NO_NUGGETS in system["notes"]
    assert "nugget_coverage" not in system["geometric_mean_over"] and len(system["geometric_mean_over"]) == 6
    assert system["geometric_mean"] == pytest.approx(gmean([system[k] for k in system["geometric_mean_over"]]))
    # the released code scores a task without nuggets 0.0 in every mode (nuggetizer's calculate_nugget_scores)
    config.options = {**config.options, "variants": {"nugget_coverage": "upstream"}}
    config.save(update_fields=["options"])
    released = pipeline.score_report(run=run, report=report)["metrics"]
    assert [released[k] for k in ("nugget_coverage", "nugget_coverage_all", "nugget_coverage_strict_vital",
                                  "nugget_coverage_vital")] == [0.0, 0.0, 0.0, 0.0]
    assert released["geometric_mean"] == 0.0


@pytest.mark.django_db
def test_upstream_nugget_variant_scores_no_vital_nugget_as_zero(case):
    task, report = case
    task.nuggets.filter(importance="vital").update(importance="okay")
    config = judge_config(options={"variants": {"nugget_coverage": "upstream"}})
    run = make_run(config)
    run_all(run, report, StepJudge(config))
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["nugget_coverage_vital"] == 0.0 and m["nugget_coverage_strict_vital"] == 0.0
    assert m["nugget_coverage"] == pytest.approx(expected_metrics()["nugget_coverage"])  # strict_all unchanged
    config.options = {}
    config.save(update_fields=["options"])
    assert pipeline.score_report(run=run, report=report)["metrics"]["nugget_coverage_vital"] is None


@pytest.mark.django_db
def test_a_changed_report_is_judged_again_and_stale_verdicts_do_not_count(case):
    task, report = case
    config = judge_config()
    run = make_run(config)
    run_all(run, report, StepJudge(config))
    report.text = REPORT_TEXT.replace("in all settings", "in every setting")
    report.parsed = {}
    report.save()
    before = pipeline.score_report(run=run, report=report)
    assert before["metrics"]["organization"] is None and before["metrics"]["nugget_coverage"] is None
    again = StepJudge(config)
    run_all(run, report, again)
    # organization and nuggets see the whole text; only s0's pairs changed (4 docs, one without text, + query)
    assert again.steps_called() == {ORGANIZATION: 2, NUGGETS: 1, CITATIONS: 4}
    assert pipeline.score_report(run=run, report=report)["metrics"]["geometric_mean"] == pytest.approx(
        expected_metrics()["geometric_mean"])


@pytest.mark.django_db
def test_system_scores_average_reports_and_take_the_geometric_mean_of_the_means(case):
    task, report = case
    config = judge_config()
    run = make_run(config)
    other = make_report(task, text=REPORT_TEXT.replace("Related Work", "Background"), sources=[])
    for r in (report, other):
        run_all(run, r, StepJudge(config))
    scores = [pipeline.score_report(run=run, report=r) for r in (report, other)]
    system = pipeline.score_system(report_scores=scores)["metrics"]
    keys = ("organization", "nugget_coverage", "relevance_rate", "reference_coverage", "document_importance",
            "citation_precision", "claim_coverage")
    for key in keys:
        values = [s["metrics"][key] for s in scores if s["metrics"][key] is not None]
        assert system[key] == pytest.approx(sum(values) / len(values)), key
    assert system["geometric_mean"] == pytest.approx(gmean([system[k] for k in keys]))
    # Compared with a system that lacks document importance, both are over the six common metrics.
    lacking = {"metrics": {**system, "document_importance": None, "geometric_mean": None}}
    together = {1: {"metrics": dict(system)}, 2: lacking}
    pipeline.compare_systems(system_scores=together)
    common = [k for k in keys if k != "document_importance"]
    for score in together.values():
        assert score["metrics"]["geometric_mean_over"] == common
        assert score["metrics"]["geometric_mean"] == pytest.approx(gmean([score["metrics"][k] for k in common]))
    for w in map(str, range(6)):
        values = [s["metrics"]["claim_coverage_by_window"][w] for s in scores
                  if s["metrics"]["claim_coverage_by_window"][w] is not None]
        assert system["claim_coverage_by_window"][w] == pytest.approx(sum(values) / len(values))


@pytest.mark.django_db
def test_bad_window_options_are_refused_naming_the_option(case):
    task, report = case
    config = judge_config(options={"claim_max_window": "five"})
    with pytest.raises(ValueError, match="'claim_max_window' must be an integer >= 0; got 'five'"):
        pipeline.run_step(run=make_run(config), report=report, step=CITATIONS, judge=StepJudge(config))
    assert not Verdict.objects.exists()
    with pytest.raises(ValueError, match="no step 'deepscholar.nuggetize'"):
        pipeline.run_step(run=make_run(config), report=report, step="deepscholar.nuggetize", judge=StepJudge(config))


@pytest.mark.django_db(transaction=True)
def test_two_reports_of_a_task_judged_at_once_ask_each_reference_once(case):
    task, report = case
    other = make_report(task, text=REPORT_TEXT.replace("Related Work", "Background"))
    config = judge_config()
    run = make_run(config)
    judge = StepJudge(config, respond=lambda call: time.sleep(0.2))  # slow: the jobs overlap
    errors = []

    def job(r):
        try:
            pipeline.run_step(run=run, report=r, step=IMPORTANCE, judge=judge)
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=job, args=(r,)) for r in (report, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert judge.steps_called() == {IMPORTANCE: 3}
    assert Verdict.objects.filter(target_kind="gold_reference", error="").count() == 6
    assert Verdict.objects.filter(target_kind="gold_reference", call=None).count() == 3  # the copies


@pytest.mark.django_db
def test_upstream_variants_are_chosen_per_run_and_recorded_on_the_cards(case):
    task, report = case
    config = judge_config()
    run = make_run(config)
    run_all(run, report, StepJudge(config))
    paper = pipeline.score_report(run=run, report=report)["metrics"]
    assert paper["variants"] == {"relevance_rate": "paper", "citation_precision": "paper", "nugget_coverage": "paper"}
    assert paper["claim_sentences_uncited"] == 1  # s4 cites nothing
    config.options = {**config.options, "variants": {"citation_precision": "upstream"}}
    config.save(update_fields=["options"])
    released = pipeline.score_report(run=run, report=report)["metrics"]
    # cite_p.py: per-sentence precisions s0 1/1, s1 0/1, s3 1/1 and the uncited s4 as 0 (s2's only
    # document has no text: a failed item, left out)
    assert released["citation_precision"] == pytest.approx((1 + 0 + 1 + 0) / 4)
    assert paper["citation_precision"] == pytest.approx(2 / 3)
    config.options = {**config.options, "variants": {"relevance_rate": "upstream"}}
    config.save(update_fields=["options"])
    upstream = pipeline.score_report(run=run, report=report)["metrics"]
    assert upstream["variants"]["relevance_rate"] == "upstream"
    assert upstream["relevance_rate"] == pytest.approx(2 * paper["relevance_rate"])  # without the ½
    assert pipeline.score_system(report_scores=[{"metrics": upstream, "items_judged": 1, "items_failed": 0}])[
        "metrics"]["variants"]["relevance_rate"] == "upstream"
    config.options = {**config.options, "variants": {"relevance_rate": "code"}}
    config.save(update_fields=["options"])
    with pytest.raises(ValueError, match="variants.relevance_rate must be one of paper, upstream; got 'code'"):
        pipeline.score_report(run=run, report=report)
