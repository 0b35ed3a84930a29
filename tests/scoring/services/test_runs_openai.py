"""Runs against the real OpenAI-compatible backend, talking to the loopback ``FakeOpenAI`` server."""

import pytest

from scoring.judges.openai_judge import OpenAIJudge
from scoring.models import LLMCall, ScoreCard, Verdict
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_create, run_resume, run_start
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.support.fake_openai import FakeOpenAI, label_for, labelled_checklist_responder, requested_items


@pytest.mark.django_db
def test_an_endpoint_failing_one_request_in_five_fails_those_jobs_and_resume_retries_only_their_items():
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
        job_ids = list(run.jobs.order_by("pk").values_list("pk", flat=True))
        outcomes = [job_execute(job_id=pk, judge=judge, enqueue=False) for pk in job_ids]
        # two calls per job (one per group), one at a time per job: requests 5, 10, 15, 20 are jobs 3, 5, 8, 10
        assert outcomes == ["done", "done", "failed", "done", "failed", "done", "done", "failed", "done", "failed"]
        run = run_finalize(run=run)
        assert run.status == "finished_with_failures"
        assert run.error.startswith("4 of 10 jobs failed, ")
        assert "injected fault" in run.error and "resume the run" in run.error
        assert (len(server.requests), server.faults) == (20, 4)
        calls = LLMCall.objects.filter(run=run)
        assert calls.count() == 20 and calls.filter(ok=False).count() == 4
        errors = Verdict.objects.exclude(error="")
        assert errors.exists() and all("500" in e for e in errors.values_list("error", flat=True))
        assert not errors.filter(call__ok=True).exists()
        failed_items = errors.count()
        failed_ids = sorted(errors.values_list("target_id", flat=True))
        cards = ScoreCard.objects.filter(run=run, report__isnull=False)
        assert sum(c.items_failed for c in cards) == failed_items
        assert sum(c.items_judged for c in cards) == 90 - failed_items
        for card in cards:
            m = card.metrics
            assert m["correct"] + m["omitted"] + m["incorrect"] == card.items_judged
        # the labels are the server's, untouched by the pipeline
        for verdict in Verdict.objects.filter(error="")[:20]:
            assert verdict.label == label_for(verdict.target_id)

        run = run_resume(run=run, enqueue=False)
        retried = list(run.jobs.filter(status="pending").order_by("pk").values_list("pk", flat=True))
        assert retried == [job_ids[i] for i in (2, 4, 7, 9)]
        asked_before = len(server.requests)
        assert [job_execute(job_id=pk, judge=judge, enqueue=False) for pk in retried] == ["done"] * 4
        # only the four failed groups were asked again, each about exactly its failed items
        again = server.chat_requests()[asked_before:]
        assert len(again) == 4
        assert sorted(item["id"] for r in again for item in requested_items(r.last_message)) == failed_ids
    run = run_finalize(run=run)
    assert (run.status, run.error) == ("finished", "")
    assert not Verdict.objects.exclude(error="").exists()
