"""Judge runs on real Celery worker processes against the loopback OpenAI-compatible server: the
concurrency limit holds across two workers, and an endpoint refusing the key stops the run and
``evaluate --wait`` exits non-zero, with the key bound by the workers' environment only."""

import json
import subprocess
import sys

import pytest

from core.models import WorkerHeartbeat
from scoring.models import EvaluationRun, LLMCall, RunJob, Verdict
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.scoring.test_tasks_worker import ROOT, stop, wait_for
from tests.support.fake_openai import FakeOpenAI, bearer_key, labelled_checklist_responder
from tests.support.workers import worker_environment

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
KEY = "sk-test-WORKERkey0123456789abcdef"


def start_worker(env: dict, hostname: str, log, *, loglevel: str = "WARNING") -> subprocess.Popen:
    """A threads-pool worker (2 job threads); at INFO its log names every task it ran."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=threads", "--concurrency=2",
         f"--hostname={hostname}", f"--loglevel={loglevel}", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    wait_for(lambda: WorkerHeartbeat.objects.filter(hostname=hostname).exists(), 90, f"worker {hostname} to start", log,
             process=worker)
    return worker


def bound_environment(tmp_path, server: FakeOpenAI) -> dict:
    return {**worker_environment(tmp_path), "JUDGE_ENDPOINTS": f"{server.base_url}=JUDGE_TEST_KEY",
            "JUDGE_TEST_KEY": KEY, "OPENAI_API_KEY": "", "PYTHONUNBUFFERED": "1"}


def evaluate_and_wait(env: dict, config, tasks, log) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "evaluate", "--protocol", "deepsynth", "--judge", config.name,
         "--systems", "sys-a,sys-b", "--tasks", ",".join(t.key for t in tasks), "--wait", "--poll", "0.3"],
        cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, timeout=240,
    )


def make_tasks(n: int) -> list:
    tasks = [two_group_checklist().task for _ in range(n)]
    a, b = systems(2)
    for task in tasks:
        reports_for(task, [a, b])
    return tasks


def test_max_concurrency_holds_across_two_worker_processes(tmp_path):
    tasks = make_tasks(6)  # 12 jobs, 24 calls
    with FakeOpenAI(latency=0.25) as server:
        server.responder = labelled_checklist_responder
        env = bound_environment(tmp_path, server)
        config = judge_config(name="shared-limit", backend="openai", base_url=server.base_url, model="loopback",
                              max_concurrency=3, max_retries=0)
        logs = [tmp_path / "w1.log", tmp_path / "w2.log"]
        workers = []
        try:
            # without a limit shared by the processes, each worker would put up to 3 calls in flight
            workers = [start_worker(env, f"w{i}@limit", logs[i - 1], loglevel="INFO") for i in (1, 2)]
            result = evaluate_and_wait(env, config, tasks, tmp_path / "evaluate.log")
        finally:
            for worker in workers:
                stop(worker)
        stats = server.stats()
    out = (tmp_path / "evaluate.log").read_text()
    run = EvaluationRun.objects.get()
    assert result.returncode == 0, out
    assert run.status == "finished", run.error
    assert stats["requests"] == 24 and stats["keys"] == [KEY]
    assert stats["max_in_flight"] == 3  # reached, never exceeded, whatever the number of workers
    for log in logs:  # both workers executed jobs
        assert "succeeded" in log.read_text(), log.read_text()[-2000:]


def test_an_endpoint_refusing_the_key_stops_the_run_on_a_worker_and_evaluate_exits_1(tmp_path):
    tasks = make_tasks(3)
    with FakeOpenAI(mode="unauthorized") as server:
        env = bound_environment(tmp_path, server)
        config = judge_config(name="refused", backend="openai", base_url=server.base_url, model="loopback",
                              max_concurrency=2, max_retries=3)
        worker = start_worker(env, "w@refused", tmp_path / "worker.log")
        try:
            result = evaluate_and_wait(env, config, tasks, tmp_path / "evaluate.log")
        finally:
            stop(worker)
        sent, keys = len(server.requests), {bearer_key(r) for r in server.requests}
    out = (tmp_path / "evaluate.log").read_text()
    run = EvaluationRun.objects.get()
    assert result.returncode == 1, out
    assert run.status == "failed"
    assert run.error.startswith("stopped: the judge endpoint refused this configuration: HTTP 401")
    assert "[redacted]" in run.error and f"run #{run.pk} failed" in out
    # the worker runs 2 jobs at once, each with up to 2 calls in flight: nothing after those
    assert sent <= 4 and keys == {KEY}
    assert set(RunJob.objects.values_list("status", flat=True)) == {"failed"}
    stored = json.dumps([list(LLMCall.objects.values_list("error", flat=True)),
                         list(Verdict.objects.values_list("error", "raw_response")),
                         list(RunJob.objects.values_list("error", flat=True)), run.error])
    assert KEY not in stored and KEY not in out


@pytest.mark.parametrize("server_options, status, code", [
    ({"fault_rate": 0.2, "seed": 5, "fault_kinds": ("429", "500", "503", "drop", "stall"), "stall_seconds": 30},
     "finished", 0),
    ({"mode": "malformed"}, "failed", 1),
    ({"mode": "retry-after-600"}, "failed", 1),
])
def test_other_fault_modes_on_a_worker_end_in_the_state_evaluate_reports(tmp_path, server_options, status, code):
    tasks = make_tasks(2)  # 4 jobs, 8 calls
    with FakeOpenAI(**server_options) as server:
        server.responder = labelled_checklist_responder
        env = bound_environment(tmp_path, server)
        config = judge_config(name="modes", backend="openai", base_url=server.base_url, model="loopback",
                              max_concurrency=2, max_retries=5, timeout_seconds=0.5,
                              options={"backoff_base_seconds": 0.01, "backoff_max_seconds": 0.05})
        worker = start_worker(env, "w@modes", tmp_path / "worker.log")
        try:
            result = evaluate_and_wait(env, config, tasks, tmp_path / "evaluate.log")
        finally:
            stop(worker)
        sent = len(server.requests)
    out = (tmp_path / "evaluate.log").read_text()
    run = EvaluationRun.objects.get()
    assert (run.status, result.returncode) == (status, code), out
    calls = LLMCall.objects.filter(run=run)
    assert calls.count() == 8 and sum(calls.values_list("attempts", flat=True)) == sent
    assert f"judge calls 8 ({calls.filter(ok=False).count()} failed), HTTP requests {sent}" in out
    if status == "failed":
        assert "why things failed:" in out and set(RunJob.objects.values_list("status", flat=True)) == {"failed"}
