"""Hand-written SQL for the annotator loop's hottest statements.

Each of these runs on every workspace request. Building a query through the ORM costs about a
millisecond of Python on a 2-core machine, several times what the database takes to answer
it, and the loop would otherwise spend most of its time there. The SQL is plain enough for
SQLite and PostgreSQL alike; tests run every caller on PostgreSQL, the web bench on both.
"""

import weakref

from django.db import connection, connections
from django.db.models import Model


def table(model: type[Model]) -> str:
    """``model``'s table name, quoted for this database."""
    return connection.ops.quote_name(model._meta.db_table)


def rows(model: type[Model], sql: str, params: list) -> list:
    """Every ``model`` instance that ``sql`` (``SELECT <alias>.* ...``: all of the model's
    columns) returns; extra selected columns become attributes of the instance, as the ORM's
    ``raw()`` makes them, without its per-query set-up."""
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
    out = []
    for row in found:
        obj = _instance(model, [row[index] for index in own])
        for index, name in extra:
            setattr(obj, name, row[index])
        out.append(obj)
    return out


def first_row(model: type[Model], sql: str, params: list):
    """The first ``model`` instance that ``sql`` returns (see ``rows``), or None."""
    return next(iter(rows(model, sql, params)), None)


def in_bulk(model: type[Model], pks: list) -> dict:
    """Primary key → the ``model`` row (all its columns) for each of ``pks`` that exists."""
    if not pks:
        return {}
    column = connection.ops.quote_name(model._meta.pk.column)
    found = rows(model, f"SELECT * FROM {table(model)} WHERE {column} IN ({', '.join(['%s'] * len(pks))})", list(pks))
    return {row.pk: row for row in found}


def by_pk(model: type[Model], pk, *, lock: str = ""):
    """The ``model`` row with primary key ``pk`` (all its columns), or None; ``lock``: a
    locking clause for the end of the query (see ``services.locking``)."""
    column = connection.ops.quote_name(model._meta.pk.column)
    return first_row(model, f"SELECT * FROM {table(model)} WHERE {column} = %s {lock}", [pk])


def scalar_row(sql: str, params: list) -> tuple:
    """The one row of an aggregate ``sql`` (counts, say), as a tuple."""
    return value_rows(sql, params)[0]


def value_rows(sql: str, params: list) -> list[tuple]:
    """Every row of ``sql`` as a tuple (grouped counts, say)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def joined_columns(model: type[Model], alias: str, *, omit: tuple[str, ...] = ()) -> str:
    """The select list of the row of ``model`` joined as ``alias``, each column renamed
    ``<alias>__<column>`` so it rides along with the main row (``joined_row`` reads it back).
    ``omit``: fields left unread (deferred on the instance)."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)} AS {quote(f'{alias}__{f.column}')}"
                     for f in _fields(model, omit))


def _fields(model: type[Model], omit: tuple[str, ...]) -> list:
    return [f for f in model._meta.concrete_fields if f.name not in omit]


# Per database connection (Django keeps one per thread) and model: each concrete field's column
# and the functions that turn its raw value into the field's, as the ORM would find them for
# every row. Found once, they cost nothing per row.
_CONVERTERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _field_converters(model: type[Model], omit: tuple[str, ...] = ()):
    """The connection of this thread (not its proxy, whose every attribute costs a lookup),
    ``model``'s attribute names and each concrete field's column with its converters (but
    the ``omit`` fields')."""
    wrapper = connections[connection.alias]
    by_model = _CONVERTERS.get(wrapper)
    if by_model is None:
        by_model = _CONVERTERS[wrapper] = {}
    found = by_model.get((model, omit))
    if found is None:
        fields = _fields(model, omit)
        columns = [field.get_col(model._meta.db_table) for field in fields]
        found = by_model[(model, omit)] = (
            wrapper,
            [field.attname for field in fields],
            [(column, [*wrapper.ops.get_db_converters(column), *column.get_db_converters(wrapper)])
             for column in columns],
        )
    return found


def _instance(model: type[Model], values, omit: tuple[str, ...] = ()) -> Model:
    """The ``model`` instance of a row's raw column values (in the order of its concrete
    fields but ``omit``, which are deferred), converted as the ORM converts them (JSON,
    durations, SQLite's dates and UUIDs)."""
    wrapper, attnames, converters = _field_converters(model, omit)
    converted = []
    for (column, functions), value in zip(converters, values):
        for convert in functions:
            value = convert(value, column, wrapper)
        converted.append(value)
    return model.from_db(wrapper.alias, attnames, converted)


def joined_row(row: Model, model: type[Model], alias: str, *, omit: tuple[str, ...] = ()) -> Model:
    """The ``model`` instance that ``joined_columns(model, alias, omit=omit)`` selected along
    with ``row``."""
    return _instance(model, [getattr(row, f"{alias}__{field.column}") for field in _fields(model, omit)], omit)


def union_rows(parts: list[tuple[type[Model], str, list]]) -> list[list]:
    """The rows of several tables read in one statement: per ``(model, where, params)`` part, the
    ``model`` instances whose rows match ``where`` (the SQL after WHERE). A UNION ALL in which
    each branch fills its own model's columns and leaves the other parts' NULL."""
    quote = connection.ops.quote_name
    widths = [len(model._meta.concrete_fields) for model, _, _ in parts]
    branches, params = [], []
    for index, (model, where, args) in enumerate(parts):
        columns = [
            quote(field.column) if other is index else "NULL"
            for other, (other_model, _, _) in enumerate(parts) for field in other_model._meta.concrete_fields
        ]
        branches.append(f"SELECT {index} AS part, {', '.join(columns)} FROM {table(model)} WHERE {where}")
        params += args
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(branches), params)
        found = cursor.fetchall()
    out: list[list] = [[] for _ in parts]
    for row in found:
        part = row[0]
        start = 1 + sum(widths[:part])
        out[part].append(_instance(parts[part][0], row[start:start + widths[part]]))
    return out


def update_sql(model: type[Model], objs: list[Model], fields: list[str], *,
               as_read: tuple[str, dict] | None = None) -> tuple[str, list]:
    """The UPDATE of ``fields`` of ``objs`` (at least one) in one statement, each row to its
    instance's values: what the ORM's ``bulk_update`` writes, without building its ``CASE``
    expressions. ``as_read``: a field and, per primary key, the value the row must still hold
    in it to be written (the version it was read at). Its SQL and params."""
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
    if as_read:
        field, read = model._meta.get_field(as_read[0]), as_read[1]
        where = " OR ".join([f"({pk} = %s AND {quote(field.column)} = %s)"] * len(objs))
        params += [v for obj in objs for v in (obj.pk, field.get_db_prep_value(read[obj.pk], connection))]
    else:
        where = f"{pk} IN ({', '.join(['%s'] * len(objs))})"
        params += [obj.pk for obj in objs]
    return f"UPDATE {table(model)} SET {', '.join(sets)} WHERE {where}", params


def update_rows(model: type[Model], objs: list[Model], fields: list[str], *,
                as_read: tuple[str, dict] | None = None) -> int:
    """Run ``update_sql``; how many rows it wrote."""
    if not objs:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(*update_sql(model, objs, fields, as_read=as_read))
        return cursor.rowcount


def insert_rows(model: type[Model], objs: list[Model], *, along: tuple[str, list] | None = None) -> None:
    """INSERT ``objs`` (new instances) and set their primary keys: the ORM's ``bulk_create``,
    without building its query (``RETURNING`` on both databases). ``along``: a data-modifying
    statement and its params to run with it, in the same statement on PostgreSQL (a ``WITH``
    ahead of the INSERT: one round trip fewer), just before it on SQLite (no round trip there)."""
    if not objs:
        return
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
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
            cursor.execute(f"{prefix}INSERT INTO {table(model)} ({columns}) VALUES {values} RETURNING {quote(pk.column)}",
                           [*prefix_params, *params])
            ids = [row[0] for row in cursor.fetchall()]
        prefix, prefix_params = "", []
        for obj, pk_value in zip(batch, ids):
            obj.pk = pk_value
            obj._state.adding, obj._state.db = False, connection.alias
