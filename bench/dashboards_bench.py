"""Dashboard views timed through the Django test client on a populated database.

``BENCHMARKS = [(name, target_seconds, setup)]``: ``setup()`` populates the database (idempotent per
process) and returns a zero-argument callable that performs one request.
"""

from __future__ import annotations

from functools import cache

TARGET = 0.3


@cache
def _client():
    from django.db import transaction
    from django.test import Client

    from scoring.models import EvaluationRun
    from tests.annotation_factories import curator
    from tests.annotation.dashboards.builders import SYSTEM_NAMES, agreement_setup, deepsynth_run, preferences
    from tests.factories import SystemFactory

    if not EvaluationRun.objects.filter(name="bench run").exists():  # the bench database persists
        with transaction.atomic():
            systems = [SystemFactory(name=name) for name in SYSTEM_NAMES]
            deepsynth_run(n_tasks=40, systems=systems, verdicts_per_report=20, name="bench run")
            preferences(systems=systems, n_tasks=10, source="bench")
            agreement_setup(n_verdicts=60)
    client = Client(HTTP_HOST="localhost")
    client.force_login(curator("bench-curator"))
    return client


def _view(path: str):
    def setup():
        client = _client()

        def call():
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)

        return call

    return setup


@cache
def _figures_client():
    """``_client`` plus the rows of the papers' figures and of the look-next page (their own guard:
    a bench database made before they existed gets them too)."""
    from django.db import transaction

    from scoring.models import EvaluationRun
    from tests.annotation_factories import JudgeConfigFactory, VerdictFactory
    from tests.annotation.dashboards.builders import SYSTEM_NAMES, deepscholar_run, reportbench_run, surveylens_run
    from tests.factories import ReportFactory, SystemFactory

    client = _client()
    if not EvaluationRun.objects.filter(name="bench rb A").exists():
        with transaction.atomic():
            systems = [SystemFactory(name=name) for name in SYSTEM_NAMES]
            judge_a, judge_b = JudgeConfigFactory(name="bench judge A"), JudgeConfigFactory(name="bench judge B")
            _, _, tasks = reportbench_run(n_tasks=40, systems=systems, judge=judge_a, name="bench rb A", n_gold=60)
            reportbench_run(tasks=tasks, systems=systems, judge=judge_b, name="bench rb B", seed=9)
            deepscholar_run(n_tasks=40, systems=systems, name="bench ds")
            surveylens_run(tasks_per_discipline=8, systems=systems, name="bench sl", disciplines=(
                "Biology", "Chemistry", "Computer Science", "Economics", "Education", "Environmental Science",
                "Mathematics", "Medicine", "Physics", "Psychology"))
            report = ReportFactory()
            for target in range(2000):  # two judges, every fifth target in dispute, some unsure
                VerdictFactory(report=report, judge_config=judge_a, step="deepsynth.checklist_group",
                               target_kind="item", target_id=target, label="correct", confidence=(target % 10) / 10)
                VerdictFactory(report=report, judge_config=judge_b, step="deepsynth.checklist_group",
                               target_kind="item", target_id=target, label="incorrect" if target % 5 == 0 else "correct")
    return client


def _figure_view(path: str):
    def setup():
        client = _figures_client()

        def call():
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)

        return call

    return setup


BENCHMARKS = [
    ("dashboards.recall_by_quartile", TARGET, _figure_view("/dashboards/charts/recall-by-quartile/")),
    ("dashboards.coverage_by_window", TARGET, _figure_view("/dashboards/charts/coverage-by-window/")),
    ("dashboards.discipline_heatmap", TARGET, _figure_view("/dashboards/charts/discipline-heatmap/")),
    ("dashboards.judge_sensitivity", TARGET, _figure_view("/dashboards/judge-sensitivity/")),
    ("dashboards.look_next", TARGET, _figure_view("/dashboards/look-next/")),
    ("dashboards.run_progress", TARGET, _figure_view("/dashboards/runs/progress/")),
    ("dashboards.leaderboard", TARGET, _view("/dashboards/leaderboard/?protocol=deepsynth")),
    ("dashboards.leaderboard_csv", TARGET, _view("/dashboards/leaderboard/?protocol=deepsynth&format=csv")),
    ("dashboards.human", TARGET, _view("/dashboards/human/")),
    ("dashboards.agreement", TARGET, _view("/dashboards/agreement/")),
    ("dashboards.chart_verdicts", TARGET, _view("/dashboards/charts/verdicts/?protocol=deepsynth")),
    ("dashboards.chart_scores", TARGET, _view("/dashboards/charts/scores/?protocol=deepsynth")),
    ("dashboards.chart_human_vs_auto", TARGET, _view("/dashboards/charts/human-vs-automated/")),
]


def _percentile(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def _timed_gets(client, path: str, n: int) -> list[float]:
    import time

    out = []
    for _ in range(n):
        start = time.perf_counter()
        response = client.get(path)
        out.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return out


def _human_ranking_stored(*, quick: bool = False) -> list[dict]:
    """The human ranking page on the bench seed (200 preferences: a worker's, past
    ``human_stored.INLINE_PREFERENCES``), server time through the Django test client, its figures
    stored (``ProjectStatistics``) and deleted first: the first view (nothing stored: a worker is asked), the worker's computation (the
    ``annotation.refresh_human_ranking`` task's body, run here), then ``n`` views with the
    figures stored, then ``n`` views after a new preference (the stored figures served marked
    stale while a worker is due). The new preference is deleted at the end: the seed stays."""
    import time

    from django.utils import timezone

    from annotation.dashboards import human, human_stored
    from annotation.models import PairwisePreference, ProjectStatistics
    from annotation.tasks import refresh_human_ranking

    client, n, path = _client(), 5 if quick else 20, "/dashboards/human/"
    client.get("/dashboards/")  # a process's first page loads its templates and URL configuration: not timed
    ProjectStatistics.objects.filter(kind=ProjectStatistics.Kind.HUMAN_RANKING).delete()
    [first] = _timed_gets(client, path, 1)
    key = human_stored.ranking_key(human_stored.ranking_parameters(scope=human.Scope()))
    start = time.perf_counter()
    assert refresh_human_ranking(key) == "refreshed"
    computation = time.perf_counter() - start
    stored = _timed_gets(client, path, n)
    model = PairwisePreference.objects.filter(source="bench").order_by("pk").first()
    added = PairwisePreference.objects.create(
        task_id=model.task_id, report_left_id=model.report_left_id, report_right_id=model.report_right_id,
        annotator_id=model.annotator_id, choice="tie", source="bench", component=model.component,
        labeled_at=timezone.now())
    try:
        stale = _timed_gets(client, path, n)
    finally:
        added.delete()
    row = lambda figure, value, target, unit="ms": {"figure": figure, "value": value, "target": target, "unit": unit,
                                                   "better": "lower"}
    return [
        row("human ranking page, first view (nothing stored, a worker asked)", first, TARGET * 1000),
        row("human ranking: the worker's computation (200 preferences)", computation, None, "s"),
        row(f"human ranking page, figures stored, p95 of {n}", _percentile(stored, 95), TARGET * 1000),
        row(f"human ranking page, a new preference (stale, worker due), p95 of {n}", _percentile(stale, 95),
            TARGET * 1000),
    ]


def _agreement_at_scale(*, quick: bool = False) -> list[dict]:
    from bench.agreement_scale import run_figures

    return run_figures(quick=quick)


FIGURES = [("human ranking page, stored figures (Django test client)", _human_ranking_stored),
           ("agreement page at 1M labels (gunicorn, Celery worker)", _agreement_at_scale)]
