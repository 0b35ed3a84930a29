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
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()
