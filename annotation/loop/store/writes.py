"""The loop's hand-written writes: the claims, the labels with the end of their claims, the
items' counters, the decisions' guarded UPDATE and the audit rows (see the package's docstring)."""

import functools
from datetime import datetime

from django.db import connection
from django.db.models import GeneratedField, Model

from benchmark.services.history import ProposableWrites
from core.audit import audit_log_entries
from core.models import AuditLog

from ...models import AnnotationItem, AnnotationProject, Assignment, Label
from .base import _table


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
