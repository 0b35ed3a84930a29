"""Batch mode of runs (``scoring.services.batches``) against ``FakeBatchOpenAI``, a loopback server of the
Batch API written for these tests (files, batches, batch state, file content; chat completions for the
online side of a comparison)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from scoring.models import BatchCall, EvaluationRun, JudgeBatch, LLMCall, RunJob, Verdict
from scoring.services import batches
from scoring.services.batches import run_batches_poll, runs_recovered
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_cancel, run_create, run_resume, run_start
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.support.fake_batch import FakeBatchOpenAI
from tests.support.fake_openai import Reply, Request, bearer_key, label_for, labelled_checklist_responder, requested_items

KEY = "sk-batch-test-key-0123456789"
VERDICTS = 54  # 6 reports × 9 checklist items
PRICES = dict(price_input_per_million=2.0, price_output_per_million=8.0)


@pytest.fixture
def server():
    with FakeBatchOpenAI() as fake:
        fake.responder = labelled_checklist_responder
        with override_settings(JUDGE_ENDPOINTS={fake.base_url: KEY}):
            yield fake


@pytest.fixture
def material():
    tasks = [two_group_checklist().task for _ in range(3)]
    pair = systems(2)
    for task in tasks:
        reports_for(task, pair)
    return {"tasks": tasks, "systems": pair}


def started(material, config) -> EvaluationRun:
    return run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=material["systems"],
                                    tasks=material["tasks"]), enqueue=False)


def execute_pending(run) -> list[str]:
    ids = run.jobs.filter(status="pending").order_by("pk").values_list("pk", flat=True)
    return [job_execute(job_id=pk, enqueue=False) for pk in list(ids)]


def batch_config(server, name="batch-judge", **extra):
    return judge_config(name=name, backend="openai", base_url=server.base_url, model="loopback", batch=True,
                        max_retries=0, **PRICES, **extra)


def verdict_rows(config) -> list[tuple]:
    return sorted(Verdict.objects.filter(judge_config=config).values_list("report_id", "target_id", "label", "error"))


@pytest.mark.django_db
def test_a_batch_run_stores_the_verdicts_an_online_run_stores_at_the_batch_price(server, material):
    online = judge_config(name="online-judge", backend="openai", base_url=server.base_url, model="loopback",
                          max_retries=0, **PRICES)
    online_run = started(material, online)
    assert set(execute_pending(online_run)) == {"done"}
    online_run = run_finalize(run=online_run)
    online_requests = server.chat_requests()
    assert online_run.status == "finished" and len(online_requests) == 12  # 6 reports × 2 groups

    config = batch_config(server)
    run = started(material, config)
    assert set(execute_pending(run)) == {"waiting"}
    assert len(server.chat_requests()) == 12  # nothing online
    assert not Verdict.objects.filter(judge_config=config).exists()
    assert run_batches_poll(run=run, enqueue=False)["submitted"] == 1
    batch = JudgeBatch.objects.get(run=run)
    assert batch.status == "in_progress" and batch.batch_id in server.batches and batch.requests == 12
    lines = server.batch_lines[batch.batch_id]
    # custom_id is the call key: the online calls' request hashes
    assert sorted(line["custom_id"] for line in lines) == sorted(
        LLMCall.objects.filter(run=online_run).values_list("request_hash", flat=True))
    assert {line["url"] for line in lines} == {"/v1/chat/completions"}
    assert {r.path for r in server.requests if r.path != "/v1/chat/completions"} >= {"/v1/files", "/v1/batches"}

    assert run_batches_poll(run=run, enqueue=False)["released"] == []  # still in progress
    server.finish()
    polled = run_batches_poll(run=run, enqueue=False)
    assert len(polled["released"]) == 6
    assert set(execute_pending(run)) == {"done"}
    run = run_finalize(run=run)
    assert (run.status, run.error) == ("finished", "")
    # the same verdicts, label for label
    assert [row[1:] for row in verdict_rows(config)] == [row[1:] for row in verdict_rows(online)]
    assert len(verdict_rows(config)) == VERDICTS
    for verdict in Verdict.objects.filter(judge_config=config)[:10]:
        assert verdict.label == label_for(verdict.target_id)
    # costs: the same tokens at half the price
    online_cost = sum(LLMCall.objects.filter(run=online_run).values_list("cost_usd", flat=True))
    batch_calls = LLMCall.objects.filter(run=run)
    assert batch_calls.count() == 12 and not batch_calls.filter(ok=False).exists()
    assert sum(batch_calls.values_list("cost_usd", flat=True)) == pytest.approx(online_cost * 0.5)
    # the key went with every request, to this endpoint only
    assert {bearer_key(r) for r in server.requests} == {KEY}


@pytest.mark.django_db
def test_a_reply_that_needs_repair_is_repaired_by_a_follow_up_batch(server, material):
    def first_reply_malformed(request):
        messages = request.body["messages"]
        if len(messages) <= 2:  # system + prompt: the first round
            return Reply.text("Sure! the verdicts follow.")
        prompt = next(m for m in messages if m["role"] == "user")  # the repair round answers the prompt
        return labelled_checklist_responder(Request(request.path, {"messages": [prompt]}, {}, 0.0, 0))

    server.responder = first_reply_malformed
    config = batch_config(server)
    run = started(material, config)
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    server.finish()
    released = run_batches_poll(run=run, enqueue=False)["released"]
    assert len(released) == 6
    assert set(execute_pending(run)) == {"waiting"}  # each call asks its repair round
    assert BatchCall.objects.filter(run=run, custom_id__endswith=":repair", status="queued").count() == 12
    run_batches_poll(run=run, enqueue=False)
    repair_batch = JudgeBatch.objects.filter(run=run).order_by("-pk").first()
    assert all(line["custom_id"].endswith(":repair") for line in server.batch_lines[repair_batch.batch_id])
    server.finish()
    assert len(run_batches_poll(run=run, enqueue=False)["released"]) == 6
    assert set(execute_pending(run)) == {"done"}
    run = run_finalize(run=run)
    assert run.status == "finished"
    assert Verdict.objects.filter(judge_config=config, error="").count() == VERDICTS
    assert JudgeBatch.objects.filter(run=run).count() == 2


@pytest.mark.django_db
def test_an_expired_batch_fails_the_calls_it_did_not_answer_and_resume_sends_only_those(server, material):
    config = batch_config(server)
    run = started(material, config)
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    first = JudgeBatch.objects.get(run=run)
    server.finish(first.batch_id, status="expired", answer_first=8)
    assert len(run_batches_poll(run=run, enqueue=False)["released"]) == 6
    first.refresh_from_db()
    assert first.status == "expired"
    failed_ids = set(BatchCall.objects.filter(run=run, status="failed").values_list("custom_id", flat=True))
    assert len(failed_ids) == 4
    outcomes = execute_pending(run)
    assert outcomes.count("failed") >= 2 and "waiting" not in outcomes
    run = run_finalize(run=run)
    assert run.status == "finished_with_failures"
    errors = set(Verdict.objects.filter(judge_config=config).exclude(error="").values_list("error", flat=True))
    assert errors and all("expired" in e or "not executed" in e for e in errors)

    run = run_resume(run=run, enqueue=False)
    assert set(execute_pending(run)) == {"waiting"}
    run_batches_poll(run=run, enqueue=False)
    second = JudgeBatch.objects.filter(run=run).exclude(pk=first.pk).get()
    assert {line["custom_id"] for line in server.batch_lines[second.batch_id]} == failed_ids
    server.finish(second.batch_id)
    run_batches_poll(run=run, enqueue=False)
    assert set(execute_pending(run)) == {"done"}
    run = run_finalize(run=run)
    assert (run.status, run.error) == ("finished", "")
    assert Verdict.objects.filter(judge_config=config, error="").count() == VERDICTS


@pytest.mark.django_db
def test_a_failed_batch_fails_every_call_with_its_reason(server, material):
    run = started(material, batch_config(server))
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    server.finish(status="failed")
    run_batches_poll(run=run, enqueue=False)
    assert set(execute_pending(run)) == {"failed"}
    run = run_finalize(run=run)
    assert run.status == "failed"
    assert "the batch failed" in run.error and "scripted failure" in run.error


@pytest.mark.django_db
def test_cancelling_the_run_cancels_its_batch(server, material, django_capture_on_commit_callbacks, monkeypatch):
    polls = []
    monkeypatch.setattr("scoring.tasks.poll_batches.delay", polls.append)
    run = started(material, batch_config(server))
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    with django_capture_on_commit_callbacks(execute=True):
        run = run_cancel(run=run)
    assert polls == [run.pk]  # a worker cancels the batch at once
    assert set(run.jobs.values_list("status", flat=True)) == {"cancelled"}
    assert run_batches_poll(run=run)["cancelled"] == 1
    batch = JudgeBatch.objects.get(run=run)
    assert batch.status == "cancelled" and server.batches[batch.batch_id]["status"] == "cancelled"
    assert not BatchCall.objects.filter(run=run, status__in=("queued", "submitted")).exists()


@pytest.mark.django_db
def test_a_submitter_killed_after_creating_the_batch_has_it_adopted_not_paid_twice(server, material, monkeypatch):
    run = started(material, batch_config(server))
    execute_pending(run)
    taken = batches._calls_take(run)
    real_save = JudgeBatch.save

    def killed(self, *args, **kwargs):
        if self.batch_id:
            raise KeyboardInterrupt("kill -9")  # after batches.create, before the id is stored
        return real_save(self, *args, **kwargs)

    monkeypatch.setattr(JudgeBatch, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        batches._batch_send(batches.make_client(run.judge_config), taken, fresh=True)
    monkeypatch.setattr(JudgeBatch, "save", real_save)
    taken.refresh_from_db()
    assert taken.status == "submitting" and taken.batch_id == "" and len(server.batches) == 1
    run_batches_poll(run=run, enqueue=False)  # the next poller
    taken.refresh_from_db()
    assert taken.status == "in_progress" and taken.batch_id in server.batches and len(server.batches) == 1
    server.finish()
    assert len(run_batches_poll(run=run, enqueue=False)["released"]) == 6


@pytest.mark.django_db
def test_answered_calls_are_read_again_not_resubmitted(server, material):
    config = batch_config(server)
    run = started(material, config)
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    server.finish()
    run_batches_poll(run=run, enqueue=False)
    execute_pending(run)
    run_finalize(run=run)
    Verdict.objects.filter(judge_config=config).delete()  # make the next run ask every call again
    again = started(material, config)
    assert set(execute_pending(again)) == {"done"}
    assert len(server.batches) == 1 and not BatchCall.objects.filter(run=again).exists()
    assert run_finalize(run=again).status == "finished"
    assert Verdict.objects.filter(judge_config=config, error="").count() == VERDICTS


@pytest.mark.django_db
def test_recovery_enqueues_a_poll_only_while_there_is_batch_work(server, material, monkeypatch,
                                                                  django_capture_on_commit_callbacks):
    polls = []
    monkeypatch.setattr("scoring.tasks.poll_batches.delay", polls.append)
    with django_capture_on_commit_callbacks(execute=True):
        assert "batch_polls" not in runs_recovered()
    run = started(material, batch_config(server))
    execute_pending(run)
    with django_capture_on_commit_callbacks(execute=True):
        assert runs_recovered()["batch_polls"] == 1
    assert polls == [None]


@pytest.mark.django_db
def test_the_last_job_to_wait_asks_for_a_poll_at_once(server, material, monkeypatch,
                                                     django_capture_on_commit_callbacks):
    polls = []
    monkeypatch.setattr("scoring.tasks.poll_batches.delay", polls.append)
    monkeypatch.setattr("scoring.tasks.finalize_run.delay", lambda run_id: None)
    run = started(material, batch_config(server))
    ids = list(run.jobs.order_by("pk").values_list("pk", flat=True))
    for pk in ids:
        with django_capture_on_commit_callbacks(execute=True):
            assert job_execute(job_id=pk) == "waiting"
    assert polls == [run.pk]


@pytest.mark.django_db
def test_evaluate_inline_polls_the_batches_in_its_own_process(server, material):
    server.auto_complete_after = 0.0
    config = batch_config(server)
    out = StringIO()
    call_command("evaluate", "--protocol", "deepsynth", "--judge", config.name, "--systems",
                 ",".join(s.name for s in material["systems"]), "--tasks", ",".join(t.key for t in material["tasks"]),
                 "--inline", "--poll", "0.05", stdout=out)
    run = EvaluationRun.objects.get()
    assert run.status == "finished", out.getvalue()
    assert len(server.batches) == 1 and not server.chat_requests()
    assert Verdict.objects.filter(judge_config=config, error="").count() == VERDICTS
    assert not RunJob.objects.filter(status="waiting").exists()


@pytest.mark.django_db
def test_a_batch_line_refused_401_halts_the_run_like_an_online_call(server, material):
    server.responder = lambda request: Reply.error(401, "Incorrect API key provided")
    run = started(material, batch_config(server))
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    server.finish()
    run_batches_poll(run=run, enqueue=False)
    execute_pending(run)
    run.refresh_from_db()
    assert run.status == "failed" and "HTTP 401" in run.error


@pytest.mark.django_db
def test_batch_lines_carry_what_an_online_request_carries(server, material):
    run = started(material, batch_config(server, temperature=0.3, options={"max_tokens": 300}))
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    (batch_id,) = server.batches
    body = server.batch_lines[batch_id][0]["body"]
    assert body["model"] == "loopback" and body["temperature"] == 0.3 and body["max_tokens"] == 300
    assert body["response_format"] == {"type": "json_object"}
    assert requested_items(body["messages"][-1]["content"])
    assert json.dumps(body)  # stored as JSON


@pytest.mark.django_db
def test_the_run_page_shows_the_waiting_jobs_the_batches_and_the_batch_price(server, material, client):
    from django.urls import reverse

    from tests.annotation_factories import curator

    run = started(material, batch_config(server, batch_discount=0.5))
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    batch = JudgeBatch.objects.get(run=run)
    client.force_login(curator("cur"))
    page = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="fig-waiting">6<' in page and 'id="run-batches"' in page and batch.batch_id in page
    assert "12 in a batch" in page and "batch prices, −50%" in page
    assert KEY not in page


@pytest.mark.django_db
def test_calls_beyond_one_batch_s_limit_go_out_in_several_batches(server, material, monkeypatch):
    monkeypatch.setattr(batches, "BATCH_MAX_LINES", 5)
    config = batch_config(server)
    run = started(material, config)
    execute_pending(run)
    assert run_batches_poll(run=run, enqueue=False)["submitted"] == 3
    assert sorted(len(lines) for lines in server.batch_lines.values()) == [2, 5, 5]
    server.finish()
    assert len(run_batches_poll(run=run, enqueue=False)["released"]) == 6
    assert set(execute_pending(run)) == {"done"}
    assert run_finalize(run=run).status == "finished"
    assert Verdict.objects.filter(judge_config=config, error="").count() == VERDICTS


@pytest.mark.django_db
def test_lines_refused_for_json_mode_are_asked_again_without_it_as_online(server, material, monkeypatch):
    remembered = set()  # this test's own memory of endpoints without JSON mode
    monkeypatch.setattr("scoring.judges.openai_judge._NO_JSON_MODE", remembered)
    monkeypatch.setattr("scoring.judges.batch._NO_JSON_MODE", remembered)

    def no_json_mode(request):
        if "response_format" in request.body:
            return Reply.error(400, "response_format is not supported by this model")
        return labelled_checklist_responder(request)

    server.responder = no_json_mode
    config = batch_config(server)
    run = started(material, config)
    execute_pending(run)
    run_batches_poll(run=run, enqueue=False)
    server.finish()
    run_batches_poll(run=run, enqueue=False)
    assert set(execute_pending(run)) == {"waiting"}
    run_batches_poll(run=run, enqueue=False)
    plain = JudgeBatch.objects.filter(run=run).order_by("-pk").first()
    lines = server.batch_lines[plain.batch_id]
    assert len(lines) == 12 and all(line["custom_id"].endswith(":plain") for line in lines)
    assert not any("response_format" in line["body"] for line in lines)
    server.finish()
    run_batches_poll(run=run, enqueue=False)
    assert set(execute_pending(run)) == {"done"}
    assert run_finalize(run=run).status == "finished"
    assert Verdict.objects.filter(judge_config=config, error="").count() == VERDICTS
    assert remembered == {server.base_url}
