"""ORM reads compiled to SQL once per process and thread, then run with new values.

Building and compiling a queryset costs 0.5–0.9 ms of CPU (``filter``, ``select_related``,
``as_sql``), running its statement about 0.05 ms: on the annotator loop's every request
(the user, the project with the role, the item, its reach, its target, the next item's task)
the compiling was a third of a workspace POST (issue #39). ``CompiledRead`` builds its
queryset once with marker values in place of the arguments, keeps the SQL the ORM wrote and
where each argument's value goes, and turns each row into instances as the ORM's own iterator
does (its ``select_related`` rows and annotations included). No SQL is written by hand: a change
to the query is made in its ORM form.

Per thread: a compiled statement keeps its connection's converters (``from_db_value``), and
Django's connections are per thread. Only reads whose arguments are compared for equality
belong here (a value the ORM transforms, or uses to choose the SQL, must be a constant of the
queryset, not an argument); ``CompiledRead`` refuses a build in which an argument's marker does
not appear exactly as given among the statement's parameters.

A read of one row by its primary key clears the model's default ordering (``.order_by()``):
with it, the slice ``[:1]`` makes the ORM sort, and an item's ordering (its project, then
position) joins the project table to sort the one row — 0.47 against 0.11 ms of PostgreSQL per
read, two such reads per workspace POST (measured in-process, 2026-12-07).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

# Integers no database id reaches in practice, within a 32-bit column's range (Django answers a
# lookup of an out-of-range integer with an empty result instead of a parameter).
_MARKER_BASE = 2_000_000_000 + 123_457


@dataclass
class _Statement:
    sql: str
    params: list  # the parameters as compiled; those at ``slots`` are replaced by arguments
    slots: list[tuple[int, str]]  # (index in params, argument name)
    model: type[Model]
    init_list: list[str]
    model_slice: slice
    populators: list
    annotations: dict[str, int]
    converters: list  # (position, converters, expression)


class CompiledRead:
    """A read built by ``build(**arguments)`` (a ``QuerySet``), compiled the first time a thread
    runs it; ``rows(**arguments)``: its model instances for those argument values."""

    def __init__(self, build: Callable[..., QuerySet], *arguments: str) -> None:
        self._build = build
        self._arguments = arguments
        self._local = threading.local()

    def _compile(self, using: str) -> _Statement:
        markers = {name: _MARKER_BASE + n for n, name in enumerate(self._arguments)}
        queryset = self._build(**markers)
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()  # fills compiler.select, klass_info and annotation_col_map
        by_marker = {marker: name for name, marker in markers.items()}
        slots = [(index, by_marker[value]) for index, value in enumerate(params)
                 if isinstance(value, int) and value in by_marker]
        if sorted({name for _, name in slots}) != sorted(self._arguments) or queryset._known_related_objects:
            raise ValueError(f"CompiledRead: the statement of {self._build!r} does not take each argument as a "
                             f"parameter ({sorted(markers)}); make it a constant of the queryset or read it uncompiled")
        select, klass_info = compiler.select, compiler.klass_info
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        fields = [column[0] for column in select[:compiler.col_count]]
        return _Statement(
            sql=sql, params=list(params), slots=slots, model=klass_info["model"],
            init_list=[column[0].target.attname for column in select[start:end]], model_slice=slice(start, end),
            populators=get_related_populators(klass_info, select, using),
            annotations=dict(compiler.annotation_col_map or {}),
            converters=[(position, convs, expression)
                        for position, (convs, expression) in compiler.get_converters(fields).items()],
        )

    def rows(self, *, using: str = DEFAULT_DB_ALIAS, **arguments: Any) -> list[Model]:
        statements = getattr(self._local, "statements", None)
        if statements is None:
            statements = self._local.statements = {}
        statement = statements.get(using)
        if statement is None:
            statement = statements[using] = self._compile(using)
        params = list(statement.params)
        for index, name in statement.slots:
            params[index] = arguments[name]
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(statement.sql, params)
            found = cursor.fetchall()
        out = []
        for row in found:
            if statement.converters:
                row = list(row)
                for position, convs, expression in statement.converters:
                    value = row[position]
                    for converter in convs:
                        value = converter(value, expression, connection)
                    row[position] = value
            obj = statement.model.from_db(using, statement.init_list, row[statement.model_slice])
            for populator in statement.populators:
                populator.populate(row, obj)
            for name, position in statement.annotations.items():
                setattr(obj, name, row[position])
            out.append(obj)
        return out

    def first(self, **arguments: Any) -> Model | None:
        """The first row's instance (build the queryset sliced ``[:1]``), or None."""
        found = self.rows(**arguments)
        return found[0] if found else None
