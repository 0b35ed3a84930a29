"""Deeply nested request JSON is a 400 on every API route, never a RecursionError (500)."""

import json

import pytest

from core.parsers import MAX_JSON_DEPTH, json_depth
from tests.api.conftest import client_for
from tests.security.test_bad_numbers import _routes

VERY_DEEP = "[" * 100_000 + "]" * 100_000
JUST_TOO_DEEP = json.dumps({"value": json.loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)})


def _api_paths(world):
    ids = {"pk": world.item_a.pk}
    for route, converters, _ in _routes():
        if not route.startswith("api/"):
            continue
        path = "/" + route
        for name in converters:
            path = path.replace(f"<id:{name}>", str(ids.get(name, world.item_a.pk)))
        yield path


def test_json_depth_counts_levels_without_recursion():
    assert json_depth(1) == 0 and json_depth([]) == 1 and json_depth({"a": [1, {"b": []}]}) == 4
    nested = []
    for _ in range(50_000):
        nested = [nested]
    assert json_depth(nested) == MAX_JSON_DEPTH + 1  # stops looking once too deep


@pytest.mark.parametrize("body", [VERY_DEEP, JUST_TOO_DEEP], ids=["100000-levels", "limit+1"])
def test_every_api_route_refuses_deep_json(world, body):
    client = client_for(world.users["admin"])
    refused = []
    for path in _api_paths(world):
        for method in ("post", "put", "patch"):
            response = getattr(client, method)(path, body, content_type="application/json")
            assert response.status_code < 500, (method, path)
            if response.status_code == 400 and "nested deeper" in response.content.decode():
                refused.append(path)
    assert {"/api/labels/", "/api/systems/", "/api/reports/", "/api/runs/", "/api/exports/"} <= set(refused)


def test_json_within_the_limit_is_parsed(world):
    client = client_for(world.users["admin"])
    nested = json.loads("[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1))
    body = {"name": "deep enough", "version": "1", "ignored": nested}  # the object itself is one level
    response = client.post("/api/systems/", body, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["name"], response.json()["version"]) == ("deep enough", "1")


@pytest.mark.parametrize("body", [VERY_DEEP, "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)])
def test_json_text_in_a_form_post_is_bounded_too(world, body):
    """Form posts carry a JSON field's value as text, parsed by the field itself."""
    client = client_for(world.users["ann_a"])
    data = {"item": world.item_a.pk, "value": body, "client_token": "0b9d2ee4-3a41-4bd4-9f6a-5c3f7f0d7e11"}
    response = client.post("/api/labels/", data, format="multipart")
    assert response.status_code == 400 and response.json() == {"value": [f"nested deeper than {MAX_JSON_DEPTH} levels"]}
