"""DeepScholar-bench through the real OpenAI-compatible backend and the run services, against the
loopback ``FakeOpenAI`` server: batching, zero calls on a re-run, failing and malformed answers."""

from __future__ import annotations

import pytest

from benchmark.models import Protocol
from scoring.judges.openai_judge import OpenAIJudge
from scoring.metrics import nugget_coverage
from scoring.models import LLMCall, ScoreCard, Verdict
from scoring.pipelines import PIPELINES
from scoring.pipelines.deepscholar.nuggets import NUGGETS
from scoring.pipelines.deepscholar.relevance import RELEVANCE
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_create, run_start
from tests.factories import NuggetFactory, TaskFactory
from tests.scoring.pipelines.test_deepscholar import case, make_report, make_run  # noqa: F401 (fixture)
from tests.scoring.services.fakes import judge_config
from tests.support.fake_openai import (
    NUGGET_LABELS, FakeOpenAI, Reply, _STEP, deepscholar_responder, requested_items,
)

pipeline = PIPELINES["deepscholar"]


def steps_asked(server) -> list[str]:
    return [(_STEP.findall(r.prompt) or [""])[0] for r in server.chat_requests()]


def evaluate(config, task, system, *, every_job_done=True):
    run = run_start(run=run_create(protocol="deepscholar", judge_config=config, systems=[system], tasks=[task]),
                    enqueue=False)
    outcomes = [job_execute(job_id=pk, enqueue=False) for pk in run.jobs.order_by("pk").values_list("pk", flat=True)]
    if every_job_done:
        assert outcomes == ["done"] * 5
    return run_finalize(run=run)


@pytest.mark.django_db
def test_nuggets_are_asked_in_batches_and_labelled_per_nugget():
    task = TaskFactory(protocol=Protocol.DEEPSCHOLAR)
    nuggets = [NuggetFactory(task=task, text=f"Widget fact number {i}", position=i,
                             importance="vital" if i % 2 else "okay") for i in range(25)]
    report = make_report(task, sources=[])
    with FakeOpenAI() as server:
        server.responder = deepscholar_responder
        config = judge_config(backend="openai", base_url=server.base_url, model="loopback", max_retries=0,
                              options={"nugget_batch_size": 10})
        run = make_run(config)
        pipeline.run_step(run=run, report=report, step=NUGGETS, judge=OpenAIJudge(config))
        assert steps_asked(server) == [NUGGETS] * 3  # 10 + 10 + 5
        sizes = sorted(len(requested_items(r.last_message)) for r in server.chat_requests())
        assert sizes == [5, 10, 10]
    labels = dict(Verdict.objects.filter(report=report, target_kind="nugget").values_list("target_id", "label"))
    assert labels == {n.id: NUGGET_LABELS[n.id % 3] for n in nuggets}
    calls = LLMCall.objects.filter(run=run)
    assert calls.count() == 3
    assert sum(Verdict.objects.filter(report=report).values_list("tokens_in", flat=True)) == sum(
        calls.values_list("tokens_in", flat=True))
    m = pipeline.score_report(run=run, report=report)["metrics"]
    expected = [NUGGET_LABELS[n.id % 3] for n in nuggets]
    importance = [n.importance for n in nuggets]
    for mode, key in (("strict_all", "nugget_coverage"), ("all", "nugget_coverage_all"),
                      ("strict_vital", "nugget_coverage_strict_vital"), ("vital", "nugget_coverage_vital")):
        assert m[key] == pytest.approx(nugget_coverage(expected, importance, mode)), key


@pytest.mark.django_db
def test_a_full_run_then_a_rerun_of_the_same_configuration_makes_zero_requests(case):  # noqa: F811
    task, report = case
    with FakeOpenAI() as server:
        server.responder = deepscholar_responder
        config = judge_config(backend="openai", base_url=server.base_url, model="loopback", max_retries=0)
        first = evaluate(config, task, report.system)
        # the six claims whose cited source has no text cannot be judged: the scores are partial, and the run says so
        assert first.status == "finished_with_failures"
        assert "6 items have no verdict — source not available (×6 items)" in first.error
        # 2 orders, 1 nugget batch, 3 documents with text, 3 exemplar references, 20 pairs with a source
        assert len(server.chat_requests()) == 29
        card = ScoreCard.objects.get(run=first, report=report)
        assert (card.items_judged, card.items_failed) == (32, 6)
        assert card.metrics["organization"] == pytest.approx(0.5)  # the server always prefers section A
        assert set(card.metrics["claim_coverage_by_window"]) == {"0", "1", "2", "3", "4", "5"}

        second = evaluate(config, task, report.system)
        assert len(server.chat_requests()) == 29
        assert LLMCall.objects.filter(run=second).count() == 0
        assert ScoreCard.objects.get(run=second, report=report).metrics == card.metrics


@pytest.mark.django_db
def test_failing_and_malformed_answers_are_per_item_errors_and_the_run_finishes_with_failures(case):  # noqa: F811
    task, report = case

    def responder(request):
        if (_STEP.findall(request.prompt) or [""])[0] == RELEVANCE and "Gizmo Networks" in request.last_message:
            return Reply.text("{the grade is two")  # and again after the repair request
        return deepscholar_responder(request)

    with FakeOpenAI(fail_every=6) as server:
        server.responder = responder
        config = judge_config(backend="openai", base_url=server.base_url, model="loopback", max_retries=0,
                              max_concurrency=2)
        run = evaluate(config, task, report.system, every_job_done=False)
    assert run.status == "finished_with_failures"
    assert server.faults > 0
    assert run.jobs.filter(status="failed").exists()
    errors = Verdict.objects.filter(report=report).exclude(error="")
    messages = list(errors.values_list("error", flat=True))
    assert sum("500" in e for e in messages) > 0
    assert sum(e == "source not available" for e in messages) == 6
    gizmo = Verdict.objects.get(report=report, target_kind="cited_document", target_key="arxiv:2202.00002")
    assert gizmo.error.startswith("judge error") and gizmo.label == ""
    card = ScoreCard.objects.get(run=run, report=report)
    assert card.items_failed == errors.count()
    assert card.items_judged == Verdict.objects.filter(report=report, error="").count()
    assert card.items_judged + card.items_failed == 38
