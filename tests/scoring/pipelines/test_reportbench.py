"""ReportBench pipeline: references, cited statements, non-cited statements, with a scripted judge.

The hand-computed case (``case`` fixture): the task has 4 gold references (+ 1 rejected); the report
lists 3 references, [1] matching gold A by arXiv id, [2] matching gold B by title, [3] unknown.
→ precision 2/3, recall 2/4, F1 = 2·(2/3·1/2)/(2/3+1/2) = 4/7, tp 2, references 3.

Cited statements: s0 cites [1] (source: gold A's abstract) → consistent; s1 cites [2] (gold B has no
abstract; the Report.sources document with its title has a snippet) → consistent; s2 cites [3] (no
source text anywhere) → error "source not available", no call; s3 cites [1] → inconsistent.
→ match rate 2/3 over 3 judged statements, 1 failed.

Non-cited statements, repeats = 3: u0 c,c,c → correct; u1 c,i,i → incorrect; u2 c,c,i → correct.
→ factual accuracy 2/3.
"""

from __future__ import annotations

import logging
import string
from types import SimpleNamespace
import threading

import pytest

from benchmark.models import Protocol, ReviewStatus
from benchmark.parsing import parse_report
from scoring.judges import judge_for
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.models import EvaluationRun, LLMCall, Statement, Verdict
from scoring.pipelines import PIPELINES
from scoring.pipelines.report_sources import SourceResolver, parsed_report
from scoring.pipelines.reportbench import (
    CITED, CONSISTENCY, FACTUALITY, REFERENCE_KIND, REFERENCE_TITLES, REFERENCES, STEPS, UNCITED, reference_labels,
)
from scoring.pipelines.reportbench_academic import ACADEMIC, ACADEMIC_KIND
from tests.factories import BibEntryFactory, GoldReferenceFactory, ReportFactory, TaskFactory
from tests.scoring.services.fakes import judge_config

pipeline = PIPELINES["reportbench"]

REPORT_TEXT = """# Survey of Widgets

Widget transformers improve accuracy on the benchmark [1]. Sparse gadgets reduce memory use by half [2].
A new theory explains all results [3]. Widget transformers are slow [1].

The Widget-9 model was released in 2021 by Acme Labs with 7 billion parameters.

## References

[1] Widget Transformers for Accurate Prediction. https://arxiv.org/abs/2101.00001
[2] Sparse Gadgets Reduce Memory.
[3] A Theory of Everything Unrelated.
"""

CITED_STATEMENTS = [
    {"text": "Widget transformers improve accuracy on the benchmark.", "citations": ["[1]"]},
    {"text": "Sparse gadgets reduce memory use by half.", "citations": ["[2]"]},
    {"text": "A new theory explains all results.", "citations": ["[3]"]},
    {"text": "Widget transformers are slow.", "citations": ["[1]"]},
]
CONSISTENT = {CITED_STATEMENTS[0]["text"]: "consistent", CITED_STATEMENTS[1]["text"]: "consistent",
              CITED_STATEMENTS[3]["text"]: "inconsistent"}
UNCITED_STATEMENTS = ["The Widget-9 model was released in 2021.", "Acme Labs built Widget-9.", "Widget-9 has 7B parameters."]
FACTUAL = {  # statement -> label per repeat
    UNCITED_STATEMENTS[0]: ["correct", "correct", "correct"],
    UNCITED_STATEMENTS[1]: ["correct", "incorrect", "incorrect"],
    UNCITED_STATEMENTS[2]: ["correct", "correct", "incorrect"],
}


class StepJudge(Judge):
    """Answers the ReportBench steps from a script and counts its calls; ``respond(call)`` may
    replace an answer (return ``None`` to keep the scripted one)."""

    def __init__(self, config, *, respond=None, references=None) -> None:
        super().__init__(config)
        self.respond = respond
        self.references = references or []
        self.calls: list[JudgeCall] = []
        self._lock = threading.Lock()

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        with self._lock:
            self.calls.append(call)
        if self.respond is not None:
            custom = self.respond(call)
            if custom is not None:
                return custom
        return self.scripted(call)

    def scripted(self, call: JudgeCall) -> JudgeAnswer:
        v = call.variables
        data = {
            CITED: lambda: {"statements": [dict(s) for s in CITED_STATEMENTS]},
            UNCITED: lambda: {"statements": [{"text": t} for t in UNCITED_STATEMENTS]},
            CONSISTENCY: lambda: {"label": CONSISTENT[v.get("statement")], "rationale": "because"},
            FACTUALITY: lambda: {"label": FACTUAL[v.get("statement")][call.repeat], "rationale": "checked"},
            REFERENCE_TITLES: lambda: {"references": list(self.references)},
            # the upstream variant's filter: reference [3], "A Theory of Everything Unrelated", is no paper
            ACADEMIC: lambda: {"is_academic_paper": "Theory" not in v.get("title", ""), "reason": "scripted"},
        }[call.step]()
        return JudgeAnswer(data=data, raw="{}", model="scripted", tokens_in=100, tokens_out=10, latency_ms=5.0,
                           cost_usd=0.001)

    def steps_called(self) -> list[str]:
        return sorted(c.step for c in self.calls)


def make_report(task, text=REPORT_TEXT, sources=None):
    parsed = parse_report(text, format="markdown").to_dict()
    del parsed["text"]
    return ReportFactory(task=task, text=text, parsed=parsed, stats=parsed["stats"], sources=sources or [])


def make_run(config) -> EvaluationRun:
    return EvaluationRun.objects.create(protocol="reportbench", judge_config=config)


def run_all(run, report, judge) -> None:
    for step in pipeline.steps_for(report):
        pipeline.run_step(run=run, report=report, step=step, judge=judge)


def make_case():
    """The hand-built case of the module docstring: (task, report)."""
    task = TaskFactory(protocol=Protocol.REPORTBENCH)
    a = BibEntryFactory(title="Widget Transformers: Accurate Prediction at Scale", arxiv_id="2101.00001",
                        abstract="Widget transformers improve accuracy on the benchmark by ten points.")
    b = BibEntryFactory(title="Sparse Gadgets Reduce Memory", abstract="")
    c = BibEntryFactory(title="Gizmo Networks", doi="10.1000/gizmo")
    d = BibEntryFactory(title="Doohickey Alignment")
    rejected = BibEntryFactory(title="A Theory of Everything Unrelated")
    for position, bib in enumerate([a, b, c, d]):
        GoldReferenceFactory(task=task, bib_entry=bib, position=position)
    GoldReferenceFactory(task=task, bib_entry=rejected, position=9, review_status=ReviewStatus.REJECTED)
    sources = [{"title": "Sparse gadgets reduce memory", "url": "https://example.org/gadgets",
                "snippet": "Sparse gadgets reduce memory use by half in our experiments."}]
    report = make_report(task, sources=sources)
    return task, report


@pytest.fixture
def case():
    return make_case()


# --- pure parts ---------------------------------------------------------------------------------------------


def test_reference_labels_match_one_to_one_and_mark_duplicates():
    gold = [{"title": "Alpha Beta Gamma", "url": "", "arxiv_id": "2101.00001", "doi": ""},
            {"title": "Delta Epsilon", "url": "", "arxiv_id": "", "doi": ""}]
    predicted = [{"title": "x", "url": "https://arxiv.org/abs/2101.00001v2", "arxiv_id": "", "doi": ""},
                 {"title": "Unknown", "url": "", "arxiv_id": "", "doi": ""},
                 {"title": "Delta Epsilon", "url": "", "arxiv_id": "", "doi": ""},
                 {"title": "Delta  epsilon", "url": "", "arxiv_id": "", "doi": ""}]
    assert reference_labels(predicted, gold) == [("matched", 0), ("unmatched", None), ("matched", 1),
                                                 ("duplicate", None)]
    assert reference_labels(predicted, []) == [("unmatched", None)] * 3 + [("duplicate", None)]


@pytest.mark.django_db
def test_sources_resolve_from_bib_abstracts_and_report_sources_never_the_web(case):
    task, report = case
    resolver = SourceResolver(report)
    [first] = resolver.sources_for(["[1]"])
    assert (first["from"], first["text"]) == ("bib_entry", "Widget transformers improve accuracy on the benchmark by ten points.")
    [second] = resolver.sources_for(["[2]"])
    assert second["from"] == "report_sources" and second["text"].startswith("Sparse gadgets")
    assert resolver.sources_for(["[3]"]) == []
    assert len(resolver.sources_for(["[1-2]"])) == 2
    assert resolver.sources_for(["https://arxiv.org/abs/2101.00001"])[0]["from"] == "bib_entry"
    assert resolver.sources_for(["https://unknown.example.com/paper"]) == []


# --- judging and scoring --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_hand_computed_metrics_and_auditable_verdicts(case):
    task, report = case
    config = judge_config(repeats=3)
    run = make_run(config)
    judge = StepJudge(config)
    assert pipeline.steps_for(report) == STEPS

    run_all(run, report, judge)

    # no reference_titles call: the parse has a reference list; 1 + 3 consistency (s2 has no source) + 1 + 3·3
    assert judge.steps_called() == sorted([CITED] + [CONSISTENCY] * 3 + [UNCITED] + [FACTUALITY] * 9)
    refs = Verdict.objects.filter(report=report, target_kind="report_reference").order_by("target_key")
    assert [(v.target_key, v.label, v.step) for v in refs] == [
        ("0", "matched", REFERENCES), ("1", "matched", REFERENCES), ("2", "unmatched", REFERENCES)
    ]
    assert refs[0].raw_response["gold"]["arxiv_id"] == "2101.00001" and refs[0].call is None

    cited = list(Statement.objects.filter(report=report, kind="cited").order_by("position"))
    assert [s.text for s in cited] == [s["text"] for s in CITED_STATEMENTS]
    assert cited[0].citations == ["[1]"]
    unavailable = Verdict.objects.get(target_kind="cited_statement", target_id=cited[2].id)
    assert (unavailable.error, unavailable.label, unavailable.call) == ("source not available", "", None)
    first = Verdict.objects.get(target_kind="cited_statement", target_id=cited[0].id)
    assert (first.label, first.score, first.step) == ("consistent", 1.0, CONSISTENCY)
    assert first.raw_response["sources"][0]["from"] == "bib_entry" and first.call is not None
    assert Statement.objects.filter(report=report, kind="uncited").count() == 3
    assert Verdict.objects.filter(target_kind="uncited_statement").count() == 9
    assert LLMCall.objects.filter(run=run).count() == 14

    score = pipeline.score_report(run=run, report=report)
    m = score["metrics"]
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(0.5)
    assert m["f1"] == pytest.approx(4 / 7)
    assert (m["tp"], m["references"], m["gold_references"]) == (2, 3, 4)
    assert m["match_rate"] == pytest.approx(2 / 3)
    assert (m["cited_statements"], m["cited_judged"], m["cited_failed"]) == (4, 3, 1)
    assert m["factual_accuracy"] == pytest.approx(2 / 3)
    assert (m["uncited_statements"], m["uncited_judged"], m["uncited_failed"], m["uncited_ties"]) == (3, 3, 0, 0)
    assert (score["items_judged"], score["items_failed"]) == (3 + 3 + 3, 1)


@pytest.mark.django_db
def test_a_second_run_of_the_same_configuration_makes_no_call(case):
    task, report = case
    config = judge_config(repeats=3)
    run_all(make_run(config), report, StepJudge(config))
    counts = (Verdict.objects.count(), Statement.objects.count())
    second = StepJudge(config)
    run2 = make_run(config)
    run_all(run2, report, second)
    assert second.calls == []
    assert (Verdict.objects.count(), Statement.objects.count()) == counts
    m = pipeline.score_report(run=run2, report=report)["metrics"]
    assert (m["f1"], m["match_rate"], m["factual_accuracy"]) == pytest.approx((4 / 7, 2 / 3, 2 / 3))


@pytest.mark.django_db
def test_per_item_errors_are_failed_items_and_retried_in_place(case):
    task, report = case
    config = judge_config(repeats=3)
    run = make_run(config)
    bad_statement = CITED_STATEMENTS[3]["text"]

    def flaky(call):
        if call.step == CONSISTENCY and call.variables["statement"] == bad_statement:
            return JudgeAnswer(data={"label": "maybe", "rationale": ""}, raw='{"label": "maybe"}')
        if call.step == FACTUALITY and call.variables["statement"] == UNCITED_STATEMENTS[1] and call.repeat == 0:
            return JudgeAnswer(data=None, error="HTTP 503 after 5 attempts", raw="Service Unavailable")
        return None

    judge = StepJudge(config, respond=flaky)
    run_all(run, report, judge)
    errors = Verdict.objects.exclude(error="")
    assert sorted(errors.values_list("error", flat=True)) == sorted([
        "judge error: HTTP 503 after 5 attempts", "malformed answer: unknown label 'maybe'", "source not available",
    ])
    score = pipeline.score_report(run=run, report=report)
    m = score["metrics"]
    assert m["match_rate"] == pytest.approx(1.0)  # s0, s1 consistent; s2 unavailable, s3 malformed
    assert (m["cited_judged"], m["cited_failed"]) == (2, 2)
    # u1 has repeats i, i left: incorrect → accuracy still 2/3, every statement judged
    assert m["factual_accuracy"] == pytest.approx(2 / 3)
    assert (score["items_judged"], score["items_failed"]) == (3 + 2 + 3, 2)

    retry = StepJudge(config)
    run_all(run, report, retry)
    assert retry.steps_called() == [CONSISTENCY, FACTUALITY]  # only the failed items, no re-extraction
    assert errors.count() == 1  # source not available stays (nothing to fetch), without a call
    assert pipeline.score_report(run=run, report=report)["metrics"]["match_rate"] == pytest.approx(2 / 3)


@pytest.mark.django_db
def test_a_tie_between_finished_repeats_is_not_verified_or_excluded_by_option(case):
    task, report = case
    config = judge_config(repeats=2)
    run = make_run(config)
    # u0: c, c → correct; u1: c, i → tie; u2: c, c → correct
    run_all(run, report, StepJudge(config))
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert (m["uncited_judged"], m["uncited_ties"]) == (3, 1)
    assert m["factual_accuracy"] == pytest.approx(2 / 3)  # the paper and the released code: a tie is not verified
    assert m["variants"]["factual_accuracy_ties"] == "count_as_wrong"
    config.options = {**config.options, "variants": {"factual_accuracy_ties": "exclude"}}
    config.save(update_fields=["options"])
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["factual_accuracy"] == pytest.approx(2 / 2) and m["variants"]["factual_accuracy_ties"] == "exclude"


@pytest.mark.django_db
def test_a_failed_extraction_is_a_failed_item_and_metrics_are_none(case):
    task, report = case
    config = judge_config()
    run = make_run(config)

    def down(call):
        return JudgeAnswer(data=None, error="HTTP 500") if call.step in (CITED, UNCITED) else None

    judge = StepJudge(config, respond=down)
    run_all(run, report, judge)
    assert Statement.objects.count() == 0
    score = pipeline.score_report(run=run, report=report)
    assert (score["metrics"]["match_rate"], score["metrics"]["factual_accuracy"]) == (None, None)
    assert score["metrics"]["precision"] == pytest.approx(2 / 3)
    assert (score["items_judged"], score["items_failed"]) == (3, 2)
    retry = StepJudge(config)
    run_all(run, report, retry)
    assert retry.steps_called() == sorted([CITED, UNCITED] + [CONSISTENCY] * 3 + [FACTUALITY] * 3)


@pytest.mark.django_db
def test_reference_titles_are_asked_only_when_the_parse_found_no_reference_list(case):
    task, _ = case
    report = make_report(task, text="# Survey\n\nWidget transformers are accurate.\n")
    config = judge_config()
    run = make_run(config)
    judge = StepJudge(config, references=[
        {"title": "Sparse Gadgets Reduce Memory", "url": ""},
        {"title": "Something Else Entirely", "url": "https://example.org/else"},
    ])
    pipeline.run_step(run=run, report=report, step=REFERENCES, judge=judge)
    assert judge.steps_called() == [REFERENCE_TITLES]
    labels = list(Verdict.objects.filter(report=report, target_kind="report_reference")
                  .order_by("target_key").values_list("label", flat=True))
    assert labels == ["matched", "unmatched"]
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert (m["precision"], m["recall"], m["tp"], m["references"]) == (0.5, 0.25, 1, 2)
    again = StepJudge(config)
    pipeline.run_step(run=make_run(config), report=report, step=REFERENCES, judge=again)
    assert again.calls == []


@pytest.mark.django_db
def test_a_changed_report_text_is_extracted_and_judged_again(case):
    task, report = case
    config = judge_config()
    run = make_run(config)
    run_all(run, report, StepJudge(config))
    report.text = REPORT_TEXT.replace("Survey of Widgets", "A Survey of Widgets")
    report.save()
    again = StepJudge(config)
    run_all(run, report, again)
    assert again.steps_called() == sorted([CITED, UNCITED] + [CONSISTENCY] * 3 + [FACTUALITY] * 3)
    assert Statement.objects.count() == 7
    assert pipeline.score_report(run=run, report=report)["metrics"]["match_rate"] == pytest.approx(2 / 3)


@pytest.mark.django_db
def test_the_offline_judge_finishes_and_leaves_factuality_undefined(case):
    task, report = case
    config = judge_config(name="offline-judge")
    run = make_run(config)
    judge = judge_for(config)
    run_all(run, report, judge)
    score = pipeline.score_report(run=run, report=report)
    m = score["metrics"]
    assert m["factual_accuracy"] is None
    assert m["uncited_statements"] > 0 and m["uncited_failed"] == m["uncited_statements"]
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(0.5)
    assert m["cited_statements"] > 0
    assert score["items_failed"] >= m["uncited_statements"]
    errors = set(Verdict.objects.filter(target_kind="uncited_statement").values_list("error", flat=True))
    assert len(errors) == 1 and next(iter(errors)).startswith("judge error: not supported by the offline judge")
    assert pipeline.score_system(report_scores=[score])["metrics"]["factual_accuracy"] is None


@pytest.mark.django_db
def test_the_upstream_reference_match_is_chosen_per_run(case):
    task, report = case
    config = judge_config(options={"variants": {"references": "reportbench_upstream"}})
    run = make_run(config)
    run_all(run, report, StepJudge(config))
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["variants"]["references"] == "reportbench_upstream"

    def key(title):  # upstream: lowercase, ASCII punctuation dropped, spaces collapsed
        return " ".join("".join(ch for ch in title.lower() if ch not in string.punctuation).split())

    academic = {v.target_key: v.label for v in Verdict.objects.filter(report=report, target_kind=ACADEMIC_KIND)}
    assert academic == {"0": "academic", "1": "academic", "2": "not_academic"}
    predicted = {key(v.raw_response["reference"].get("title") or "")
                 for v in Verdict.objects.filter(report=report, target_kind=REFERENCE_KIND, error="")
                 if academic[v.target_key] == "academic"} - {""}
    gold = {key(t) for t in task.gold_references.exclude(review_status=ReviewStatus.REJECTED)
            .values_list("bib_entry__title", flat=True)}
    assert predicted and m["tp"] == len(predicted & gold) > 0
    assert m["precision"] == pytest.approx(len(predicted & gold) / len(predicted))
    assert m["recall"] == pytest.approx(len(predicted & gold) / len(gold))


def test_a_stored_parse_that_cannot_be_read_is_parsed_again_with_a_warning(caplog):
    text = "# Title\n\nWidgets improve accuracy [1].\n\n## References\n\n[1] A Widget Paper. https://arxiv.org/abs/2101.00001\n"
    report = SimpleNamespace(pk=7, text=text, format="markdown", parsed={"schema_version": 999})
    with caplog.at_level(logging.WARNING, logger="scoring.pipelines.report_sources"):
        parsed = parsed_report(report)
    assert parsed == parse_report(text, format="markdown")
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "report 7: its stored parse cannot be read" in record.getMessage()
    assert "schema_version 999" in record.getMessage()
