"""The loop's hand-written reads: the claim read, the locked items, the union of their labels
and claims, the progress counts and the task's settlement (see the package's docstring)."""

import functools
import uuid
from datetime import datetime

from django.db import connection
from django.db.models import Model

from benchmark.models import SETTLED_STATUSES, Task

from ...models import (
    VERIFY_TARGETS,
    AnnotationItem,
    AnnotationProject,
    Assignment,
    Label,
    ProjectMembership,
    TargetKind,
)
from ..rows import instances
from .base import (
    _lock_clause,
    _table,
    _rows,
    _joined_columns,
    _joined_row,
    kinds_remember,
    _kinds_of,
    _target_join,
    joined_target,
)


# --- The statements -------------------------------------------------------------------------------


def claimable_items(*, project: AnnotationProject, user, now: datetime, passed_over: list[int],
                    limit: int) -> list[AnnotationItem]:
    """The first ``limit`` items of ``project`` in ``rules.claim_order`` that ``rules.may_claim``
    gives ``user`` (``passed_over``: the items they hold), locked, skipping rows another
    transaction holds; each with ``stale`` (it has an expired claim still marked active) and, a
    verify item, its benchmark row as ``target_row``.

    ORM twin: ``AnnotationItem.objects.filter(project=project, status=OPEN).annotate(live=Count(
    "assignments", filter=Q(assignments__status=ACTIVE, assignments__expires_at__gt=now))).filter(
    live__lt=F("labels_needed") - F("labels_done")).exclude(labels__annotator=user).exclude(
    assignments__user=user, assignments__status=SKIPPED).exclude(pk__in=passed_over).order_by(
    F("labels_needed") - F("labels_done"), "labels_done", "position", "id").select_for_update(
    no_key=True, skip_locked=True, of=("self",))[:limit]``, whose ``Count`` groups the rows, which
    PostgreSQL refuses to lock, so the twin counts in a ``Subquery``, and a query per target
    kind. Hand-written: the verify item's benchmark row rides along (a generic relation:
    ``target_kind`` names the table, which no ORM join follows; apart, one query more per
    claim), and the ORDER BY stays the expression of migration 0005's index, which the
    database walks instead of sorting the open items."""
    item, assignment, label = _table(AnnotationItem), _table(Assignment), _table(Label)
    passed = f"AND i.id NOT IN ({', '.join(['%s'] * len(passed_over))})" if passed_over else ""
    joined = [kind for kind in project.item_kinds or () if kind in VERIFY_TARGETS]
    target_columns, target_joins, target_params = _target_join(joined)
    sql = f"""
        SELECT i.*, EXISTS (SELECT 1 FROM {assignment} x WHERE x.item_id = i.id AND x.status = %s
                            AND x.expires_at <= %s) AS stale{target_columns}
        FROM {item} i{target_joins}
        WHERE i.project_id = %s AND i.status = %s
          AND (SELECT COUNT(*) FROM {assignment} a WHERE a.item_id = i.id AND a.status = %s AND a.expires_at > %s)
              < i.labels_needed - i.labels_done
          AND NOT EXISTS (SELECT 1 FROM {label} l WHERE l.item_id = i.id AND l.annotator_id = %s)
          AND NOT EXISTS (SELECT 1 FROM {assignment} s WHERE s.item_id = i.id AND s.user_id = %s AND s.status = %s)
          {passed}
        ORDER BY i.labels_needed - i.labels_done, i.labels_done, i.position, i.id
        LIMIT %s {_lock_clause(of="i", skip_locked=True)}"""
    at = connection.ops.adapt_datetimefield_value(now)
    params = [
        Assignment.Status.ACTIVE, at, *target_params,
        project.pk, AnnotationItem.Status.OPEN, Assignment.Status.ACTIVE, at,
        user.pk, user.pk, Assignment.Status.SKIPPED, *passed_over, limit,
    ]
    found = _rows(AnnotationItem, sql, params)
    for row in found:
        if row.target_kind in joined:
            row.target_row = joined_target(row)
    kinds_remember(found)
    return found


def locked_items(*, item_ids: list[int], annotator) -> dict[int, AnnotationItem]:
    """Lock the items (in id order, so two batches never wait on each other in a cycle), each
    with its project (``item.project``, one instance per project), the annotator's membership
    role in it (``my_role``) and the guidelines version it last showed them
    (``my_guidelines_seen``; both None without membership), and its target row (``target_row``):
    one query, joining the tables of the items' kinds as this process remembers them, again with
    every kind's in the rare case it remembered wrongly (SQLite reuses the ids of a rolled-back
    insert). The project and target rows are read, not locked.

    ORM twin: ``AnnotationItem.objects.select_related("project").annotate(my_role=Subquery(
    membership role), my_guidelines_seen=Subquery(...)).filter(pk__in=ids).order_by("pk")
    .select_for_update(no_key=True, of=("self",))`` and a query per target kind.
    Hand-written: the target is a generic relation (``target_kind`` names its table), which no
    ORM join follows; read apart, each label would cost one query more."""
    item, project, membership = (_table(m) for m in (AnnotationItem, AnnotationProject, ProjectMembership))
    ids = sorted(set(item_ids))

    def read(kinds) -> dict[int, AnnotationItem]:
        target_columns, target_joins, target_params = _target_join(kinds)
        sql = (
            f"SELECT i.*, {_joined_columns(AnnotationProject, 'p')}{target_columns},"
            f" (SELECT m.role FROM {membership} m WHERE m.project_id = i.project_id AND m.user_id = %s) AS my_role,"
            f" (SELECT m.guidelines_seen FROM {membership} m WHERE m.project_id = i.project_id AND m.user_id = %s)"
            " AS my_guidelines_seen"
            f" FROM {item} i JOIN {project} p ON p.id = i.project_id{target_joins}"
            f" WHERE i.id IN ({', '.join(['%s'] * len(ids))}) ORDER BY i.id {_lock_clause(of='i')}"
        )
        return {row.pk: row for row in _rows(AnnotationItem, sql, [annotator.pk, annotator.pk, *target_params, *ids])}

    kinds = _kinds_of(ids)
    items = read(kinds)
    if any(row.target_kind not in kinds for row in items.values()):
        items = read(TargetKind.values)
    projects: dict[int, AnnotationProject] = {}
    for row in items.values():
        if row.project_id not in projects:  # one instance per project, made once (its JSON columns parsed once)
            projects[row.project_id] = _joined_row(row, AnnotationProject, "p")
        row.project = projects[row.project_id]
        row.target_row = joined_target(row)
    kinds_remember(items.values())
    return items


def labels_and_claims(
    *, items: list[AnnotationItem], annotator, tokens: list[uuid.UUID], held_in: list[int] = (),
) -> tuple[list[Label], list[Assignment]]:
    """The union read, under the items' locks: every label of the items (at most k each: what
    completes them) and the annotator's labels made with these forms (``tokens``:
    resubmissions), in ``created_at`` order; and the items' active claims, expired or not (with
    the annotator's other active claims in the projects ``held_in``, for the claim that follows).

    ORM twin: ``Label.objects.filter(Q(item__in=items) | Q(annotator=annotator,
    client_token__in=tokens)).order_by("created_at", "id")`` and ``Assignment.objects.filter(
    Q(item__in=items) | Q(user=annotator, project__in=held_in), status=ACTIVE)``. Hand-written:
    one ``UNION ALL`` where the ORM takes two round trips (its ``union()`` needs the same columns
    on both sides); each label pays for it."""
    token_field = Label._meta.get_field("client_token")
    tokens_db = [token_field.get_db_prep_value(t, connection) for t in tokens]
    item_marks = ", ".join(["%s"] * len(items))
    label_where = f"item_id IN ({item_marks})"
    label_params = [i.pk for i in items]
    if tokens_db:
        label_where += f" OR (annotator_id = %s AND client_token IN ({', '.join(['%s'] * len(tokens_db))}))"
        label_params += [annotator.pk, *tokens_db]
    claim_where = f"item_id IN ({item_marks})"
    claim_params: list = [i.pk for i in items]
    if held_in:
        claim_where = f"({claim_where} OR (user_id = %s AND project_id IN ({', '.join(['%s'] * len(held_in))})))"
        claim_params += [annotator.pk, *held_in]
    labels, claims = _union_rows([
        (Label, label_where, label_params),
        (Assignment, f"{claim_where} AND status = %s", [*claim_params, Assignment.Status.ACTIVE]),
    ])
    return sorted(labels, key=lambda label: (label.created_at, label.pk)), claims


def own_counts(*, project_id: int, user_id: int) -> tuple[int, int]:
    """The workspace's progress line, on every request: the user's labels and skips in the
    project, in one statement of two counts.

    ORM twin: ``labelling_counts(project_ids=[project_id], user=user)`` (``annotation.selectors.
    progress``: a ``union()`` of two aggregates), its ``labels`` and ``skips``. Hand-written:
    compiling that union costs ~0.8 ms of CPU per request, the statement itself ~0.05 ms."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT COUNT(*) FROM {_table(Label)} WHERE project_id = %s AND annotator_id = %s),"
            f" (SELECT COUNT(*) FROM {_table(Assignment)} WHERE project_id = %s AND user_id = %s AND status = %s)",
            [project_id, user_id, project_id, user_id, Assignment.Status.SKIPPED],
        )
        labels, skips = cursor.fetchone()
    return labels, skips


def _union_rows(parts: list[tuple[type[Model], str, list]]) -> list[list]:
    """Per ``(model, where, params)`` part, the ``model`` instances whose rows match ``where``,
    read in one ``UNION ALL`` in which each branch fills its own model's columns and leaves the
    other parts' NULL."""
    widths = [len(model._meta.concrete_fields) for model, _, _ in parts]
    selects = _union_selects(connection.vendor, tuple(model for model, _, _ in parts))
    branches, params = [], []
    for select, (_, where, args) in zip(selects, parts):
        branches.append(f"{select} WHERE {where}")
        params += args
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(branches), params)
        found = cursor.fetchall()
    values: list[list] = [[] for _ in parts]
    for row in found:
        start = 1 + sum(widths[:row[0]])
        values[row[0]].append(row[start:start + widths[row[0]]])
    return [instances(model, part) for (model, _, _), part in zip(parts, values)]


@functools.cache
def _union_selects(vendor: str, models: tuple[type[Model], ...]) -> tuple[str, ...]:
    """Per model, its ``_union_rows`` branch up to its WHERE: its own columns, NULL for the others'."""
    quote = connection.ops.quote_name
    return tuple(
        "SELECT {} AS part, {} FROM {}".format(index, ", ".join(
            quote(field.column) if other is index else "NULL"
            for other, other_model in enumerate(models) for field in other_model._meta.concrete_fields), _table(model))
        for index, model in enumerate(models)
    )


def _proposables_exist(kinds, *, unsettled: bool) -> tuple[str, list]:
    """Whether the task row aliased ``t`` has proposables of any of ``kinds`` (not settled,
    ``unsettled``): an ``EXISTS`` per kind, walking its path to the task (``VERIFY_TARGETS``) as
    joins; false for no kind."""
    sql, params = _proposables_exist_sql(connection.vendor, tuple(kinds), unsettled)
    return sql, list(params)


@functools.cache
def _proposables_exist_sql(vendor: str, kinds: tuple[str, ...], unsettled: bool) -> tuple[str, tuple]:
    parts, params = [], []
    for kind in kinds:
        model, path = VERIFY_TARGETS[kind]
        table, joins, alias = _table(model), [], "x"
        for step, name in enumerate(path.split("__")):
            field = model._meta.get_field(name)
            if field.related_model is Task:
                break
            joins.append(f" JOIN {_table(field.related_model)} x{step} ON x{step}.id = {alias}.{field.column}")
            model, alias = field.related_model, f"x{step}"
        status = f" AND x.review_status NOT IN ({', '.join(['%s'] * len(SETTLED_STATUSES))})" if unsettled else ""
        parts.append(f"EXISTS (SELECT 1 FROM {table} x{''.join(joins)} WHERE {alias}.{field.column} = t.id{status})")
        params += sorted(SETTLED_STATUSES) if unsettled else []
    return (f"({' OR '.join(parts)})" if parts else "1 = 0"), tuple(params)


def task_settlement(*, task_id: int, kind: str = "") -> tuple[Task, bool]:
    """The task, locked (PostgreSQL: in a statement of its own, so that the reads after it see
    what committed while the lock was awaited), and whether every one of its proposables is
    settled (and it has one). ``kind``: the kind of proposal just settled; while another of that
    kind is unsettled, the task's read answers alone, else every kind is checked in one more.

    ORM twin: ``Task.objects.select_for_update(no_key=True).filter(pk=task_id)``, then
    ``.annotate(kind_unsettled=Exists(model.objects.filter(**{path: OuterRef("pk")}).exclude(
    review_status__in=SETTLED_STATUSES)))`` and ``.annotate(present=Exists(...) | ...,
    unsettled=Exists(...) | ...)`` over every kind. Hand-written: it runs for every agreed
    review, and building those ``Exists`` through the ORM cost 3.7 ms a call against 0.45 ms
    hand-written (cProfile, the web bench's workspace loop on its 10,000-item SQLite seed)."""
    if _lock_clause():
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {_table(Task)} WHERE id = %s {_lock_clause()}", [task_id])
    same_kind, params = _proposables_exist([kind] if kind in VERIFY_TARGETS else [], unsettled=True)
    task = _rows(Task, f"SELECT t.*, {same_kind} AS kind_unsettled FROM {_table(Task)} t WHERE t.id = %s",
                 [*params, task_id])[0]
    if task.kind_unsettled or task.status in (Task.Status.CURATED, Task.Status.RETIRED):
        return task, False  # the caller reads a curated or retired task's status alone
    (present, present_params), (unsettled, unsettled_params) = (
        _proposables_exist(VERIFY_TARGETS, unsettled=flag) for flag in (False, True))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {present}, {unsettled} FROM {_table(Task)} t WHERE t.id = %s",
                       [*present_params, *unsettled_params, task_id])
        has_any, has_unsettled = cursor.fetchone()
    return task, bool(has_any) and not has_unsettled
