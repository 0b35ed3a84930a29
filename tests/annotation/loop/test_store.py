"""The loop's hand-written SQL (``annotation.loop.store``) held to the rules it states again
(``annotation.rules``) and to its ORM twin (the oracle), on random states: items at any
labels_done of any k, open or complete; live, expired and ended claims by several users; the
user's own labels and skips."""

import uuid
from datetime import timedelta
from functools import reduce
from operator import or_

import pytest
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import rules
from annotation.loop import store
from annotation.models import VERIFY_TARGETS, AnnotationItem, Assignment, Label, ProjectMembership, TargetKind
from annotation.selectors.targets import item_target
from tests.annotation_factories import agreement_project, annotator, checklist_task, verify_project

N_ITEMS = 5
ACTIVE, SKIPPED = Assignment.Status.ACTIVE, Assignment.Status.SKIPPED
CLAIM_STATUSES = [ACTIVE, Assignment.Status.EXPIRED, Assignment.Status.SUBMITTED, Assignment.Status.RELEASED,
                  SKIPPED, Assignment.Status.UNDONE]

# One item's state: k, labels_done, complete or not, position, whether the user (user 0) labelled
# it, and its claims as (user 0..3, status, expired or not).
claim_state = st.tuples(st.integers(0, 3), st.sampled_from(CLAIM_STATUSES), st.booleans())
item_state = st.integers(1, 3).flatmap(lambda k: st.fixed_dictionaries({
    "k": st.just(k), "done": st.integers(0, k), "complete": st.booleans(), "position": st.integers(0, 3),
    "labelled": st.booleans(), "claims": st.lists(claim_state, max_size=4),
}))
loop_state = st.fixed_dictionaries({
    "items": st.lists(item_state, min_size=N_ITEMS, max_size=N_ITEMS),
    "passed_over": st.lists(st.integers(0, N_ITEMS - 1), unique=True, max_size=2),
    "limit": st.integers(1, N_ITEMS),
})
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(params=["agreement", "verify"])
def loop(request, owner):
    """A project of ``N_ITEMS`` items, its four annotators (the first is the user), and a moment."""
    users = [annotator(f"user{n}") for n in range(4)]
    if request.param == "verify":  # its claim read joins each item's benchmark row
        task, _ = checklist_task(N_ITEMS)
        project = verify_project(owner, users, tasks=[task])
    else:
        project = agreement_project(owner, users, labels=["correct"] * N_ITEMS)
    return project, users, list(project.items.order_by("pk")), timezone.now()


def _apply(state, project, users, items, now) -> list[AnnotationItem]:
    """Give the items the state's columns, labels and claims; the items as stored."""
    for item, wanted in zip(items, state["items"]):
        item.labels_needed, item.labels_done, item.position = wanted["k"], wanted["done"], wanted["position"]
        item.status = AnnotationItem.Status.COMPLETE if wanted["complete"] else AnnotationItem.Status.OPEN
        item.save()
        if wanted["labelled"]:
            Label.objects.create(project=project, item=item, annotator=users[0], value={"label": "correct"},
                                 client_token=uuid.uuid4())
        skipped = set()
        for user, status, expired in wanted["claims"]:
            if status == SKIPPED and user in skipped:
                continue  # one skip per user and item (``assignment_one_skip``)
            skipped.add(user) if status == SKIPPED else None
            expires = now + (timedelta(minutes=-5) if expired else timedelta(minutes=5))
            Assignment.objects.create(project=project, item=item, user=users[user], status=status,
                                      claimed_at=now - timedelta(minutes=10), expires_at=expires)
    return list(AnnotationItem.objects.filter(pk__in=[i.pk for i in items]).order_by("pk"))


def _live_claims(item, now) -> int:
    return sum(rules.claim_live(status=c.status, expires_at=c.expires_at, now=now) for c in item.assignments.all())


def _claimable_by_rules(items, user, now, passed_over, limit) -> list[int]:
    allowed = [
        item for item in items
        if rules.may_claim(
            item_status=item.status, labels_done=item.labels_done, labels_needed=item.labels_needed,
            live_claims=_live_claims(item, now),
            labelled=item.labels.filter(annotator=user).exists(),
            skipped=item.assignments.filter(user=user, status=SKIPPED).exists(),
            held=item.pk in passed_over,
        )
    ]
    order = [rules.claim_order(labels_needed=item.labels_needed, labels_done=item.labels_done,
                               position=item.position, pk=item.pk) for item in allowed]
    return [pk for *_, pk in sorted(order)][:limit]


def _claimable_twin(project, user, now, passed_over, limit) -> list[int]:
    """The ORM twin named in ``store.claimable_items``' docstring."""
    live = Subquery(Assignment.objects.filter(item=OuterRef("pk"), status=ACTIVE, expires_at__gt=now).order_by()
                    .values("item").annotate(n=Count("pk")).values("n"))
    rows = (
        AnnotationItem.objects.filter(project=project, status=AnnotationItem.Status.OPEN)
        .annotate(live=Coalesce(live, 0)).filter(live__lt=F("labels_needed") - F("labels_done"))
        .exclude(Exists(Label.objects.filter(item=OuterRef("pk"), annotator=user)))
        .exclude(Exists(Assignment.objects.filter(item=OuterRef("pk"), user=user, status=SKIPPED)))
        .exclude(pk__in=passed_over)
        .order_by(F("labels_needed") - F("labels_done"), "labels_done", "position", "id")
    )
    return list(rows.values_list("pk", flat=True)[:limit])


def _in_savepoint(check):
    with transaction.atomic():
        check()
        transaction.set_rollback(True)


@given(state=loop_state)
@PROPERTY
def test_the_claim_read_selects_what_the_rules_say_and_what_its_orm_twin_selects(loop, state):
    project, users, items, now = loop

    def check():
        rows = _apply(state, project, users, items, now)
        passed_over = [rows[n].pk for n in state["passed_over"]]
        found = store.claimable_items(project=project, user=users[0], now=now, passed_over=passed_over,
                                      limit=state["limit"])
        ids = [row.pk for row in found]
        assert ids == _claimable_by_rules(rows, users[0], now, passed_over, state["limit"])
        assert ids == _claimable_twin(project, users[0], now, passed_over, state["limit"])
        for row in found:  # an expired claim still marked active is found on the way
            assert bool(row.stale) == item_of(rows, row.pk).assignments.filter(status=ACTIVE,
                                                                               expires_at__lte=now).exists()
            if project.kind == "verify":  # its benchmark row rides along, every column as the ORM reads it
                assert _columns(row.target_row) == _columns(item_target(row))

    _in_savepoint(check)


def item_of(rows, pk):
    return next(row for row in rows if row.pk == pk)


@given(state=loop_state)
@PROPERTY
def test_the_claims_insert_claims_where_the_rules_see_a_free_slot_as_its_orm_twin(loop, state):
    project, users, items, now = loop
    claimed = {}

    def statement():
        rows = _apply(state, project, users, items, now)
        expected = [row.pk for row in rows if rules.has_free_slot(
            item_status=row.status, labels_done=row.labels_done, labels_needed=row.labels_needed,
            live_claims=_live_claims(row, now))]
        claims = store.claims_insert(project=project, items=rows, user=users[0], now=now)
        claimed["statement"] = sorted(claim.item_id for claim in claims)
        assert claimed["statement"] == expected
        for claim in claims:  # as stored
            stored = Assignment.objects.get(pk=claim.pk)
            assert (stored.user_id, stored.status, stored.expires_at) == (users[0].pk, ACTIVE,
                                                                          now + project.hold_duration)

    def twin():
        rows = _apply(state, project, users, items, now)
        free = [row for row in rows if row.status == AnnotationItem.Status.OPEN and row.labels_done + Assignment.objects
                .filter(item=row, status=ACTIVE, expires_at__gt=now).count() < row.labels_needed]
        made = Assignment.objects.bulk_create([
            Assignment(project=project, item=row, user=users[0], claimed_at=now, status=ACTIVE,
                       expires_at=now + project.hold_duration) for row in free])
        claimed["twin"] = sorted(claim.item_id for claim in made)

    _in_savepoint(statement)
    _in_savepoint(twin)
    assert claimed["statement"] == claimed["twin"]


@given(state=loop_state, with_held=st.booleans(), own_tokens=st.integers(0, 2), subset=st.integers(1, N_ITEMS))
@PROPERTY
def test_the_union_read_reads_what_its_orm_twin_reads(loop, state, with_held, own_tokens, subset):
    project, users, items, now = loop

    def check():
        rows = _apply(state, project, users, items, now)
        asked = rows[:subset]
        tokens = list(Label.objects.filter(annotator=users[0]).values_list("client_token", flat=True)[:own_tokens])
        tokens.append(uuid.uuid4())  # a new form
        held_in = [project.pk] if with_held else []
        labels, claims = store.labels_and_claims(items=asked, annotator=users[0], tokens=tokens, held_in=held_in)
        twin_labels = Label.objects.filter(Q(item__in=asked) | Q(annotator=users[0], client_token__in=tokens))
        twin_claims = Assignment.objects.filter(Q(item__in=asked) | Q(user=users[0], project__in=held_in),
                                                status=ACTIVE)
        assert [label.pk for label in labels] == list(twin_labels.order_by("created_at", "id").values_list("pk", flat=True))
        assert sorted(c.pk for c in claims) == sorted(twin_claims.values_list("pk", flat=True))
        for label in labels:  # every column as the ORM reads it
            assert _columns(label) == _columns(Label.objects.get(pk=label.pk))
        for claim in claims:
            assert _columns(claim) == _columns(Assignment.objects.get(pk=claim.pk))

    _in_savepoint(check)


@given(state=loop_state)
@PROPERTY
def test_the_progress_counts_count_what_their_orm_twin_counts(loop, state):
    """``own_counts`` against ``labelling_counts`` (its twin, the oracle) for every user of a
    random state: labels, skips among claims of every status, nothing of another project."""
    from annotation.selectors.progress import labelling_counts

    project, users, items, now = loop

    def check():
        _apply(state, project, users, items, now)
        for user in users:
            twin = labelling_counts(project_ids=[project.pk], user=user).get((project.pk, user.pk), {})
            counted = store.own_counts(project_id=project.pk, user_id=user.pk)
            assert counted == (twin.get("labels", 0), twin.get("skips", 0))
        assert store.own_counts(project_id=project.pk + 1000, user_id=users[0].pk) == (0, 0)

    _in_savepoint(check)


def _columns(row) -> dict:
    return {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}


@given(state=loop_state, counts=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=N_ITEMS,
                                         max_size=N_ITEMS))
@PROPERTY
def test_the_counter_update_writes_what_bulk_update_writes(loop, state, counts):
    project, users, items, now = loop
    written = {}
    fields = ["labels_done", "status", "completed_at", "disagreement", "conflict"]

    def write(how):
        def run():
            rows = [row for row in _apply(state, project, users, items, now)]
            for row, (done, complete) in zip(rows, counts):
                row.labels_done = min(done, row.labels_needed)
                if complete:
                    row.status, row.completed_at, row.disagreement = AnnotationItem.Status.COMPLETE, now, True
                    row.conflict = "the row moved"
            changed = rows[::2]
            if how == "statement":
                store.items_count(changed, fields)
            else:
                AnnotationItem.objects.bulk_update(changed, fields)
            written[how] = [_columns(row) for row in AnnotationItem.objects.filter(pk__in=[i.pk for i in items])
                            .order_by("pk")]
        return run

    _in_savepoint(write("statement"))
    _in_savepoint(write("twin"))
    assert written["statement"] == written["twin"]


@given(state=loop_state)
@PROPERTY
def test_the_labels_insert_ending_claims_writes_what_bulk_create_and_bulk_update_write(loop, state):
    project, users, items, now = loop
    written = {}

    def write(how):
        def run():
            rows = _apply(state, project, users, items, now)
            mine = [row for row in rows if not row.labels.filter(annotator=users[1]).exists()]
            claims = list(Assignment.objects.filter(item__in=mine, status=ACTIVE).order_by("pk"))
            ended = claims[::2]
            for claim in ended:
                claim.status, claim.ended_at = Assignment.Status.SUBMITTED, now
            labels = [Label(project=project, item=row, annotator=users[1], value={"label": "omitted", "n": n},
                            client_token=uuid.UUID(int=n + 1), created_at=now, seconds_taken=1.5 * n)
                      for n, row in enumerate(mine)]
            if how == "statement":
                store.labels_insert(labels, ended=ended)
            else:
                Assignment.objects.bulk_update(ended, ["status", "ended_at"])
                Label.objects.bulk_create(labels)
            assert all(label.pk is not None for label in labels)
            assert [_columns(label) for label in labels] == [_columns(Label.objects.get(pk=label.pk)) for label in labels]
            ignore = {"id", "assignment_id"}
            written[how] = (
                [{k: v for k, v in _columns(label).items() if k not in ignore}
                 for label in Label.objects.filter(annotator=users[1]).order_by("client_token")],
                sorted((c.item_id, c.user_id, c.status, str(c.ended_at)) for c in Assignment.objects.filter(
                    item__in=items)),
            )
        return run

    _in_savepoint(write("statement"))
    _in_savepoint(write("twin"))
    assert written["statement"] == written["twin"]


@given(subset=st.lists(st.integers(0, N_ITEMS - 1), min_size=1, unique=True), member=st.booleans(),
       remembered=st.sampled_from([None, *TargetKind.values]))
@PROPERTY
def test_the_locked_items_read_reads_what_its_orm_twin_reads(loop, subset, member, remembered):
    """Each item with its project, the user's membership role and guidelines seen, and its target
    row, whatever kind this process remembers for it (a wrong memory costs a second read)."""
    project, users, items, now = loop

    def check():
        user = users[0]
        if not member:
            ProjectMembership.objects.filter(project=project, user=user).delete()
        asked = [items[n] for n in subset]
        if remembered is not None:
            store.kinds_remember([type("Row", (), {"pk": item.pk, "target_kind": remembered}) for item in asked])
        found = store.locked_items(item_ids=[item.pk for item in asked], annotator=user)
        assert sorted(found) == sorted(item.pk for item in asked)
        membership = ProjectMembership.objects.filter(project=project, user=user).first()
        for pk, row in found.items():
            twin = AnnotationItem.objects.select_related("project").get(pk=pk)
            assert _columns(row) == _columns(twin) and _columns(row.project) == _columns(twin.project)
            assert row.my_role == (membership.role if membership else None)
            assert row.my_guidelines_seen == (membership.guidelines_seen if membership else None)
            assert _columns(row.target_row) == _columns(item_target(twin))

    _in_savepoint(check)


REVIEW_STATUSES = ["proposed", "accepted", "edited", "rejected"]


@given(statuses=st.lists(st.tuples(st.sampled_from(["checklist_group", "checklist_item", "gold_reference"]),
                                   st.sampled_from(REVIEW_STATUSES)), max_size=5),
       kind=st.sampled_from(["", "checklist_item", "gold_reference", "checklist_group"]),
       task_status=st.sampled_from(["in_review", "curated", "retired"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_task_settlement_reads_what_its_orm_twin_reads(db, statuses, kind, task_status):
    """A task's proposables of every kind at random review statuses: settled when it has one
    and none is unsettled; while one of the kind just settled is unsettled, not."""
    from benchmark.models import SETTLED_STATUSES, Task
    from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, GoldReferenceFactory, TaskFactory

    def check():
        task = TaskFactory(status=task_status)
        group = None
        for what, status in statuses:
            if what == "checklist_group" or group is None:
                group = ChecklistGroupFactory(task=task, review_status=status if what == "checklist_group"
                                              else "accepted")
            if what == "checklist_item":
                ChecklistItemFactory(group=group, review_status=status)
            elif what == "gold_reference":
                GoldReferenceFactory(task=task, review_status=status)
        found, settled = store.task_settlement(task_id=task.pk, kind=kind)
        assert _columns(found) == _columns(Task.objects.get(pk=task.pk))

        def exists(kinds, *, unsettled):  # the ORM twin named in the docstring
            parts = []
            for name in kinds:
                model, path = VERIFY_TARGETS[name]
                rows = model.objects.filter(**{path: OuterRef("pk")})
                parts.append(Exists(rows.exclude(review_status__in=SETTLED_STATUSES) if unsettled else rows))
            return reduce(or_, parts)

        twin = Task.objects.filter(pk=task.pk)
        if kind:
            assert found.kind_unsettled == twin.annotate(k=exists([kind], unsettled=True)).values_list("k", flat=True)[0]
        present, unsettled = twin.annotate(p=exists(VERIFY_TARGETS, unsettled=False),
                                           u=exists(VERIFY_TARGETS, unsettled=True)).values_list("p", "u")[0]
        expected = present and not unsettled
        if found.status in ("curated", "retired") or (kind and found.kind_unsettled):
            assert settled is False  # the caller needs no more (a curated or retired task: its status)
        else:
            assert settled == expected
        if kind and found.kind_unsettled:
            assert not expected  # the shortcut never says "not settled" of a settled task

    _in_savepoint(check)
