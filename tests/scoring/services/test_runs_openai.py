"""Runs against the real OpenAI-compatible backend, talking to the loopback ``FakeOpenAI`` server."""

import pytest

from scoring.judges.openai_judge import OpenAIJudge
from scoring.models import LLMCall, ScoreCard, Verdict
from scoring.services.runs import job_execute, run_create, run_finalize, run_start
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.support.fake_openai import FakeOpenAI, label_for, labelled_checklist_responder


@pytest.mark.django_db
def test_an_endpoint_failing_one_request_in_five_records_failures_per_item_and_finishes():
    tasks = [two_group_checklist().task for _ in range(5)]
    a, b = systems(2)
    for task in tasks:
        reports_for(task, [a, b])
    with FakeOpenAI(fail_every=5) as server:
        server.responder = labelled_checklist_responder
        config = judge_config(backend="openai", base_url=server.base_url, model="loopback", max_retries=0,
                              max_concurrency=2)
        run = run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=[a, b], tasks=tasks),
                        enqueue=False)
        judge = OpenAIJudge(config)
        outcomes = [job_execute(job_id=pk, judge=judge, enqueue=False) for pk in run.jobs.values_list("pk", flat=True)]
    assert outcomes == ["done"] * 10
    run = run_finalize(run=run)
    assert run.status == "finished"
    assert (len(server.requests), server.faults) == (20, 4)
    calls = LLMCall.objects.filter(run=run)
    assert calls.count() == 20 and calls.filter(ok=False).count() == 4
    errors = Verdict.objects.exclude(error="")
    assert errors.exists() and all("500" in e for e in errors.values_list("error", flat=True))
    assert not errors.filter(call__ok=True).exists()
    cards = ScoreCard.objects.filter(run=run, report__isnull=False)
    assert sum(c.items_failed for c in cards) == errors.count()
    assert sum(c.items_judged for c in cards) == 90 - errors.count()
    for card in cards:
        m = card.metrics
        assert m["correct"] + m["omitted"] + m["incorrect"] == card.items_judged
    # the labels are the server's, untouched by the pipeline
    for verdict in Verdict.objects.filter(error="")[:20]:
        assert verdict.label == label_for(verdict.target_id)
