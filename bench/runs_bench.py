"""Evaluation-run throughput: DeepSynth reports through ``job_execute`` against a slow endpoint.

100 reports (25 systems × the 4 real DeepSynth-Eval example tasks, 49 checklist groups,
so 1,225 judge calls) are evaluated by the real OpenAI-compatible backend talking to a
loopback ``FakeOpenAI`` server (a process of its own) that answers after 200 ms. The judge
configuration allows 8 calls in flight; jobs run on 8 threads, as a Celery worker with
``--pool=threads --concurrency=8`` would, and the backend's per-endpoint limit keeps the
calls in flight at 8. The ideal is calls × latency / concurrency; the target is 1.2 ×
that. Each repetition uses a new judge configuration, so no verdict is reused.

``FIGURES``: the same reports in batch mode against online (``batch_against_online``): calls,
batches, wall time, cost at the same prices, and verdicts.
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
    from scoring.services.run_finish import run_finalize
    from scoring.services.runs import run_create, run_start
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


# --- batch mode against online ------------------------------------------------------------------

PRICE_IN, PRICE_OUT = 2.5, 10.0  # USD per million tokens (a gpt-4o-class price list); batch: less batch_discount


def _run_usage(run) -> tuple[int, float, int]:
    """(judge calls, cost in USD, verdicts) of a run, from its ``LLMCall`` rows and its verdicts."""
    from django.db.models import Count, Sum

    from scoring.models import LLMCall
    from scoring.selectors import run_verdicts

    usage = LLMCall.objects.filter(run=run).aggregate(n=Count("pk"), cost=Sum("cost_usd"))
    return usage["n"], float(usage["cost"] or 0.0), run_verdicts(run=run).exclude(error="").count()


def batch_against_online(*, quick: bool = False) -> list[dict]:
    """The same reports evaluated online (``FakeOpenAIProcess``, 200 ms, 8 in flight) and in batch mode
    (``tests.support.fake_batch.FakeBatchOpenAI``, each batch ending as soon as it is polled): calls,
    wall time, cost at the same prices (the batch run's less ``batch_discount`` 0.5) and verdicts.
    The batch run's wall time is this deployment's own work — executing each job twice (registering
    its calls, then reading the answers), submitting, polling and reading the files back — without
    the provider's turnaround (up to 24 h)."""
    import time

    from scoring.judges.openai_judge import OpenAIJudge
    from scoring.models import JudgeConfig
    from scoring.services.batches import run_batches_poll
    from scoring.services.run_finish import run_finalize
    from scoring.services.runs import run_create, run_start
    from tests.support.fake_batch import FakeBatchOpenAI
    from tests.support.fake_openai import FakeOpenAIProcess, labelled_checklist_responder

    tasks, systems = _reports()
    systems = systems[:5] if quick else systems
    tag = f"{next(_counter)}-{time.time_ns()}"

    def config(name: str, base_url: str, **extra) -> JudgeConfig:
        return JudgeConfig.objects.create(name=f"bench-{name}-{tag}", backend="openai", base_url=base_url,
                                          model="loopback", max_concurrency=CONCURRENCY, max_retries=0,
                                          price_input_per_million=PRICE_IN, price_output_per_million=PRICE_OUT, **extra)

    def started(judge_config):
        return run_start(run=run_create(protocol="deepsynth", judge_config=judge_config, systems=systems,
                                        tasks=tasks), enqueue=False)

    online_server = FakeOpenAIProcess(latency=LATENCY, responder="labelled-checklist").start()
    try:
        online_config = config("online", online_server.base_url)
        online = started(online_config)
        began = time.perf_counter()
        execute_jobs(online, OpenAIJudge(online_config), threads=JOB_THREADS)
        online = run_finalize(run=online)
        online_seconds = time.perf_counter() - began
    finally:
        online_server.stop()
    assert online.status == "finished", online.error

    batch_server = FakeBatchOpenAI(auto_complete_after=0.0).start()
    batch_server.responder = labelled_checklist_responder
    try:
        batch = started(config("batch", batch_server.base_url, batch=True, batch_discount=0.5))
        began = time.perf_counter()
        execute_jobs(batch, None, threads=JOB_THREADS)  # no judge given: the configuration's batch judge
        while batch.jobs.filter(status="waiting").exists():
            if run_batches_poll(run=batch, enqueue=False)["released"]:
                execute_jobs(batch, None, threads=JOB_THREADS)
        batch = run_finalize(run=batch)
        batch_seconds = time.perf_counter() - began
    finally:
        batch_server.stop()
    assert batch.status == "finished", batch.error
    online_calls, online_cost, online_verdicts = _run_usage(online)
    batch_calls, batch_cost, batch_verdicts = _run_usage(batch)
    lines = sum(len(lines) for lines in batch_server.batch_lines.values())
    assert lines == batch_calls == online_calls, (lines, batch_calls, online_calls)
    label = f"{len(systems) * len(tasks)} DeepSynth reports"
    print(f"    {label}: online {online_calls} calls in {online_seconds:.1f} s, ${online_cost:.4f}; batch "
          f"{batch_calls} calls in {len(batch_server.batches)} batch(es), {batch_seconds:.1f} s, ${batch_cost:.4f}")
    return [
        {"figure": f"batch run, {label}: judge calls", "value": batch_calls, "target": None, "unit": "calls",
         "better": "lower"},
        {"figure": "batch run: batches submitted", "value": len(batch_server.batches), "target": 1,
         "unit": "batches", "better": "lower"},
        {"figure": "batch run: wall time without the provider's turnaround", "value": batch_seconds,
         "target": None, "unit": "s", "better": "lower"},
        {"figure": f"online run: wall time, {LATENCY * 1000:.0f} ms endpoint, {CONCURRENCY} in flight",
         "value": online_seconds, "target": None, "unit": "s", "better": "lower"},
        {"figure": "batch run cost / online run cost (batch_discount 0.5)", "value": round(batch_cost / online_cost, 6),
         "target": 0.5, "unit": "ratio", "better": "lower"},
        {"figure": "batch run verdicts − online run verdicts", "value": batch_verdicts - online_verdicts,
         "target": 0, "unit": "verdicts", "better": "lower"},
    ]


FIGURES = [("batch run against online run", batch_against_online)]
