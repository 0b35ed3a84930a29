"""What the loop's statements share: the locks, raw rows into instances, the SQL texts built
once per process, and an item's target row joined to it (``joined_target``)."""

import functools

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import Model

from benchmark.models import BibEntry, GoldReference, Report
from scoring.models import Verdict

from ...models import VERIFY_TARGETS, AnnotationItem, ReportPair, TargetKind
from ..rows import fields_of, instance, instances

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
