"""The web benchmark's database: 100,000 verify items holding 1,000,000 labels, seeded once.

Shape (``SeedSpec``): ``items`` nuggets over ``items / NUGGETS_PER_TASK`` tasks, reviewed in one
verify project with overlap k = ``LABELS_PER_ITEM + 1``. Every item already carries
``LABELS_PER_ITEM`` labels from ten earlier reviewers, so 100,000 items hold 1,000,000 labels
and each item has exactly one free slot: concurrent annotators compete for the last slot of
the same items, which is where over-assignment happens if claiming is wrong.

The project, its items, members, the pairwise project and the dashboards' rows are written by
the services (``project_create``, ``membership_add``, ``reports_submit``, the dashboard
builders). The bulk — nuggets, and per label its claim (``Assignment``, submitted), the
``Label`` and both audit rows — is written the way those services would have written it, with
COPY on PostgreSQL and ``executemany`` in one transaction on SQLite. The project's
description is the marker: a second run with the same spec reuses the database while enough
items are left for the load.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import timedelta
from itertools import islice
from pathlib import Path

from bench import bench_dataset

NUGGETS_PER_TASK = 100
LABELS_PER_ITEM = 10
SEED_REVIEWERS = LABELS_PER_ITEM  # reviewer j wrote label j of every item
LIVE_ANNOTATORS = 8
PASSWORD = "bench-web-password"  # accounts in a throwaway bench database only
CURATOR = "bench-web-curator"
PROBE = "bench-web-probe"  # the annotator whose loop the query counter instruments
PROJECT = "bench-web verify"
PAIRWISE_PROJECT = "bench-web pairwise"
PAIRWISE_TASKS, PAIRWISE_SYSTEMS = 4, 5
MIXED_EVERY = 5  # every fifth item's earlier labels disagree (one reject): it goes to adjudication
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class SeedSpec:
    items: int = 100_000
    labels_per_item: int = LABELS_PER_ITEM
    annotators: int = LIVE_ANNOTATORS
    dashboard_tasks: int = 40  # DeepSynth tasks × 5 systems × 20 verdicts for the dashboards

    @property
    def marker(self) -> str:
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]
        return f"web bench seed {digest}: {json.dumps(asdict(self), sort_keys=True)}"


def annotator_names(count: int) -> list[str]:
    return [f"bench-web-annotator-{n:02d}" for n in range(1, count + 1)]


# --- bulk writing -----------------------------------------------------------------------------


def bulk_insert(model, columns: list[str], rows: Iterable[tuple]) -> None:
    """Insert ``rows`` (values ready for the database, see ``_Adapt``) into ``model``'s table:
    COPY on PostgreSQL, ``executemany`` on SQLite. Call inside a transaction (one for the seed)."""
    from django.db import connection

    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(model._meta.get_field(c).column) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"
            rows = iter(rows)
            # in chunks: Django's SQLite executemany peeks with itertools.tee, which would
            # buffer a whole generator in memory
            while chunk := list(islice(rows, 20_000)):
                cursor.executemany(sql, chunk)


def _sequences_reset(models: list) -> None:
    """PostgreSQL: move the id sequences past the explicit ids COPY wrote (SQLite's
    AUTOINCREMENT does this by itself)."""
    from django.core.management.color import no_style
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(statement)


class _Adapt:
    """What the fields' ``get_db_prep_value`` would produce, without its per-value cost."""

    def __init__(self) -> None:
        from django.db import connection

        self.ops = connection.ops
        self.native_uuid = connection.features.has_native_uuid_field

    def time(self, value):
        return self.ops.adapt_datetimefield_value(value)

    def uuid(self, value: uuid.UUID):
        return value if self.native_uuid else value.hex


def _next_id(model) -> int:
    from django.db.models import Max

    return (model.objects.aggregate(top=Max("pk"))["top"] or 0) + 1


# --- seeding ----------------------------------------------------------------------------------


def _accounts(spec: SeedSpec) -> dict:
    from django.contrib.auth import get_user_model

    from annotation.models import AnnotatorProfile, Role
    from annotation.services.accounts import account_ensure

    curator, _ = account_ensure(username=CURATOR, password=PASSWORD, role=Role.CURATOR)
    live = [account_ensure(username=name, password=PASSWORD, role=Role.ANNOTATOR)[0]
            for name in [*annotator_names(spec.annotators), PROBE]]
    User = get_user_model()
    reviewers = []
    for n in range(1, SEED_REVIEWERS + 1):  # they never log in: no password to hash
        user, created = User.objects.get_or_create(username=f"bench-web-reviewer-{n:02d}")
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        AnnotatorProfile.objects.get_or_create(user=user, defaults={"role": Role.ANNOTATOR})
        reviewers.append(user)
    return {"curator": curator, "live": live, "reviewers": reviewers}


def _tasks_and_nuggets(spec: SeedSpec) -> list:
    from benchmark.models import Nugget, Survey, Task

    n_tasks = -(-spec.items // NUGGETS_PER_TASK)
    survey = Survey.objects.create(title="Web benchmark survey", kind=Survey.Kind.SURVEY)
    Task.objects.bulk_create(
        [Task(protocol="deepscholar", key=f"bench-web-{n:05d}", survey=survey, title=f"Bench task {n}",
              source="bench-web") for n in range(n_tasks)],
        batch_size=1000,
    )
    tasks = list(Task.objects.filter(source="bench-web").order_by("key").values_list("pk", flat=True))
    adapt = _Adapt()
    now = adapt.time(_now())

    def rows() -> Iterator[tuple]:
        for n in range(spec.items):
            task_id = tasks[n // NUGGETS_PER_TASK]
            text = (f"Nugget {n}: the survey compares retrieval-augmented and fine-tuned approaches "
                    f"on benchmark {n % 97} and reports where each one fails.")
            yield (now, now, "llm", "bench-web", "", "proposed", 1, task_id, text,
                   "vital" if n % 3 == 0 else "okay", n % NUGGETS_PER_TASK)

    bulk_insert(Nugget, ["created_at", "updated_at", "origin", "proposed_by", "prompt_version", "review_status",
                         "version", "task", "text", "importance", "position"], rows())
    return list(Task.objects.filter(pk__in=tasks))


def _now():
    from django.utils import timezone

    return timezone.now()


def _prior_labels(*, project, reviewers: list) -> int:
    """Each item's ``LABELS_PER_ITEM`` earlier labels, as ``claim_next_item`` then ``label_submit``
    would have left them: a submitted claim, the label, the claim and submit audit rows."""
    from django.contrib.contenttypes.models import ContentType

    from annotation.models import AnnotationItem, Assignment, Label
    from annotation.services.values import value_clean
    from benchmark.models import Nugget
    from core.models import AuditLog

    adapt = _Adapt()
    items = list(AnnotationItem.objects.filter(project=project).order_by("position").values_list("pk", "target_id"))
    sample = Nugget.objects.get(pk=items[0][1])
    accept = value_clean(project=project, target=sample, value={"decision": "accept"})
    reject = value_clean(project=project, target=sample, value={"decision": "reject", "reason": "duplicate"})
    accept_json, reject_json = json.dumps(accept), json.dumps(reject)
    first_assignment, first_label = _next_id(Assignment), _next_id(Label)
    start = _now() - timedelta(days=30)
    hold = project.hold_duration
    k = LABELS_PER_ITEM

    def when(i: int, j: int):  # claims spread over the last 30 days, 40 s per review
        claimed = start + timedelta(seconds=i * 20 + j * 2)
        return claimed, claimed + timedelta(seconds=40)

    def slots() -> Iterator[tuple[int, int, int, int, object, object]]:
        for i, (item_id, _) in enumerate(items):
            for j in range(k):
                claimed, ended = when(i, j)
                yield i, j, item_id, (i * k + j), claimed, ended

    def mixed(i: int, j: int) -> bool:
        return i % MIXED_EVERY == MIXED_EVERY - 1 and j == k - 1

    bulk_insert(Assignment, ["id", "project", "item", "user", "claimed_at", "expires_at", "status", "ended_at"], (
        (first_assignment + n, project.pk, item_id, reviewers[j].pk, adapt.time(claimed), adapt.time(claimed + hold),
         Assignment.Status.SUBMITTED, adapt.time(ended))
        for i, j, item_id, n, claimed, ended in slots()
    ))
    bulk_insert(Label, ["id", "project", "item", "annotator", "value", "client_token", "assignment", "created_at"], (
        (first_label + n, project.pk, item_id, reviewers[j].pk, reject_json if mixed(i, j) else accept_json,
         adapt.uuid(uuid.uuid4()), first_assignment + n, adapt.time(ended))
        for i, j, item_id, n, claimed, ended in slots()
    ))

    item_type = ContentType.objects.get_for_model(AnnotationItem).pk

    def audit_rows() -> Iterator[tuple]:
        for i, j, item_id, n, claimed, ended in slots():
            actor = reviewers[j].pk
            claim_after = json.dumps({"assignment_id": first_assignment + n,
                                      "expires_at": (claimed + hold).isoformat()})
            yield (actor, "", "assignment.claim", item_type, item_id, project.pk, None, claim_after, "",
                   adapt.time(claimed))
            value = reject_json if mixed(i, j) else accept_json
            submit_after = (f'{{"label_id": {first_label + n}, "value": {value}, "labels_done": {j + 1}}}')
            yield (actor, "", "label.submit", item_type, item_id, project.pk,
                   f'{{"labels_done": {j}, "status": "open"}}', submit_after, "", adapt.time(ended))

    bulk_insert(AuditLog, ["actor", "actor_label", "action", "content_type", "object_id", "project_id", "before",
                           "after", "note", "created_at"], audit_rows())
    _sequences_reset([Assignment, Label])
    AnnotationItem.objects.filter(project=project).update(labels_done=k)
    return len(items) * k


def _example_reports() -> list[str]:
    """The DeepSynth-Eval example surveys (real report text); read before seeding, so a missing
    datasets folder stops the bench at once."""
    dataset = bench_dataset("deepsynth-eval/example_gen_result.jsonl")
    return [json.loads(line)["survey_result"] for line in dataset.read_text().splitlines() if line.strip()]


def _pairwise(*, curator, annotators: list, tasks: list, texts: list[str]) -> None:
    """A pairwise project over real report text (the DeepSynth-Eval example survey, one per system)."""
    from annotation.models import AnnotationProject, Role
    from annotation.services.projects import membership_add, project_create
    from benchmark.models import System
    from benchmark.services.reports import ReportInput, reports_submit

    systems = [System.objects.get_or_create(name=f"bench-web-system-{n}", version="")[0]
               for n in range(PAIRWISE_SYSTEMS)]
    reports_submit(items=[
        ReportInput(task=task, system=system, text=f"{texts[(t + s) % len(texts)]}\n\n(written by {system.name})")
        for t, task in enumerate(tasks) for s, system in enumerate(systems)
    ])
    project = project_create(name=PAIRWISE_PROJECT, kind=AnnotationProject.Kind.PAIRWISE, created_by=curator,
                             tasks=tasks, systems=systems, overlap=1)
    for user in annotators:
        membership_add(project=project, user=user, role=Role.ANNOTATOR, actor=curator)


def _dashboards(spec: SeedSpec) -> None:
    """The rows the dashboards read, as ``bench/dashboards_bench.py`` builds them."""
    from tests.annotation.dashboards.builders import SYSTEM_NAMES, agreement_setup, deepsynth_run, preferences
    from tests.factories import SystemFactory

    systems = [SystemFactory(name=name) for name in SYSTEM_NAMES]
    deepsynth_run(n_tasks=spec.dashboard_tasks, systems=systems, verdicts_per_report=20, name="bench-web run")
    preferences(systems=systems, n_tasks=10, source="bench-web")
    agreement_setup(n_verdicts=60)


def seed_state(spec: SeedSpec, *, loops_needed: int) -> str:
    """``"seeded"`` when this database holds ``spec``'s seed with at least ``loops_needed`` items
    still open, ``"empty"`` when it holds no seed, else ``"stale"`` (drop it and seed again)."""
    from annotation.models import AnnotationItem, AnnotationProject

    project = AnnotationProject.objects.filter(name=PROJECT).first()
    if project is None:
        return "empty"
    if project.description != spec.marker:
        return "stale"
    open_items = AnnotationItem.objects.filter(project=project, status=AnnotationItem.Status.OPEN).count()
    return "seeded" if open_items >= loops_needed else "stale"


def seed(spec: SeedSpec, *, pages: bool = True) -> dict:
    """Write the whole seed in one transaction (call on an empty, migrated database).
    ``pages=False`` leaves out the pairwise project and the dashboards' rows (a load that only
    labels, like ``make faults``)."""
    from django.db import transaction

    from annotation.models import AnnotationProject, Role
    from annotation.services.projects import membership_add, project_create

    texts = _example_reports()
    with transaction.atomic():
        people = _accounts(spec)
        curator = people["curator"]
        tasks = _tasks_and_nuggets(spec)
        project = project_create(
            name=PROJECT, kind=AnnotationProject.Kind.VERIFY, created_by=curator, tasks=tasks, item_kinds=["nugget"],
            overlap=spec.labels_per_item + 1, description=spec.marker,
        )
        for user in [*people["live"], *people["reviewers"]]:
            membership_add(project=project, user=user, role=Role.ANNOTATOR, actor=curator)
        labels = _prior_labels(project=project, reviewers=people["reviewers"])
        if pages:
            _pairwise(curator=curator, annotators=people["live"], tasks=tasks[:PAIRWISE_TASKS], texts=texts)
            _dashboards(spec)
    maintain()
    return {"items": project.items.count(), "labels": labels}


def maintain() -> None:
    """What autovacuum does for a running PostgreSQL: clear the rows earlier loads left dead
    and gather the planner's statistics (SQLite: the statistics). Run after the seed and before
    every measurement: each loop rewrites its item's row (a new entry in the claim order's
    index), and a server with autovacuum off (as some test machines run) would otherwise
    measure a table growing more bloated run after run, or estimates of an empty database."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)" if connection.vendor == "postgresql" else "ANALYZE")


def seed_info(spec: SeedSpec) -> dict:
    """What the load generator needs: project ids, accounts and the database's size."""
    from annotation.models import AnnotationItem, AnnotationProject, Label

    project = AnnotationProject.objects.get(name=PROJECT)
    return {
        "project_id": project.pk,
        "overlap": project.overlap,
        "pairwise_project_id": AnnotationProject.objects.get(name=PAIRWISE_PROJECT).pk,
        "annotators": annotator_names(spec.annotators),
        "probe": PROBE,
        "curator": CURATOR,
        "password": PASSWORD,
        "items": AnnotationItem.objects.count(),
        "labels": Label.objects.count(),
        "open_items": AnnotationItem.objects.filter(project=project, status=AnnotationItem.Status.OPEN).count(),
    }


def overassignment(*, project_id: int) -> dict:
    """Items given to more distinct annotators (labels plus unexpired claims) than the overlap
    allows, and items whose ``labels_done`` differs from their stored labels: both must be 0."""
    from django.db import connection

    from annotation.models import AnnotationItem, AnnotationProject, Assignment, Label

    project = AnnotationProject.objects.get(pk=project_id)
    items, labels, claims = (connection.ops.quote_name(m._meta.db_table) for m in (AnnotationItem, Label, Assignment))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT COUNT(*) FROM (
                  SELECT item_id FROM (
                    SELECT item_id, annotator_id AS who FROM {labels} WHERE project_id = %s
                    UNION
                    SELECT item_id, user_id FROM {claims}
                     WHERE project_id = %s AND status = 'active' AND expires_at > %s
                  ) AS people GROUP BY item_id HAVING COUNT(*) > %s) AS over""",
            [project.pk, project.pk, connection.ops.adapt_datetimefield_value(_now()), project.overlap],
        )
        over = cursor.fetchone()[0]
        cursor.execute(
            f"""SELECT COUNT(*) FROM {items} i
                 WHERE i.project_id = %s
                   AND i.labels_done <> (SELECT COUNT(*) FROM {labels} l WHERE l.item_id = i.id)""",
            [project.pk],
        )
        miscounted = cursor.fetchone()[0]
    return {"over_assigned_items": over, "miscounted_items": miscounted}
