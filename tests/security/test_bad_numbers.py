"""No 500 for integers beyond the database's range, in paths, filters or pages, on any route.

Routes are walked from the URLconf (a new route is covered without an edit here): each integer
path parameter gets a huge value, and every GET also carries huge values for its view's list
filters, ``page`` and the ids the HTML pages read from the query string.
"""

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter

from core.converters import IdConverter
from tests.api.conftest import client_for

HUGE = "99999999999999999999"
NEGATIVE_HUGE = "-99999999999999999999"
BEYOND_INT64 = str(2**63)
BEYOND_INT32 = str(2**31)
QUERY_IDS = ("id", "page", "run", "task_set", "project", "item", "task", "system", "report", "job", "judge_config",
             "run_a", "run_b", "limit", "offset", "survey", "discipline", "window")


def _routes(resolver=None, prefix="", converters=None):
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        pattern = entry.pattern
        route = str(pattern).lstrip("^").rstrip("$")
        found = {**(converters or {}), **getattr(pattern, "converters", {})}
        if isinstance(entry, URLResolver):
            yield from _routes(entry, prefix + route, found)
        elif isinstance(entry, URLPattern):
            yield prefix + route, found, entry


def _path(route: str, converters: dict, value: str) -> str | None:
    path = route
    for name, converter in converters.items():
        if not isinstance(converter, IntConverter):
            return None  # slugs and paths: not integer parameters
        path = path.replace(f"<id:{name}>", value).replace(f"<int:{name}>", value)
    return "/" + path if "<" not in path else None


def _filters(entry) -> list[str]:
    view = getattr(entry.callback, "view_class", None) or getattr(entry.callback, "cls", None)
    return list(getattr(view, "filter_fields", {}) or {})


def _cases():
    for route, converters, entry in _routes():
        if route.startswith("admin/") or "static" in route:
            continue
        for value in (HUGE, NEGATIVE_HUGE, BEYOND_INT64, BEYOND_INT32) if converters else (None,):
            path = _path(route, converters, value) if converters else "/" + route
            if path is not None:
                yield pytest.param(path, _filters(entry), id=path)


@pytest.mark.parametrize(("path", "filters"), list(_cases()))
def test_huge_integers_never_answer_500(world, path, filters):
    query = {name: HUGE for name in (*filters, *QUERY_IDS)}
    for user in (world.users["admin"], world.users["ann_a"]):
        api, html = client_for(user), Client()
        html.force_login(user)
        for client in (api, html):
            response = client.get(path, query)
            assert response.status_code < 500, (path, response.status_code)
            for method in ("post", "delete"):
                response = getattr(client, method)(path, {}, **({"format": "json"} if client is api else {}))
                assert response.status_code < 500, (method, path, response.status_code)


def test_every_integer_path_parameter_is_a_bounded_id():
    plain = [route for route, converters, _ in _routes()
             if any(type(c) is IntConverter for c in converters.values()) and not route.startswith("admin/")]
    assert plain == [], "use <id:...> (core.converters) for integer path parameters"
    assert any(isinstance(c, IdConverter) for _, converters, _ in _routes() for c in converters.values())


def _integer_filters():
    from benchmark.api.common import _is_integer

    for route, converters, entry in _routes():
        view = getattr(entry.callback, "view_class", None) or getattr(entry.callback, "cls", None)
        model = getattr(getattr(view, "queryset", None), "model", None) or _model_of(view)
        for param, lookup in (getattr(view, "filter_fields", {}) or {}).items():
            if model is not None and _is_integer(model, lookup) and not converters:
                yield pytest.param("/" + route, param, id=f"/{route}?{param}")


def _model_of(view):
    serializer = getattr(view, "OutputSerializer", None)
    return getattr(getattr(serializer, "Meta", None), "model", None)


@pytest.mark.parametrize(("path", "param"), list(_integer_filters()))
@pytest.mark.parametrize("value", [HUGE, NEGATIVE_HUGE])
def test_an_integer_filter_beyond_range_is_a_400_naming_it(world, path, param, value):
    response = client_for(world.users["admin"]).get(path, {param: value})
    assert response.status_code == 400, response.content
    assert response.json() == {param: [f"{value!r} is out of range for {param}"]}


@pytest.mark.parametrize(("kind", "field"), [("taskset", "task_set"), ("annotations", "project")])
def test_an_export_of_an_id_beyond_range_is_a_400(world, kind, field):
    response = client_for(world.users["admin"]).post("/api/exports/", {"kind": kind, field: int(HUGE)}, format="json")
    assert response.status_code == 400 and field in response.json(), response.content
