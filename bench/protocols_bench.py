"""LLM calls, tokens and wall time per report for every protocol, against a slow loopback endpoint.

For each of the five protocols, real released data is imported through the importers
(DeepSynth-Eval's 4 example tasks and reports, ReportBench tasks with reports written from
their gold bibliographies, DeepScholar-bench rows 0 and 1 with the systems' outputs,
SurveyLens' luciferase systems, and the same surveys as SurveyScope tasks), then evaluated
by the run services (``run_create`` / ``run_start`` / ``job_execute`` on 8 threads /
``run_finalize``) with the real ``openai`` judge backend talking to a ``FakeOpenAIProcess``
that answers after 200 ms, 8 calls in flight. Every figure comes from the stored
``LLMCall`` rows of the run (calls, tokens) and the server's request count (which also
counts SurveyLens' embedding requests, as they wait out the latency too). Wall time is
printed against the ideal, requests × latency / concurrency (target 1.2×). A second run of
the same judge configuration must make no request at all: every verdict, statement and
embedding is reused.

Each measurement uses a new judge configuration (and embedding model name), so nothing from
an earlier bench invocation on the same database is reused by the first run.
"""

from __future__ import annotations

import itertools
import time
import uuid
from dataclasses import dataclass

from bench import bench_dataset
from bench.jobs import execute_jobs

LATENCY = 0.2
CONCURRENCY = 8
JOB_THREADS = 8
IDEAL_TARGET = 1.2
REPORTBENCH_TASKS = 2
REPORTBENCH_SYSTEMS = ("bench-rb-full", "bench-rb-half")
REPORTBENCH_CITED = 8  # gold references a report cites (the "half" system cites every other one)
DEEPSYNTH_VARIANTS = ("deepsynth-example", "bench-ds-variant")
# SurveyLens Table 2: aspects per component with their weights (as tests/scoring/pipelines/test_surveys_offline.py)
SURVEYLENS_TABLE_2 = {
    "outline": [("Substantive Integrity", 0.5), ("Structural Coherence", 0.3), ("Formal Precision", 0.2)],
    "content": [("Scope and Relevance", 0.2), ("Structural Coherence", 0.2), ("Synthesis and Integration", 0.3),
                ("Critical Insight and Novelty", 0.3)],
    "reference": [("Scholarly Communication", 0.1), ("Bibliometric Comprehensiveness", 0.4),
                  ("Evidential Integrity", 0.3), ("Referential Pertinence and Compliance", 0.2)],
}
_counter = itertools.count()


# --- the reports of each protocol (imported once per database, then reused) -------------------------------------


def _deepsynth_reports():
    from benchmark.importers.catalogue import run_import
    from benchmark.models import Report, System, Task
    from benchmark.services.reports import ReportInput, reports_submit

    if not Task.objects.filter(protocol="deepsynth", source="deepsynth").exists():
        run_import("deepsynth", bench_dataset("deepsynth-eval/example_gen_result.jsonl"))
    tasks = list(Task.objects.filter(protocol="deepsynth", source="deepsynth").order_by("key"))
    examples = {r.task_id: r.text for r in Report.objects.filter(task__in=tasks, system__name=DEEPSYNTH_VARIANTS[0])}
    # a second system: the example report with a different closing line, so its verdicts are not reused
    variant = System.objects.get_or_create(name=DEEPSYNTH_VARIANTS[1], version="")[0]
    reports_submit(items=[ReportInput(task=t, system=variant, text=f"{examples[t.pk]}\n\n(revised by {variant.name})")
                          for t in tasks if t.pk in examples])
    return Report.objects.filter(task__in=tasks, system__name__in=DEEPSYNTH_VARIANTS)


def reportbench_report(task, *, step: int) -> tuple[str, list[dict]]:
    """A markdown report built from the task's gold bibliography — one cited sentence for each of
    REPORTBENCH_CITED references (every ``step``-th), an uncited sentence with figures, a numbered
    reference list — and the documents it "retrieved" (``Report.sources``): each cited work's abstract,
    or its bibliographic record where the release has no abstract, so every cited statement is judged."""
    from benchmark.models import GoldReference

    golds = list(GoldReference.objects.filter(task=task).exclude(review_status="rejected")
                 .select_related("bib_entry").order_by("position")[:REPORTBENCH_CITED * step:step])
    body, references, sources = [], [], []
    for number, gold in enumerate(golds, 1):
        entry = gold.bib_entry
        url = f"https://arxiv.org/abs/{entry.arxiv_id}" if entry.arxiv_id else (entry.url or "")
        body.append(f"The work titled {entry.title} reports results that bear on this survey [{number}].")
        references.append(f"[{number}] {entry.title}. {url}".rstrip())
        record = ". ".join(str(part) for part in (entry.title, entry.authors, entry.venue, entry.year) if part)
        sources.append({"title": entry.title, "url": url, "snippet": entry.abstract or record})
    text = "\n\n".join([
        f"# {task.title}",
        " ".join(body),
        f"The field grew quickly: by {2015 + len(golds)} more than {10 * len(golds)} papers had appeared.",
        "## References",
        "\n".join(references),
    ]) + "\n"
    return text, sources


def _reportbench_reports():
    from benchmark.importers.catalogue import run_import
    from benchmark.models import Report, System, Task
    from benchmark.services.demo import REPORTBENCH, reportbench_demo_keys
    from benchmark.services.reports import ReportInput, reports_submit

    keys = reportbench_demo_keys(bench_dataset(REPORTBENCH), n=REPORTBENCH_TASKS)
    if Task.objects.filter(protocol="reportbench", key__in=keys).count() < len(keys):
        run_import("reportbench", bench_dataset(REPORTBENCH), keys=keys)
    tasks = list(Task.objects.filter(protocol="reportbench", key__in=keys).order_by("key"))
    systems = [System.objects.get_or_create(name=name, version="")[0] for name in REPORTBENCH_SYSTEMS]
    items = []
    for task in tasks:
        for step, system in enumerate(systems, 1):
            text, sources = reportbench_report(task, step=step)
            items.append(ReportInput(task=task, system=system, text=text, sources=sources))
    reports_submit(items=items)
    return Report.objects.filter(task__in=tasks, system__in=systems)


def _deepscholar_reports():
    from benchmark.importers.catalogue import run_import
    from benchmark.models import Report, Task

    if not Report.objects.filter(task__protocol="deepscholar").exists():
        run_import("deepscholar", bench_dataset("deepscholar-bench"))
    return Report.objects.filter(task__protocol="deepscholar", task__in=Task.objects.filter(protocol="deepscholar"))


def _surveylens_task():
    from benchmark.importers.catalogue import run_import
    from benchmark.models import RubricCriterion, Task

    if not Task.objects.filter(protocol="surveylens", key="luciferase").exists():
        run_import("surveylens", bench_dataset("surveylens/luciferase"))
    task = Task.objects.get(protocol="surveylens", key="luciferase")
    for component, aspects in SURVEYLENS_TABLE_2.items():
        for position, (aspect, weight) in enumerate(aspects):
            RubricCriterion.objects.get_or_create(
                discipline=task.survey.discipline, component=component, aspect=aspect,
                defaults={"weight": weight, "position": position, "name": f"{aspect} ({component})",
                          "description": f"The survey's {component} shows {aspect.lower()} "
                                         "by the standards of biology reviews."},
            )
    return task


def _surveylens_reports():
    from benchmark.models import Report

    return Report.objects.filter(task=_surveylens_task())


def _surveyscope_reports():
    """The luciferase surveys again, as SurveyScope reports on a SurveyScope task of the same survey."""
    from benchmark.models import Report, Task
    from benchmark.services.reports import ReportInput, reports_submit

    lens = _surveylens_task()
    task = Task.objects.get_or_create(protocol="surveyscope", key="luciferase",
                                      defaults={"survey": lens.survey, "title": lens.title})[0]
    reports_submit(items=[ReportInput(task=task, system=r.system, text=r.text, format=r.format)
                          for r in Report.objects.filter(task=lens).select_related("system")])
    return Report.objects.filter(task=task)


@dataclass(frozen=True)
class Protocol:
    name: str
    responder: str
    reports: object  # () -> Report queryset
    embeddings: bool = False  # SurveyLens embeds outline/content entries through the endpoint


PROTOCOLS = [
    Protocol("deepsynth", "labelled-checklist+usage", _deepsynth_reports),
    Protocol("reportbench", "reportbench", _reportbench_reports),
    Protocol("deepscholar", "deepscholar+usage", _deepscholar_reports),
    Protocol("surveylens", "survey+usage", _surveylens_reports, embeddings=True),
    Protocol("surveyscope", "survey+usage", _surveyscope_reports, embeddings=True),
]


# --- measuring ---------------------------------------------------------------------------------------------------


def _execute(run, judge) -> float:
    """Run every job of ``run`` on JOB_THREADS threads, as a threaded Celery worker would; the wall seconds."""
    from scoring.services.run_finish import run_finalize
    from scoring.services.runs import run_start

    run_start(run=run, enqueue=False)
    start = time.perf_counter()
    outcomes = execute_jobs(run, judge, threads=JOB_THREADS)
    wall = time.perf_counter() - start
    finished = run_finalize(run=run)
    if finished.status != "finished" or set(outcomes) - {"done"}:
        raise RuntimeError(f"{run.protocol} run #{run.pk} ended {finished.status}: {finished.error or outcomes}")
    return wall


def measure_protocol(protocol: Protocol, *, reports: int | None, latency: float) -> dict:
    """Evaluate the first ``reports`` reports of ``protocol`` (all when None) twice with one new judge
    configuration; the counts of both runs from the stored ``LLMCall`` rows and the server."""
    from django.db.models import Count, Q, Sum

    from scoring.judges.openai_judge import OpenAIJudge
    from scoring.models import JudgeConfig, LLMCall
    from scoring.services.runs import run_create
    from tests.support.fake_openai import FakeOpenAIProcess

    chosen = list(protocol.reports().select_related("task", "system").order_by("task__key", "system__name")[:reports])
    if not chosen:
        raise RuntimeError(f"no {protocol.name} report to evaluate: is {bench_dataset()} complete?")
    tasks = list({r.task_id: r.task for r in chosen}.values())
    systems = list({r.system_id: r.system for r in chosen}.values())
    with FakeOpenAIProcess(latency=latency, responder=protocol.responder) as server:
        tag = f"{next(_counter)}-{uuid.uuid4().hex[:8]}"
        config = JudgeConfig.objects.create(
            name=f"bench-protocols-{protocol.name}-{tag}", backend="openai", base_url=server.base_url,
            model="loopback", max_concurrency=CONCURRENCY, max_retries=0,
            # a new embedding model name: the first run embeds, as it would on a fresh database
            embedding_backend=f"openai:bench-bow-{tag}" if protocol.embeddings else "",
        )
        judge = OpenAIJudge(config)
        first = run_create(protocol=protocol.name, judge_config=config, systems=systems, tasks=tasks)
        wall = _execute(first, judge)
        requests = server.stats()["requests"]
        second = run_create(protocol=protocol.name, judge_config=config, systems=systems, tasks=tasks)
        _execute(second, judge)
        rerun_requests = server.stats()["requests"] - requests
        max_in_flight = server.stats()["max_in_flight"]
    calls = LLMCall.objects.filter(run=first).aggregate(n=Count("id"), tokens_in=Sum("tokens_in"),
                                                        tokens_out=Sum("tokens_out"), failed=Count("id", filter=Q(ok=False)))
    evaluated = first.jobs.values("report").distinct().count()
    return {
        "protocol": protocol.name, "reports": evaluated, "jobs": first.jobs.count(),
        "calls": calls["n"], "failed_calls": calls["failed"], "tokens_in": calls["tokens_in"] or 0,
        "tokens_out": calls["tokens_out"] or 0, "requests": requests, "wall_seconds": wall,
        "ideal_seconds": requests * latency / CONCURRENCY, "max_in_flight": max_in_flight,
        "rerun_requests": rerun_requests, "rerun_calls": LLMCall.objects.filter(run=second).count(),
    }


def figures_of(result: dict) -> list[dict]:
    """The table rows of one protocol's measurement."""
    name, n = result["protocol"], result["reports"]
    ratio = result["wall_seconds"] / result["ideal_seconds"] if result["ideal_seconds"] else 0.0
    return [
        {"figure": f"{name}: LLM calls per report ({n} reports)", "value": result["calls"] / n, "target": None,
         "unit": "calls", "better": "lower"},
        {"figure": f"{name}: tokens in per report", "value": result["tokens_in"] / n, "target": None,
         "unit": "tokens", "better": "lower"},
        {"figure": f"{name}: tokens out per report", "value": result["tokens_out"] / n, "target": None,
         "unit": "tokens", "better": "lower"},
        {"figure": f"{name}: wall / ideal ({result['requests']} requests, {result['wall_seconds']:.1f} s)",
         "value": ratio, "target": IDEAL_TARGET, "unit": "×", "better": "lower"},
        {"figure": f"{name}: requests on a re-run of the same configuration",
         "value": result["rerun_requests"] + result["rerun_calls"], "target": 0, "unit": "requests",
         "better": "lower"},
    ]


def measure(*, reports: int | None, latency: float = LATENCY, echo: bool = True) -> list[dict]:
    """Every protocol measured once; prints a compact table when ``echo``."""
    results = [measure_protocol(p, reports=reports, latency=latency) for p in PROTOCOLS]
    if echo:
        print(f"    {'protocol':<12} {'reports':>7} {'calls/rep':>9} {'tok in/rep':>10} {'tok out/rep':>11} "
              f"{'wall s':>7} {'ideal s':>7} {'in flight':>9} {'re-run':>6}")
        for r in results:
            n = r["reports"]
            print(f"    {r['protocol']:<12} {n:>7} {r['calls'] / n:>9.1f} {r['tokens_in'] / n:>10.0f} "
                  f"{r['tokens_out'] / n:>11.0f} {r['wall_seconds']:>7.2f} {r['ideal_seconds']:>7.2f} "
                  f"{r['max_in_flight']:>9} {r['rerun_requests'] + r['rerun_calls']:>6}", flush=True)
    return results


def run(*, quick: bool = False) -> list[dict]:
    results = measure(reports=2 if quick else None)
    return [row for result in results for row in figures_of(result)]


BENCHMARKS: list = []  # every figure here is a count or a ratio, not one timing
FIGURES = [("LLM calls, tokens and wall time per report, every protocol", run)]
