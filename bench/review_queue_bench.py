"""The curator at real volume (issue 38): the review queue's server time per decision and per
page, and the human ranking page, through the Django test client on the bench database.

Seed: a DeepSynth task with 320 open checklist items (the demo's task 0 has 294) in 16 groups,
made again whenever a run finds fewer open (a run decides 120 of them), so every run times the
page the figure names. The queue page (the first 50 of the 320) is timed first, then the
decisions: one POST of the queue's row form each (accept, or reject with a reason every fourth),
timed from request to response: the service, its audit row, the task-curated check and the row's
HTML — what the curator waits for after pressing ``a``. The statements of one page and of one
decision are counted too (``CaptureQueriesContext``), beside the times.

Targets (docs/performance.md): a decision ≤ 100 ms p95, the queue page and the human ranking
page ≤ 300 ms p95 (the dashboards' budget).
"""

from __future__ import annotations

import time

DECISION_MS = 100.0
PAGE_MS = 300.0
DECISIONS = 120
PAGE_REPEATS = 20
OPEN = 320  # 16 groups of 20
TASK_KEY = "bench-review-queue"


def _percentile(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def _seed():
    from django.db import transaction

    from benchmark.models import ChecklistItem, Task
    from tests.factories import ChecklistGroupFactory, TaskFactory

    task = Task.objects.filter(key=TASK_KEY).first()
    if task is None or ChecklistItem.objects.filter(group__task=task, review_status="proposed").count() < OPEN:
        with transaction.atomic():
            if task is not None:
                task.delete()
            task = TaskFactory(protocol="deepsynth", key=TASK_KEY)
            items = []
            for g in range(16):
                group = ChecklistGroupFactory(task=task, name=f"Topic {g}", review_status="accepted")
                items += [ChecklistItem(group=group, position=n, subgroup=f"Sub {n % 4}", origin="llm",
                                        proposed_by="gpt-4o-2024-08-06",
                                        text=f"The article should discuss point {g}.{n} of the topic, with its "
                                             "evidence, its limits and how it compares to the alternatives.")
                          for n in range(20)]
            ChecklistItem.objects.bulk_create(items)
    return task


def _client():
    from django.test import Client

    from tests.annotation_factories import curator
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username="bench-queue-curator").first() or curator("bench-queue-curator")
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    return client


def run_figures(*, quick: bool = False) -> list[dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from benchmark.models import ChecklistItem

    task = _seed()
    client = _client()
    n = 40 if quick else DECISIONS
    rows = list(ChecklistItem.objects.filter(group__task=task, review_status="proposed").order_by("pk")[:n + 1])
    page_url = f"{reverse('annotation:review_queue')}?task={task.pk}"
    client.get(page_url)  # warm the templates
    with CaptureQueriesContext(connection) as captured:
        assert client.get(page_url).status_code == 200
    page_queries = len(captured.captured_queries)  # read now: the next request resets the log it slices
    pages = []
    for _ in range(5 if quick else PAGE_REPEATS):
        start = time.perf_counter()
        assert client.get(page_url).status_code == 200
        pages.append((time.perf_counter() - start) * 1000)

    def decide(i: int, row):
        data = {"expected_version": row.version, "decision": "accept"}
        if i % 4 == 3:
            data.update(decision="reject", reason="duplicate", reason_text="same as the one above")
        response = client.post(reverse("annotation:review_decide", args=["checklist_item", row.pk]), data,
                               HTTP_HX_REQUEST="true")
        assert response.status_code == 200, response.content[:300]

    decisions = []
    for i, row in enumerate(rows[:n]):
        start = time.perf_counter()
        decide(i, row)
        decisions.append((time.perf_counter() - start) * 1000)
    with CaptureQueriesContext(connection) as captured:  # one more, untimed, counted
        decide(0, rows[n])
    decision_queries = len(captured.captured_queries)
    from bench.dashboards_bench import _client as dashboards_client

    dashboards = dashboards_client()
    human = []
    for _ in range(3 if quick else 10):
        start = time.perf_counter()
        assert dashboards.get("/dashboards/human/").status_code == 200
        human.append((time.perf_counter() - start) * 1000)
    return [
        {"figure": f"review queue: one decision, p50 of {len(decisions)}", "value": _percentile(decisions, 50),
         "target": None, "unit": "ms", "better": "lower"},
        {"figure": f"review queue: one decision, p95 of {len(decisions)}", "value": _percentile(decisions, 95),
         "target": DECISION_MS, "unit": "ms", "better": "lower"},
        {"figure": "review queue: statements of one decision", "value": decision_queries,
         "target": None, "unit": "queries", "better": "lower"},
        {"figure": f"review queue page (50 rows of {OPEN}), p95 of {len(pages)}", "value": _percentile(pages, 95),
         "target": PAGE_MS, "unit": "ms", "better": "lower"},
        {"figure": "review queue page: statements", "value": page_queries,
         "target": None, "unit": "queries", "better": "lower"},
        {"figure": f"human ranking page (dashboards seed), p95 of {len(human)}", "value": _percentile(human, 95),
         "target": PAGE_MS, "unit": "ms", "better": "lower"},
    ]


BENCHMARKS: list = []
FIGURES = [("review queue decisions, queue page, human ranking page", run_figures)]
