"""The annotator loop's hand-written SQL: the only module of the project that reads or writes
rows with SQL written by hand (elsewhere only advisory locks and a health probe, which the ORM
has no words for).

Everything else reads and writes through the ORM; an import-linter contract keeps this module
inside ``annotation.loop``. Each statement here is one that the ORM
cannot write as one statement, or writes measurably slower on the loop's every request, and its
docstring names its ORM twin (what it does, as the ORM would do it; the tests hold each statement
to its twin and to ``annotation.rules`` on random states) and why it is hand-written. The SQL is
plain enough for SQLite and PostgreSQL alike.

Row locks: PostgreSQL ``FOR NO KEY UPDATE`` (it does not block inserts that merely reference the
row; ``SKIP LOCKED`` lets concurrent annotators pass over items another transaction is
claiming). SQLite has no row locks: the settings open every transaction with ``BEGIN
IMMEDIATE``, which serializes writers, and the loop refuses to run if that was changed.
"""

import functools
import uuid
from datetime import datetime

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import GeneratedField, Model

from benchmark.models import SETTLED_STATUSES, BibEntry, GoldReference, Report, Task
from benchmark.services.history import ProposableWrites
from core.audit import audit_log_entries
from core.models import AuditLog
from scoring.models import Verdict

from ..models import (
    VERIFY_TARGETS,
    AnnotationItem,
    AnnotationProject,
    Assignment,
    Label,
    ProjectMembership,
    ReportPair,
    TargetKind,
)
from .rows import fields_of, instance, instances

# --- Locks ----------------------------------------------------------------------------------------


def _check_serialized_writers() -> None:
    mode = connection.settings_dict.get("OPTIONS", {}).get("transaction_mode")
    if connection.vendor == "sqlite" and mode != "IMMEDIATE":
        raise ImproperlyConfigured(
            "the annotation workspace needs SQLite transactions in IMMEDIATE mode to serialize writers; "
            "set DATABASES['default']['OPTIONS']['transaction_mode'] = 'IMMEDIATE' (config.settings does this)"
        )


def item_lock(*, item_id: int) -> AnnotationItem:
    """Wait for and lock one item row (inside a transaction): what every claimer and submitter
    of the item takes first. ``AnnotationItem.DoesNotExist`` when there is none. The ORM's."""
    _check_serialized_writers()
    item = AnnotationItem.objects.select_for_update(no_key=True).filter(pk=item_id).first()
    if item is None:
        raise AnnotationItem.DoesNotExist(f"no annotation item {item_id}")
    return item


def _lock_clause(*, of: str = "", skip_locked: bool = False) -> str:
    """The end of a ``SELECT`` that locks the rows it returns (nothing on SQLite, whose
    IMMEDIATE transaction already holds the database's one write lock)."""
    _check_serialized_writers()
    if connection.vendor == "sqlite":
        return ""
    return " ".join(["FOR NO KEY UPDATE", *([f"OF {of}"] if of else []), *(["SKIP LOCKED"] if skip_locked else [])])


# --- Rows of raw results --------------------------------------------------------------------------


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _rows(model: type[Model], sql: str, params: list) -> list:
    """Every ``model`` instance that ``sql`` (``SELECT <alias>.* ...``) returns; extra selected
    columns become attributes of the instance, as the ORM's ``raw()`` makes them, without its
    per-query set-up."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column[0] for column in cursor.description]
        found = cursor.fetchall()
    if not found:
        return []
    where = {name: index for index, name in enumerate(names)}
    own = [where[field.column] for field in model._meta.concrete_fields]
    taken = set(own)
    extra = [(index, name) for index, name in enumerate(names) if index not in taken]
    out = instances(model, [[row[index] for index in own] for row in found])
    for obj, row in zip(out, found):
        for index, name in extra:
            setattr(obj, name, row[index])
    return out


# The SQL around the loop's statements depends only on the models, aliases and kinds named (and
# the database's quoting), not on the request: each text is built once per process (building
# them was ~0.1 ms of CPU per label, issue #39).


@functools.cache
def _joined_names(model: type[Model], alias: str, omit: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{alias}__{field.column}" for field in fields_of(model, omit))


@functools.cache
def _joined_columns_sql(vendor: str, model: type[Model], alias: str, omit: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(field.column)} AS {quote(name)}"
                     for field, name in zip(fields_of(model, omit), _joined_names(model, alias, omit)))


def _joined_columns(model: type[Model], alias: str, *, omit: tuple[str, ...] = ()) -> str:
    """The select list of the row of ``model`` joined as ``alias``, each column renamed
    ``<alias>__<column>`` so it rides along with the main row (``_joined_row`` reads it back)."""
    return _joined_columns_sql(connection.vendor, model, alias, omit)


def _joined_row(row: Model, model: type[Model], alias: str, *, omit: tuple[str, ...] = ()) -> Model:
    return instance(model, [getattr(row, name) for name in _joined_names(model, alias, omit)], omit)


# --- An item's target row, joined -----------------------------------------------------------------

# An item's target kind never changes, so each process remembers those it has seen (items it
# claimed or locked to label): the query that locks items to label them then joins only their
# kinds' tables. PostgreSQL takes ~2 ms to plan a join of every kind's table, ~0.4 ms for one.
_KINDS_SEEN: dict[int, str] = {}
_KINDS_SEEN_MAX = 100_000  # ~10 MiB; forgotten all at once when full (an unknown kind costs only time)


def kinds_remember(items) -> None:
    """Remember the target kinds of ``items`` (``AnnotationItem`` rows)."""
    if len(_KINDS_SEEN) > _KINDS_SEEN_MAX:
        _KINDS_SEEN.clear()
    for item in items:
        _KINDS_SEEN[item.pk] = item.target_kind


def _kinds_of(item_ids) -> list[str]:
    kinds = {_KINDS_SEEN.get(pk) for pk in item_ids}
    return list(TargetKind.values) if None in kinds else sorted(kinds)


def _joined_model(kind: str) -> tuple[type, tuple[str, ...]]:
    if kind == TargetKind.REPORT_PAIR:
        return ReportPair, ()
    if kind == TargetKind.VERDICT:
        return Verdict, ("raw_response",)  # the judge's whole answer: what labelling reads is the label
    if kind == TargetKind.REPORT:  # a rating's report: labelling reads its task, not its text
        return Report, ("text", "parsed", "stats", "sources")
    return VERIFY_TARGETS[kind][0], ()


def _target_join(kinds, *, item: str = "i") -> tuple[str, str, list]:
    """The select list, ``LEFT JOIN`` clauses and params that read the target rows of items of
    ``kinds`` in the items' own query (a generic relation: ``target_kind`` names the table,
    which no ORM join can follow): the verify kinds whole (a gold reference with its bib entry),
    a bare ``ReportPair`` and ``Verdict``: what a label needs. ``joined_target`` reads it back."""
    selects, joins, params = _target_join_sql(connection.vendor, tuple(sorted(set(kinds))), item)
    return selects, joins, list(params)


@functools.cache
def _target_join_sql(vendor: str, kinds: tuple[str, ...], item: str) -> tuple[str, str, tuple[str, ...]]:
    selects, joins, params = [], [], []
    for kind in kinds:
        model, omit = _joined_model(kind)
        alias = f"t_{kind}"
        selects.append(_joined_columns(model, alias, omit=omit))
        joins.append(f" LEFT JOIN {_table(model)} {alias} ON {item}.target_kind = %s AND {alias}.id = {item}.target_id")
        params.append(kind)
        if model is GoldReference:  # what its ``str()`` reads
            selects.append(_joined_columns(BibEntry, f"{alias}_bib"))
            joins.append(f" LEFT JOIN {_table(BibEntry)} {alias}_bib ON {alias}_bib.id = {alias}.bib_entry_id")
    return "".join(f", {s}" for s in selects), "".join(joins), tuple(params)


def joined_target(row: AnnotationItem):
    """The target row that ``_target_join`` read along with the item ``row`` (None: deleted)."""
    model, omit = _joined_model(row.target_kind)
    alias = f"t_{row.target_kind}"
    if getattr(row, f"{alias}__id") is None:
        return None
    target = _joined_row(row, model, alias, omit=omit)
    if model is GoldReference:
        target.bib_entry = _joined_row(row, BibEntry, f"{alias}_bib")
    return target


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


def claims_insert(*, project: AnnotationProject, items: list[AnnotationItem], user, now: datetime) -> list[Assignment]:
    """Claim for ``user`` those of ``items`` (locked by the caller) that ``rules.has_free_slot``
    says still have room, counting the live claims again inside the INSERT, each held for the
    project's hold duration; the claims in id order.

    ORM twin: per item, ``Assignment.objects.filter(item=item, status=ACTIVE, expires_at__gt=now)
    .count()`` and ``Assignment.objects.bulk_create`` of those with a free slot. Hand-written: the
    recount must run in the same statement as the INSERT. The caller's read of the candidates may
    predate a claim that committed while their lock was awaited (PostgreSQL gives each statement
    the snapshot of its start; the lock wait ends before this one starts), so only a count inside
    the INSERT sees it; the ORM writes no ``INSERT ... SELECT``."""
    if not items:
        return []
    item, assignment = _table(AnnotationItem), _table(Assignment)
    at = connection.ops.adapt_datetimefield_value
    expires = now + project.hold_duration
    sql = f"""
        INSERT INTO {assignment} (project_id, item_id, user_id, claimed_at, expires_at, status)
        SELECT i.project_id, i.id, %s, %s, %s, %s FROM {item} i
        WHERE i.id IN ({', '.join(['%s'] * len(items))}) AND i.status = %s
          AND i.labels_done + (SELECT COUNT(*) FROM {assignment} a
                               WHERE a.item_id = i.id AND a.status = %s AND a.expires_at > %s) < i.labels_needed
        ORDER BY i.labels_needed - i.labels_done, i.labels_done, i.position, i.id
        RETURNING id, item_id"""
    params = [user.pk, at(now), at(expires), Assignment.Status.ACTIVE, *(i.pk for i in items),
              AnnotationItem.Status.OPEN, Assignment.Status.ACTIVE, at(now)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        created = sorted(cursor.fetchall())
    by_pk = {i.pk: i for i in items}
    claims = []
    for pk, item_id in created:
        claim = Assignment(pk=pk, project=project, item=by_pk[item_id], user=user, claimed_at=now, expires_at=expires,
                           status=Assignment.Status.ACTIVE)
        claim._state.adding, claim._state.db = False, connection.alias
        claims.append(claim)
    return claims


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


def _written_by_database(model: type[Model], fields) -> list[str]:
    """The fields of ``fields`` whose value the database writes (generated, or a ``db_default``),
    which a hand-written INSERT or UPDATE would overwrite or get wrong."""
    return [f.name for f in fields if isinstance(f, GeneratedField) or getattr(f, "has_db_default", lambda: False)()]


def _update_sql(model: type[Model], objs: list[Model], fields: list[str], *,
                as_read: tuple[str, dict] | None = None) -> tuple[str, list]:
    """The UPDATE of ``fields`` of ``objs`` in one statement, each row to its instance's values:
    the ORM's ``bulk_update`` without building its ``CASE`` expressions. ``as_read``: a field
    and, per primary key, the value the row must still hold in it to be written."""
    refused = _written_by_database(model, [model._meta.get_field(name) for name in fields])
    if refused:
        raise TypeError(f"{model.__name__}: {', '.join(refused)} are written by the database; update them with the ORM")
    quote = connection.ops.quote_name
    pk = quote(model._meta.pk.column)
    casts = connection.features.requires_casted_case_in_updates
    sets, params = [], []
    for name in fields:
        field = model._meta.get_field(name)
        values = [field.get_db_prep_save(getattr(obj, field.attname), connection) for obj in objs]
        if len(objs) == 1:
            sets.append(f"{quote(field.column)} = %s")
            params += values
            continue
        case = f"CASE {pk} {' '.join(['WHEN %s THEN %s'] * len(objs))} END"
        sets.append(f"{quote(field.column)} = {f'CAST({case} AS {field.cast_db_type(connection)})' if casts else case}")
        for obj, value in zip(objs, values):
            params += [obj.pk, value]
    if as_read is None:
        where = f"{pk} IN ({', '.join(['%s'] * len(objs))})"
        params += [obj.pk for obj in objs]
    else:
        field, read = model._meta.get_field(as_read[0]), as_read[1]
        where = " OR ".join([f"({pk} = %s AND {quote(field.column)} = %s)"] * len(objs))
        params += [value for obj in objs for value in (obj.pk, field.get_db_prep_value(read[obj.pk], connection))]
    return f"UPDATE {_table(model)} SET {', '.join(sets)} WHERE {where}", params


def items_count(items: list[AnnotationItem], fields: list[str]) -> None:
    """The counter UPDATE: write ``fields`` (``labels_done`` and what settling changed) of the
    items just labelled, each to its instance's value, in one statement.

    ORM twin: ``AnnotationItem.objects.bulk_update(items, fields)``. Hand-written: building its
    ``CASE`` expressions costs about a millisecond of Python per request, more than the database
    takes to run it; the values are those read under the items' locks."""
    if items:
        with connection.cursor() as cursor:
            cursor.execute(*_update_sql(AnnotationItem, items, fields))


@functools.cache
def _insert_columns(vendor: str, model: type[Model]) -> tuple[list, str]:
    """The fields ``insert_rows`` writes and their column list (a refused model raises each time)."""
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    refused = _written_by_database(model, fields)
    if refused:
        raise TypeError(f"{model.__name__}: {', '.join(refused)} are written by the database; use bulk_create")
    return fields, ", ".join(connection.ops.quote_name(field.column) for field in fields)


def insert_rows(model: type[Model], objs: list[Model], *, along: tuple[str, list] | None = None) -> None:
    """INSERT ``objs`` (new instances) and set their primary keys, as the ORM's ``bulk_create``
    does (``RETURNING`` on both databases). ``along``: a data-modifying statement to run with it,
    in the same statement on PostgreSQL (a ``WITH`` ahead of the INSERT), just before it on
    SQLite (no round trip there). Refuses models with fields the database writes (generated,
    ``db_default``), which ``bulk_create`` handles and this does not."""
    if not objs:
        return
    fields, columns = _insert_columns(connection.vendor, model)
    quote = connection.ops.quote_name
    pk = model._meta.pk
    prefix, prefix_params = "", []
    if along is not None and connection.vendor == "postgresql":
        prefix, prefix_params = f"WITH along AS ({along[0]}) ", along[1]
    elif along is not None:
        with connection.cursor() as cursor:
            cursor.execute(*along)
    size = connection.ops.bulk_batch_size(fields, objs) or len(objs)
    for start in range(0, len(objs), size):
        batch = objs[start:start + size]
        values = ", ".join([f"({', '.join(['%s'] * len(fields))})"] * len(batch))
        params = [field.get_db_prep_save(field.pre_save(obj, add=True), connection) for obj in batch for field in fields]
        with connection.cursor() as cursor:
            cursor.execute(f"{prefix}INSERT INTO {_table(model)} ({columns}) VALUES {values} RETURNING {quote(pk.column)}",
                           [*prefix_params, *params])
            ids = [row[0] for row in cursor.fetchall()]
        prefix, prefix_params = "", []
        for obj, pk_value in zip(batch, ids):
            obj.pk = pk_value
            obj._state.adding, obj._state.db = False, connection.alias


def labels_insert(labels: list[Label], *, ended: list[Assignment]) -> None:
    """Insert the labels (their ids set) and end the claims they were made under (``ended``,
    each with its ``status`` and ``ended_at`` set): the WITH that ends claims.

    ORM twin: ``Assignment.objects.bulk_update(ended, ["status", "ended_at"])`` and
    ``Label.objects.bulk_create(labels)``. Hand-written: one round trip on PostgreSQL where the
    ORM takes two, without building either query (a millisecond of Python per label)."""
    along = _update_sql(Assignment, ended, ["status", "ended_at"]) if ended else None
    insert_rows(Label, labels, along=along)


def proposables_update_as_read(model: type[Model], rows: list[Model], fields: list[str],
                               read_versions: dict[int, int]) -> int:
    """Write ``fields`` of the benchmark rows a decision changed (``rows``, one model), each only
    while it is still at the version it was read at (``read_versions``); how many it wrote.

    ORM twin: ``benchmark.services.history.ORM_WRITES.update_as_read`` (``filter(Q(pk=…,
    version=…) | …).update(…)``, a ``CASE`` per field for several rows). Hand-written: an agreed
    label writes one on most items, and building the ORM's query cost more CPU than the rest of
    the write (issue #39)."""
    if not rows:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(*_update_sql(model, rows, fields, as_read=("version", read_versions)))
        return cursor.rowcount


def audit_rows_insert(rows: list[dict]) -> list[AuditLog]:
    """Write audit rows (``core.audit.audit_log_rows``' dicts) in one INSERT, inside the
    transaction of the change they record: the claims the loop writes outside a label's request.

    ORM twin: ``core.audit.audit_log_rows(rows)`` (``bulk_create``, which on PostgreSQL sends
    several rows as arrays, each JSON value quoted into an array literal). Hand-written: the
    ``INSERT`` of ``insert_rows``, as the loop's other audit rows (``PROPOSABLE_WRITES``)."""
    entries = audit_log_entries(rows)
    insert_rows(AuditLog, entries)
    return entries


# How ``benchmark.services.history.proposable_edits_save`` writes the loop's decisions and its
# audit rows (an ``AuditLog`` INSERT per request): these statements, held to ``ORM_WRITES``.
PROPOSABLE_WRITES = ProposableWrites(update_as_read=proposables_update_as_read, insert=insert_rows)


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
