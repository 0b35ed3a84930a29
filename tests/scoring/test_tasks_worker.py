"""Runs executed by real Celery worker processes against the PostgreSQL test database.

The judge is the real OpenAI-compatible backend talking to a loopback ``FakeOpenAI`` server
in this process that answers after a delay, so a worker can be killed in the middle of a job.
The run is created and started by the real ``evaluate`` command in a subprocess, which
enqueues through the filesystem broker in ``tmp_path`` (the same one the workers read).
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from core.jobs import jobs_recover
from core.models import WorkerHeartbeat
from scoring.models import EvaluationRun, JudgeConfig, LLMCall, RunJob, ScoreCard, Verdict
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.support.fake_openai import FakeOpenAI, labelled_checklist_responder, requested_items
from tests.support.workers import worker_environment

ROOT = Path(settings.BASE_DIR)
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def asked(server: FakeOpenAI) -> list[set[tuple[str, int]]]:
    """Which (system, item id) pairs each request asked about, in arrival order (reports read "# Report by <system>")."""
    pairs = []
    for request in server.chat_requests():
        prompt = request.last_message
        system = re.search(r"# Report by (\S+)", prompt).group(1)
        pairs.append({(system, item["id"]) for item in requested_items(prompt)})
    return pairs


def start_worker(env: dict, hostname: str, log: Path) -> subprocess.Popen:
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=threads", "--concurrency=2",
         f"--hostname={hostname}", "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    wait_for(lambda: WorkerHeartbeat.objects.filter(hostname=hostname).exists(), 90, f"worker {hostname} to start", log,
             process=worker)
    return worker


def wait_for(condition, seconds: float, what: str, log: Path | None = None, process=None, step: float = 0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        if process is not None and process.poll() is not None:
            break
        time.sleep(step)
    output = log.read_text() if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{output[-5000:]}")


def stop(process: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def report_metrics(run) -> dict:
    return {
        (c.system.name, c.report.task.key): c.metrics
        for c in ScoreCard.objects.filter(run=run, report__isnull=False).select_related("system", "report__task")
    }


def test_a_worker_killed_mid_run_loses_nothing_and_a_new_worker_finishes_with_the_same_scores(tmp_path):
    tasks = [two_group_checklist().task for _ in range(4)]
    a, b = systems(2)
    for task in tasks:
        reports_for(task, [a, b])
    env = worker_environment(tmp_path)
    log = tmp_path / "workers.log"
    command_log = tmp_path / "evaluate.log"
    with FakeOpenAI(latency=0.5) as server:
        server.responder = labelled_checklist_responder
        config = judge_config(name="loopback-slow", backend="openai", base_url=server.base_url, model="loopback",
                              max_concurrency=1, max_retries=0)
        first = start_worker(env, "first@test", log)
        command = subprocess.Popen(
            [sys.executable, "manage.py", "evaluate", "--protocol", "deepsynth", "--judge", config.name,
             "--systems", "sys-a,sys-b", "--tasks", ",".join(t.key for t in tasks), "--wait", "--poll", "0.5"],
            cwd=ROOT, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=command_log.open("w"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        second = None
        try:
            wait_for(lambda: EvaluationRun.objects.exists(), 60, "the run", process=command)
            run = EvaluationRun.objects.get()

            def mid_job() -> bool:  # a job done, and a running one with its first group stored
                if not run.jobs.filter(status=RunJob.Status.DONE).exists():
                    return False
                running = run.jobs.filter(status=RunJob.Status.RUNNING).values_list("report_id", flat=True)
                return Verdict.objects.filter(report_id__in=list(running)).exists()

            wait_for(mid_job, 60, "a worker in the middle of a job", log, process=first, step=0.02)
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
            asked_before_kill = len(server.chat_requests())
            stored_at_kill = {v.pk: (v.label, v.updated_at) for v in Verdict.objects.all()}
            orphans = set(run.jobs.filter(status=RunJob.Status.RUNNING).values_list("pk", flat=True))
            done_at_kill = run.jobs.filter(status=RunJob.Status.DONE).count()
            assert orphans and 0 < done_at_kill < 8

            # the waiting command must notice the dead worker before a new one appears
            wait_for(lambda: "No Celery worker is alive" in command_log.read_text(), 60,
                     "the command to notice the dead worker", command_log, process=command)
            # As if the killed worker had taken every queued message before it died (the
            # filesystem broker deletes a message when it hands it out): the pending jobs'
            # messages are gone, and only the lost worker's recovery can bring them back.
            pending_at_kill = run.jobs.filter(status=RunJob.Status.PENDING).count()
            for message in (tmp_path / "broker" / "queue").iterdir():
                message.unlink()
            second = start_worker(env, "second@test", log)
            command.wait(timeout=120)
            out = command_log.read_text()
        finally:
            stop(command)
            for worker in (first, second):
                if worker is not None:
                    stop(worker)

        run.refresh_from_db()
        assert command.returncode == 0, out
        assert run.status == "finished", (run.error, log.read_text()[-3000:])
        assert "No Celery worker is alive" in out  # the waiting command noticed the dead worker
        assert f"run #{run.pk} finished" in out and "[##############################] 8/8 jobs" in out
        assert set(run.jobs.values_list("status", flat=True)) == {"done"}
        assert all(run.jobs.get(pk=pk).attempts == 2 for pk in orphans)  # reclaimed after the kill
        # (the orphan may have been put back to pending by a concurrent recovery first, and counted too)
        redelivered = [int(n) for n in re.findall(
            r"re-queued \d+ run job\(s\) left running by a dead worker, enqueued (\d+) waiting one\(s\) again",
            log.read_text())]
        assert pending_at_kill > 0 and max(redelivered, default=0) >= pending_at_kill

        # nothing finished was lost or redone, and nothing is duplicated
        verdicts = Verdict.objects.filter(judge_config=config)
        assert verdicts.count() == 8 * 9 and not verdicts.exclude(error="").exists()
        for pk, (label, updated_at) in stored_at_kill.items():
            assert verdicts.filter(pk=pk, label=label, updated_at=updated_at).exists()
        stored_items = set(Verdict.objects.filter(pk__in=stored_at_kill).values_list("report__system__name", "target_id"))
        asked_after = set().union(*asked(server)[asked_before_kill:])
        assert not asked_after & stored_items
        assert len(asked(server)) <= 16 + len(orphans)  # at most the calls in flight at the kill were repeated
        assert LLMCall.objects.filter(run=run).count() == 16

        # the same scores as an uninterrupted run (executed here, with a second configuration)
        reference_config = JudgeConfig.objects.create(
            name="loopback-reference", backend="openai", base_url=server.base_url, model="loopback", max_concurrency=4
        )
        call_command("evaluate", protocol="deepsynth", judge=reference_config.name, systems="sys-a,sys-b",
                     tasks=",".join(t.key for t in tasks), inline=True, stdout=open(os.devnull, "w"))
    reference = EvaluationRun.objects.get(judge_config=reference_config)
    assert reference.status == "finished"
    assert report_metrics(run) == report_metrics(reference)
    assert ScoreCard.objects.filter(run=run).count() == 8 + 2


def test_a_job_a_live_worker_executes_longer_than_three_heartbeats_is_not_recovered(tmp_path, settings):
    settings.WORKER_HEARTBEAT_SECONDS = 1  # as the worker's, so this process's recovery sees what its would
    task = two_group_checklist().task
    reports_for(task, systems(1))
    env = worker_environment(tmp_path)  # a heartbeat every second: stale after 3 s
    log = tmp_path / "worker.log"
    with FakeOpenAI(latency=3.0) as server:
        server.responder = labelled_checklist_responder
        config = judge_config(name="loopback-slower", backend="openai", base_url=server.base_url, model="loopback",
                              max_concurrency=1, max_retries=0)
        worker = start_worker(env, "slow@test", log)
        try:
            started = subprocess.run(
                [sys.executable, "manage.py", "evaluate", "--protocol", "deepsynth", "--judge", config.name,
                 "--systems", "sys-a", "--tasks", task.key], cwd=ROOT, env=env, capture_output=True, text=True,
                timeout=120)
            assert started.returncode == 0, started.stdout + started.stderr
            job = RunJob.objects.get()
            wait_for(lambda: RunJob.objects.filter(pk=job.pk, status="running").exists(), 60, "the job to start", log,
                     process=worker)
            time.sleep(4.5)  # longer than three beats, inside the job's two 3-second calls
            assert jobs_recover(lost=[])["runjob_requeued"] == 0
            wait_for(lambda: EvaluationRun.objects.filter(status="finished").exists(), 60, "the run to finish", log,
                     process=worker)
        finally:
            stop(worker)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == ("done", 1, "slow@test")
    assert len(server.chat_requests()) == 2  # executed once
