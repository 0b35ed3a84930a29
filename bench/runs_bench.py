"""Evaluation-run throughput: DeepSynth reports through ``job_execute`` against a slow endpoint.

100 reports (25 systems × the 4 real DeepSynth-Eval example tasks, 49 checklist groups,
so 1,225 judge calls) are evaluated by the real OpenAI-compatible backend talking to a
loopback ``FakeOpenAI`` server (a process of its own) that answers after 200 ms. The judge
configuration allows 8 calls in flight; jobs run on 8 threads, as a Celery worker with
``--pool=threads --concurrency=8`` would, and the backend's per-endpoint limit keeps the
calls in flight at 8. The ideal is calls × latency / concurrency; the target is 1.2 ×
that. Each repetition uses a new judge configuration, so no verdict is reused.
"""

from __future__ import annotations

import itertools

from bench import bench_dataset
from bench.jobs import execute_jobs

LATENCY = 0.2
CONCURRENCY = 8
JOB_THREADS = 8
SYSTEMS = 25
_counter = itertools.count()


def _reports():
    """The example tasks and 25 systems' reports on each (the example report, lightly varied)."""
    from benchmark.importers.catalogue import run_import
    from benchmark.models import Report, System, Task
    from benchmark.services.reports import ReportInput, reports_submit

    tasks = list(Task.objects.filter(protocol="deepsynth", source="deepsynth").order_by("key"))
    if not tasks:
        run_import("deepsynth", bench_dataset("deepsynth-eval/example_gen_result.jsonl"))
        tasks = list(Task.objects.filter(protocol="deepsynth", source="deepsynth").order_by("key"))
    systems = [System.objects.get_or_create(name=f"bench-system-{i:02d}", version="")[0] for i in range(SYSTEMS)]
    if Report.objects.filter(system__in=systems, task__in=tasks).count() < len(systems) * len(tasks):
        examples = {r.task_id: r.text for r in Report.objects.filter(task__in=tasks, system__name="deepsynth-example")}
        reports_submit(items=[
            ReportInput(task=task, system=system, text=f"{examples.get(task.pk, '')}\n\n(written by {system.name})")
            for task in tasks for system in systems
        ])
    return tasks, systems


def _throughput_setup():
    from scoring.judges.openai_judge import OpenAIJudge
    from scoring.models import JudgeConfig
    from scoring.pipelines.deepsynth import checklist_for_scoring
    from scoring.services.runs import run_create, run_finalize, run_start
    from tests.support.fake_openai import FakeOpenAIProcess

    tasks, systems = _reports()
    calls = sum(len(checklist_for_scoring(task)) for task in tasks) * len(systems)
    server = FakeOpenAIProcess(latency=LATENCY, responder="labelled-checklist").start()
    base_url = server.base_url
    config = JudgeConfig.objects.create(
        name=f"bench-loopback-{next(_counter)}-{base_url.rsplit(':', 1)[-1]}", backend="openai",
        base_url=base_url, model="loopback", max_concurrency=CONCURRENCY, max_retries=0,
    )
    run = run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=systems, tasks=tasks),
                    enqueue=False)
    judge = OpenAIJudge(config)
    ideal = calls * LATENCY / CONCURRENCY

    def execute() -> None:
        try:
            execute_jobs(run, judge, threads=JOB_THREADS)
            finished = run_finalize(run=run)
            stats = server.stats()
        finally:
            server.stop()
        assert finished.status == "finished", finished.error
        assert stats["requests"] == calls, (stats, calls)
        assert stats["max_in_flight"] <= CONCURRENCY, stats
        print(f"    {calls} calls, ideal {ideal:.1f} s, at most {stats['max_in_flight']} in flight")

    return execute


def _ideal_target() -> float:
    """1.2 × the ideal for the 1,225 calls of the example tasks (49 groups × 25 systems)."""
    return 1.2 * 49 * SYSTEMS * LATENCY / CONCURRENCY


BENCHMARKS = [
    ("100 DeepSynth reports, 200 ms endpoint, 8 in flight (1.2× ideal)", _ideal_target(), _throughput_setup),
]
