"""Hand-written SQL for the annotator loop's hottest reads.

Each of these runs on every workspace request. Building a query through the ORM costs about a
millisecond of Python on a 2-core machine, several times what the database takes to answer
it, and the loop would otherwise spend most of its time there. The SQL is plain enough for
SQLite and PostgreSQL alike; tests run every caller on PostgreSQL, the web bench on both.
"""

from django.db import connection
from django.db.models import Model


def table(model: type[Model]) -> str:
    """``model``'s table name, quoted for this database."""
    return connection.ops.quote_name(model._meta.db_table)


def rows(model: type[Model], sql: str, params: list) -> list:
    """Every ``model`` instance that ``sql`` (``SELECT <alias>.* ...``) returns."""
    return list(model.objects.raw(sql, params))


def first_row(model: type[Model], sql: str, params: list):
    """The first ``model`` instance that ``sql`` (``SELECT <alias>.* ...``) returns, or None.
    Extra selected columns become attributes of the instance."""
    return next(iter(model.objects.raw(sql, params)), None)


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


def joined_columns(model: type[Model], alias: str) -> str:
    """The select list of the row of ``model`` joined as ``alias``, each column renamed
    ``<alias>__<column>`` so it rides along with the main row (``joined_row`` reads it back)."""
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)} AS {quote(f'{alias}__{f.column}')}"
                     for f in model._meta.concrete_fields)


def _instance(model: type[Model], values) -> Model:
    """The ``model`` instance of a row's raw column values (in the order of its concrete
    fields), converted as the ORM converts them (JSON, durations, SQLite's dates and UUIDs)."""
    fields = model._meta.concrete_fields
    converted = []
    for field, value in zip(fields, values):
        column = field.get_col(model._meta.db_table)
        for convert in [*connection.ops.get_db_converters(column), *column.get_db_converters(connection)]:
            value = convert(value, column, connection)
        converted.append(value)
    return model.from_db(connection.alias, [field.attname for field in fields], converted)


def joined_row(row: Model, model: type[Model], alias: str) -> Model:
    """The ``model`` instance that ``joined_columns(model, alias)`` selected along with ``row``."""
    return _instance(model, [getattr(row, f"{alias}__{field.column}") for field in model._meta.concrete_fields])


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
