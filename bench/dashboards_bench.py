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
    from tests.dashboards.builders import SYSTEM_NAMES, agreement_setup, deepsynth_run, preferences
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


BENCHMARKS = [
    ("dashboards.leaderboard", TARGET, _view("/dashboards/leaderboard/?protocol=deepsynth")),
    ("dashboards.leaderboard_csv", TARGET, _view("/dashboards/leaderboard/?protocol=deepsynth&format=csv")),
    ("dashboards.human", TARGET, _view("/dashboards/human/")),
    ("dashboards.agreement", TARGET, _view("/dashboards/agreement/")),
    ("dashboards.chart_verdicts", TARGET, _view("/dashboards/charts/verdicts/?protocol=deepsynth")),
    ("dashboards.chart_scores", TARGET, _view("/dashboards/charts/scores/?protocol=deepsynth")),
    ("dashboards.chart_human_vs_auto", TARGET, _view("/dashboards/charts/human-vs-automated/")),
]
