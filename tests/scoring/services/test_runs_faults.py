"""Runs through ``evaluate --inline`` against a real OpenAI-compatible server that misbehaves on purpose.

Each fault mode of ``tests.support.fake_openai`` is run end to end; the tests assert what the user is
told (run state, exit status, failure reasons grouped and counted, calls and HTTP requests) and where
the key goes (only to the URL it is bound to, never stored or shown).
"""

import json
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Sum

from benchmark.models import System
from scoring.models import EvaluationRun, JudgeConfig, LLMCall, RunJob, Verdict
from scoring.selectors import run_failure_reasons, runs_usage
from tests.annotation_factories import curator
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.support.fake_openai import FakeOpenAI, bearer_key, checklist_responder

KEY = "sk-test-BOUNDkey0123456789abcdef"
GLOBAL_KEY = "sk-test-GLOBALkey0123456789abcd"
FAST = {"backoff_base_seconds": 0.01, "backoff_max_seconds": 0.05, "call_deadline_seconds": 10}
CALLS = 12  # 3 tasks x 2 systems = 6 jobs, one call per checklist group (2 each)


@pytest.fixture
def tasks(db, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # the global key's endpoint: nothing listens there
    settings.OPENAI_API_KEY = GLOBAL_KEY
    checklists = [two_group_checklist() for _ in range(3)]
    a, b = systems(2)
    for checklist in checklists:
        reports_for(checklist.task, [a, b])
    return ",".join(c.task.key for c in checklists)


def evaluate(config: JudgeConfig, tasks: str) -> tuple[EvaluationRun, int, str]:
    """``evaluate --inline``: the run, the exit status the command would give, and its output."""
    out = StringIO()
    try:
        call_command("evaluate", "--protocol", "deepsynth", "--judge", config.name, "--systems", "sys-a,sys-b",
                     "--tasks", tasks, "--inline", stdout=out)
        code = 0
    except CommandError as exc:
        out.write(str(exc))
        code = exc.returncode
    return EvaluationRun.objects.get(judge_config=config), code, out.getvalue()


def bound_config(settings, server: FakeOpenAI, **overrides) -> JudgeConfig:
    settings.JUDGE_ENDPOINTS = {server.base_url: KEY}
    values = dict(name="loopback", backend="openai", base_url=server.base_url, model="loopback", max_retries=5,
                  max_concurrency=2, timeout_seconds=1.0, options=FAST)
    values.update(overrides)
    return judge_config(**values)


def stored_text() -> str:
    """Everything a run stores that could carry an endpoint's words."""
    parts = [*LLMCall.objects.values_list("error", flat=True), *RunJob.objects.values_list("error", flat=True),
             *EvaluationRun.objects.values_list("error", flat=True)]
    for error, raw in Verdict.objects.values_list("error", "raw_response"):
        parts += [error, json.dumps(raw)]
    return "\n".join(parts)


def requests_recorded(run) -> int:
    return LLMCall.objects.filter(run=run).aggregate(n=Sum("attempts"))["n"] or 0


def test_healthy_every_call_is_one_request_and_the_key_goes_only_to_its_endpoint(settings, tasks):
    with FakeOpenAI() as server:
        server.responder = checklist_responder
        run, code, out = evaluate(bound_config(settings, server), tasks)
        keys = {bearer_key(r) for r in server.requests}
    assert (run.status, code, run.error) == ("finished", 0, "")
    usage = runs_usage(run_ids=[run.pk])[run.pk]
    assert (usage["calls"], usage["requests"], usage["failed_calls"]) == (CALLS, CALLS, 0)
    assert len(server.requests) == CALLS and keys == {KEY}
    assert f"judge calls {CALLS} (0 failed), HTTP requests {CALLS}" in out
    assert run_failure_reasons(run=run) == []


def test_twenty_percent_mixed_faults_are_retried_and_the_requests_show_it(settings, tasks):
    more = [two_group_checklist() for _ in range(7)]  # 40 calls: enough for every fault kind at 20 %
    for checklist in more:
        reports_for(checklist.task, list(System.objects.filter(name__in=["sys-a", "sys-b"])))
    calls = CALLS + 7 * 2 * 2
    with FakeOpenAI(fault_rate=0.2, seed=3, fault_kinds=("429", "500", "503", "drop", "stall"),
                    stall_seconds=30, retry_after="1") as server:
        server.responder = checklist_responder
        started = time.monotonic()
        run, code, out = evaluate(bound_config(settings, server, timeout_seconds=0.5),
                                  ",".join([tasks, *(c.task.key for c in more)]))
        elapsed = time.monotonic() - started
        sent, faults, injected = len(server.requests), server.faults, dict(server.injected)
    assert (run.status, code) == ("finished", 0), out
    assert set(injected) == {"429", "500", "503", "drop", "stall"}, injected  # every kind happened
    usage = runs_usage(run_ids=[run.pk])[run.pk]
    assert (usage["calls"], usage["failed_calls"]) == (calls, 0)
    assert usage["requests"] == sent == calls + faults  # each fault cost exactly one more request
    # tokens are the server's own: 100 in / 20 out per answered request
    assert (LLMCall.objects.aggregate(i=Sum("tokens_in"), o=Sum("tokens_out")) == {"i": 100 * calls, "o": 20 * calls})
    assert elapsed < 40  # a 30 s stall held one attempt for the 0.5 s timeout only


def test_malformed_replies_fail_every_job_with_the_reason_counted(settings, tasks):
    with FakeOpenAI(mode="malformed") as server:
        run, code, out = evaluate(bound_config(settings, server), tasks)
        sent = len(server.requests)
    assert (run.status, code) == ("failed", 1)
    assert set(RunJob.objects.values_list("status", flat=True)) == {"failed"}
    usage = runs_usage(run_ids=[run.pk])[run.pk]
    assert (usage["calls"], usage["requests"], usage["failed_calls"]) == (CALLS, 2 * CALLS, CALLS)  # one repair each
    assert sent == 2 * CALLS
    items = [row for row in run_failure_reasons(run=run) if row["of"] == "items"]
    assert len(items) == 1 and items[0]["count"] == 6 * 9  # every counted item of every report
    assert items[0]["reason"].startswith("judge error: invalid answer after one repair: the reply is not valid JSON")
    assert "why things failed:" in out and "run #" in out


@pytest.mark.parametrize("mode, status", [("unauthorized", 401), ("forbidden", 403), ("no-model", 404)])
def test_an_auth_or_model_error_stops_the_run_at_once_with_one_message_and_no_key(settings, tasks, mode, status,
                                                                                     client):
    with FakeOpenAI(mode=mode) as server:
        run, code, out = evaluate(bound_config(settings, server), tasks)
        sent = len(server.requests)
        keys = {bearer_key(r) for r in server.requests}
    assert (run.status, code) == ("failed", 1)
    assert sent <= 2  # the first job's two calls were in flight together; nothing was sent after them
    assert requests_recorded(run) == sent  # the call still in flight at the stop is accounted for too
    assert keys == {KEY}
    assert run.error.startswith(f"stopped: the judge endpoint refused this configuration: HTTP {status}")
    assert RunJob.objects.filter(status="failed").count() == 6
    assert RunJob.objects.filter(error__startswith="not started: the run stopped: ").count() == 5
    # the key a 401 echoes is redacted wherever it is stored or shown
    assert KEY not in stored_text() + out
    if mode == "unauthorized":
        assert "Incorrect API key provided: [redacted]" in run.error
    client.force_login(curator())
    for url in ("/api/verdicts/", f"/api/verdicts/?run={run.pk}", f"/api/runs/{run.pk}/progress/",
                f"/runs/{run.pk}/"):
        response = client.get(url)
        assert response.status_code == 200 and KEY not in response.content.decode(), url


def test_a_600_second_retry_after_is_not_waited_for_and_every_job_says_why(settings, tasks):
    with FakeOpenAI(mode="retry-after-600") as server:
        started = time.monotonic()
        run, code, out = evaluate(bound_config(settings, server), tasks)
        elapsed = time.monotonic() - started
    assert (run.status, code) == ("failed", 1) and elapsed < 20
    usage = runs_usage(run_ids=[run.pk])[run.pk]
    assert (usage["calls"], usage["requests"], usage["failed_calls"]) == (CALLS, CALLS, CALLS)
    (items,) = [row for row in run_failure_reasons(run=run) if row["of"] == "items"]
    assert "asked to retry after 600 s, longer than max_retry_after_seconds=120" in items["reason"]
    assert items["count"] == 54


def test_a_server_that_stalls_every_call_is_bounded_by_the_call_deadline(settings, tasks):
    with FakeOpenAI(mode="stall", stall_seconds=30) as server:
        started = time.monotonic()
        config = bound_config(settings, server, timeout_seconds=0.4, max_retries=5,
                              options={**FAST, "call_deadline_seconds": 1.0})
        run, code, out = evaluate(config, tasks)
        elapsed = time.monotonic() - started
    assert (run.status, code) == ("failed", 1)
    # 12 calls, 2 at a time, each ended by its 1 s deadline (not 6 attempts x 0.4 s, nor 30 s)
    assert elapsed < 6 * 1.0 + 6
    for call in LLMCall.objects.filter(run=run):
        assert call.latency_ms < 1500 and not call.ok
        assert "deadline" in call.error or "timed out" in call.error
    assert runs_usage(run_ids=[run.pk])[run.pk]["failed_calls"] == CALLS


def test_a_run_deadline_stops_the_run_and_says_so(settings, tasks):
    with FakeOpenAI(latency=0.3) as server:
        server.responder = checklist_responder
        config = bound_config(settings, server, max_concurrency=1, options={**FAST, "run_deadline_seconds": 1.0})
        started = time.monotonic()
        run, code, out = evaluate(config, tasks)
        elapsed = time.monotonic() - started
    assert (run.status, code) == ("failed", 1)
    assert run.error.startswith("stopped: the run's deadline passed")
    assert elapsed < 1.0 + 2.0  # the call in flight at the deadline ended with it
    assert 1 <= LLMCall.objects.filter(run=run, ok=True).count() < CALLS


def test_a_configuration_naming_an_unbound_url_never_receives_a_key(settings, tasks):
    with FakeOpenAI() as allowed, FakeOpenAI() as rogue:
        rogue.responder = checklist_responder
        settings.JUDGE_ENDPOINTS = {allowed.base_url: KEY}
        # stored before endpoints were bound (the API and admin refuse it now): it still gets no key
        config = judge_config(name="rogue", backend="openai", base_url=rogue.base_url, model="m", options=FAST)
        run, code, out = evaluate(config, tasks)
        keys = {bearer_key(r) for r in rogue.requests}
    assert (run.status, code) == ("finished", 0)
    assert len(keys) == 1 and not keys & {KEY, GLOBAL_KEY} and not allowed.requests


def test_failed_calls_end_finished_with_failures_shown_on_the_page_with_resume(settings, tasks, client):
    with FakeOpenAI(fail_every=4) as server:  # requests 4, 8, 12: one call in four fails for good
        server.responder = checklist_responder
        run, code, out = evaluate(bound_config(settings, server, max_retries=0), tasks)
    assert (run.status, code) == ("finished_with_failures", 3)
    assert f"run #{run.pk} finished with failures" in out
    failed_jobs = RunJob.objects.filter(status="failed").count()
    usage = runs_usage(run_ids=[run.pk])[run.pk]
    assert (usage["calls"], usage["requests"], usage["failed_calls"]) == (CALLS, CALLS, 3)
    assert run.error.startswith(f"{failed_jobs} of 6 jobs failed, ")
    client.force_login(curator())
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Finished with failures" in page and 'id="resume-run"' in page
    assert f'<dd id="fig-requests">{CALLS}</dd>' in page
    assert f'{CALLS} <span class="error">(3 failed)</span>' in page
    assert 'id="failure-reasons"' in page and "injected fault" in page
    progress = client.get(f"/api/runs/{run.pk}/progress/").json()
    assert progress["status"] == "finished_with_failures" and progress["failed"] == failed_jobs
    assert progress["usage"]["requests"] == CALLS and progress["usage"]["failed_calls"] == 3
    items = [row for row in progress["failure_reasons"] if row["of"] == "items"]
    assert sum(row["count"] for row in items) == Verdict.objects.exclude(error="").count() > 0


def test_one_malformed_label_fails_only_its_item_and_keeps_the_groups_others(settings, tasks):
    bad = {}

    def responder(request):
        reply = checklist_responder(request)
        content = json.loads(reply.body["choices"][0]["message"]["content"])
        first = content["verdicts"][0]
        bad.setdefault(first["id"], True)
        first["label"] = "partly"  # the first item of every group, in the answer and in the repaired answer
        reply.body["choices"][0]["message"]["content"] = json.dumps(content)
        return reply

    with FakeOpenAI() as server:
        server.responder = responder
        run, code, out = evaluate(bound_config(settings, server), tasks)
        sent = len(server.requests)
    assert (run.status, code) == ("finished_with_failures", 3)
    assert sent == 2 * CALLS  # every group asked once and repaired once
    errors = Verdict.objects.exclude(error="")
    assert set(errors.values_list("error", flat=True)) == {"malformed answer: unknown label 'partly'"}
    assert errors.count() == 12 and Verdict.objects.filter(error="").count() == 6 * 9 - 12
    assert set(RunJob.objects.values_list("status", flat=True)) == {"done"}  # every call was answered
    assert run.error == ("12 items have no verdict — malformed answer: unknown label 'partly' (×12 items); "
                         "resume the run to retry only these")


def test_a_run_deadline_that_is_not_a_number_is_refused_before_the_run_starts(settings, tasks):
    config = judge_config(name="bad-deadline", backend="openai", model="m", options={"run_deadline_seconds": "soon"})
    with pytest.raises(CommandError, match="cannot run: options: run_deadline_seconds must be a number from 0 to 31622400; got 'soon'"):
        call_command("evaluate", "--protocol", "deepsynth", "--judge", config.name, "--systems", "sys-a,sys-b",
                     "--tasks", tasks, "--inline", stdout=StringIO())
    assert not EvaluationRun.objects.filter(status="running").exists()
