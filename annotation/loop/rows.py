"""Raw column values into model instances, as the ORM converts them (JSON, durations, SQLite's
dates and UUIDs), for the rows ``loop.store`` reads with its hand-written SQL. No SQL here."""

import weakref

from django.db import connection, connections
from django.db.models import Model


def fields_of(model: type[Model], omit: tuple[str, ...] = ()) -> list:
    """``model``'s concrete fields but ``omit``, in the order a ``SELECT *`` reads them."""
    return [f for f in model._meta.concrete_fields if f.name not in omit]


# Per database connection (Django keeps one per thread) and model: each concrete field's column
# and the functions that turn its raw value into the field's, as the ORM would find them for
# every row. Found once, they cost nothing per row.
_CONVERTERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _field_converters(model: type[Model], omit: tuple[str, ...] = ()):
    wrapper = connections[connection.alias]
    by_model = _CONVERTERS.get(wrapper)
    if by_model is None:
        by_model = _CONVERTERS[wrapper] = {}
    found = by_model.get((model, omit))
    if found is None:
        fields = fields_of(model, omit)
        columns = [field.get_col(model._meta.db_table) for field in fields]
        found = by_model[(model, omit)] = (
            wrapper,
            [field.attname for field in fields],
            [(column, [*wrapper.ops.get_db_converters(column), *column.get_db_converters(wrapper)])
             for column in columns],
        )
    return found


def instance(model: type[Model], values, omit: tuple[str, ...] = ()) -> Model:
    """The ``model`` instance of a row's raw column values (in the order of its concrete fields
    but ``omit``, which are deferred), converted as the ORM converts them."""
    wrapper, attnames, converters = _field_converters(model, omit)
    converted = []
    for (column, functions), value in zip(converters, values):
        for convert in functions:
            value = convert(value, column, wrapper)
        converted.append(value)
    return model.from_db(wrapper.alias, attnames, converted)


def instances(model: type[Model], rows: list, omit: tuple[str, ...] = ()) -> list[Model]:
    """``instance`` of each row's raw column values."""
    return [instance(model, values, omit) for values in rows]
