"""The web benchmark end to end at a tiny size: seeding, gunicorn, the load, the checks, the table rows.

No timing is asserted (the machine is shared); what is asserted is what the harness must get
right on any machine: the seeded counts, every loop stored exactly once, no item beyond its
overlap, the reuse of a seeded database, and the shape of the report.
"""

import sqlite3

import pytest
from django.db import connection
from django.db.models import Count

from core.models import AuditLog

from annotation.models import AnnotationItem, AnnotationProject, Assignment, Label
from bench import seed_web
from bench.web_bench import BATCH, MODES, WebLoad, _db, figures_of, measure, server_environment

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TINY = WebLoad(items=1000, sequential_loops=8, loops_per_annotator=4, warmup_loops=1, page_repeats=2, query_loops=2,
               dashboard_tasks=2, workers=1, threads=4)
SEEDED = TINY.items * seed_web.LABELS_PER_ITEM


def _loops(count: int, share: float) -> int:
    return max(1, round(count * share))  # as LoopLog.run


def _items(mode: str, *, first: bool) -> int:
    """Items one annotator labels in a mode: warm-ups (the first annotator warms up twice: alone,
    then with the others), its sequential loops (first only) and its concurrent ones."""
    _, share = MODES[mode]
    per_loop = BATCH if "batch" in mode else 1
    loops = _loops(TINY.warmup_loops, share) * (2 if first else 1) + _loops(TINY.loops_per_annotator, share)
    return per_loop * (loops + (_loops(TINY.sequential_loops, share) if first else 0))


# the probe's instrumented loops, then every annotator's in every mode
LOOPS = TINY.query_loops * (2 + BATCH) + sum(
    _items(mode, first=True) + (TINY.annotators - 1) * _items(mode, first=False) for mode in MODES
)


def _assert_report_shape(result: dict, label: str) -> None:
    for mode, measured in result["modes"].items():
        assert measured["sequential"]["errors"] == [] and measured["concurrent"]["errors"] == [], mode
        share = MODES[mode][1]
        assert len(measured["sequential"]["loops"]) == _loops(TINY.sequential_loops, share)
        assert len(measured["concurrent"]["loops"]) == TINY.annotators * _loops(TINY.loops_per_annotator, share)
    assert result["check"]["over_assigned_items"] == 0
    assert result["check"]["miscounted_items"] == 0
    rows = {row["figure"]: row for row in figures_of(result)}
    where = f"{label}, {TINY.items:,} items"
    for mode in MODES:
        for name in ("sequential p50 per item", "sequential p95 per item", "8 annotators, items/s",
                     "8 annotators, p95 per item", "errors (both phases)"):
            assert f"{where}, {mode}: {name}" in rows, (mode, name)
        assert rows[f"{where}, {mode}: errors (both phases)"]["value"] == 0
        assert rows[f"{where}, {mode}: 8 annotators, items/s"]["better"] == "higher"
        assert rows[f"{where}, {mode}: 8 annotators, items/s"]["value"] > 0
    for name in ("items over their overlap", "queries, open workspace (htmx GET)",
                 "queries, per item, workspace (htmx POST: label, next item)",
                 "queries, per item, REST (POST /api/labels/ with next)",
                 f"queries, per item, REST batch of {BATCH} (claim + submit)",
                 "workspace page (reload: the held item) p95", "pairwise page p95", "dashboard agreement p95",
                 "web worker peak RSS (gunicorn worker, under load)"):
        assert f"{where}: {name}" in rows, name
    assert rows[f"{where}: items over their overlap"]["value"] == 0
    assert rows[f"{where}: queries, per item, workspace (htmx POST: label, next item)"]["value"] > 0
    assert 20 < rows[f"{where}: web worker peak RSS (gunicorn worker, under load)"]["value"] < 4096
    assert len([name for name in rows if ": dashboard " in name]) == 7


def test_web_bench_on_the_postgresql_test_database(tmp_path):
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    result = measure(database_url=url, label="postgresql", load=TINY, work_dir=tmp_path)
    _assert_report_shape(result, "postgresql")

    project = AnnotationProject.objects.get(name=seed_web.PROJECT)
    assert project.overlap == seed_web.LABELS_PER_ITEM + 1
    items = AnnotationItem.objects.filter(project=project)
    assert items.count() == TINY.items
    assert Label.objects.filter(project=project).count() == SEEDED + LOOPS
    # each loop took the last free slot of one item, so exactly LOOPS items completed
    assert items.filter(status=AnnotationItem.Status.COMPLETE).count() == LOOPS
    per_item = Label.objects.filter(project=project).values("item").annotate(people=Count("annotator", distinct=True))
    assert max(row["people"] for row in per_item) == project.overlap
    assert not [i for i in items.annotate(n=Count("labels")) if i.n != i.labels_done]
    # the seed wrote what the services write: a submitted claim and two audit rows per label
    assert AuditLog.objects.filter(project_id=project.pk, action="label.submit").count() == SEEDED + LOOPS
    assert Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED).count() == SEEDED + LOOPS
    first, *others = seed_web.annotator_names(TINY.annotators)
    assert Label.objects.filter(annotator__username=first).count() == sum(_items(m, first=True) for m in MODES)
    for name in others:
        assert Label.objects.filter(annotator__username=name).count() == sum(_items(m, first=False) for m in MODES)

    again = _db("prepare", server_environment(database_url=url, work_dir=tmp_path), TINY)
    assert again["state"] == "seeded" and again["seed_seconds"] is None  # reused, not seeded twice
    assert Label.objects.filter(project=project).count() == SEEDED + LOOPS


def test_web_bench_on_sqlite(tmp_path):
    path = tmp_path / "web.sqlite3"
    result = measure(database_url=f"sqlite:///{path}", label="sqlite", load=TINY, work_dir=tmp_path)
    _assert_report_shape(result, "sqlite")

    with sqlite3.connect(path) as db:
        labels = db.execute("SELECT COUNT(*) FROM annotation_label").fetchone()[0]
        complete = db.execute("SELECT COUNT(*) FROM annotation_annotationitem WHERE status = 'complete'"
                              " AND project_id = ?", [result["seed"]["project_id"]]).fetchone()[0]
        crowded = db.execute("SELECT COUNT(*) FROM (SELECT item_id FROM annotation_label GROUP BY item_id"
                             " HAVING COUNT(DISTINCT annotator_id) > ?)", [result["seed"]["overlap"]]).fetchone()[0]
    # the pairwise project and the dashboards' agreement project hold a few labels of their own
    assert labels - result["seed"]["labels"] == LOOPS
    assert complete == LOOPS
    assert crowded == 0
