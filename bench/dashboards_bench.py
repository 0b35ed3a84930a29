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


def _agreement_at_scale(*, quick: bool = False) -> list[dict]:
    from bench.agreement_scale import run_figures

    return run_figures(quick=quick)


FIGURES = [("agreement page at 1M labels (gunicorn, Celery worker)", _agreement_at_scale)]
