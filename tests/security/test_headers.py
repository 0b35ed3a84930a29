"""Headers on every page and API answer: CSP without remote sources, no caching of signed-in
answers, Referrer-Policy and X-Content-Type-Options; and no inline code the CSP would block."""

import re
from pathlib import Path

import pytest
from django.test import Client

from config.headers import API_DOCS_POLICY, CONTENT_SECURITY_POLICY
from tests.api.conftest import client_for
from tests.security.test_bad_numbers import _routes

ROOT = Path(__file__).resolve().parents[2]


def _policy(header: str) -> dict[str, list[str]]:
    directives = {}
    for part in header.split(";"):
        name, *sources = part.split()
        directives[name] = sources
    return directives


@pytest.mark.parametrize("policy", [CONTENT_SECURITY_POLICY, API_DOCS_POLICY])
def test_no_policy_names_a_remote_source(policy):
    for name, sources in _policy(policy).items():
        for source in sources:
            assert source in ("'self'", "'none'", "data:", "blob:", "'unsafe-inline'"), (name, source)
        if name == "script-src":
            assert sources == ["'self'"]
    assert _policy(policy)["img-src"] == ["'self'", "data:"]


def _page_paths(world):
    ids = {"project_id": world.project_a.pk, "item_id": world.item_a.pk, "task_id": world.task.pk,
           "report_id": world.report.pk, "task_set_id": world.task_set.pk, "run_id": world.run_finished.pk}
    for route, converters, _ in _routes():
        if route.startswith(("admin/", "api/")) and route != "api/docs/":
            continue
        path = "/" + route
        for name in converters:
            if name not in ids:
                break
            path = path.replace(f"<id:{name}>", str(ids[name]))
        else:
            yield path


def test_every_html_page_has_the_headers(world):
    client = Client()
    client.force_login(world.users["curator"])
    seen = 0
    for path in _page_paths(world):
        response = client.get(path)
        if not response.get("Content-Type", "").startswith("text/html"):
            continue
        seen += 1
        expected = API_DOCS_POLICY if path == "/api/docs/" else CONTENT_SECURITY_POLICY
        assert response["Content-Security-Policy"] == expected, path
        assert set(response["Cache-Control"].replace(" ", "").split(",")) >= {"private", "no-store"}, path
        assert response["Referrer-Policy"] == "same-origin" and response["X-Content-Type-Options"] == "nosniff"
    assert seen >= 20


def test_api_answers_are_not_cached():
    response = client_for(None).get("/api/tasks/")
    assert response.status_code == 403 and "no-store" in response["Cache-Control"]


def test_api_answers_to_a_signed_in_user_are_not_cached(world):
    response = client_for(world.users["ann_a"]).get("/api/labels/")
    assert response.status_code == 200
    assert set(response["Cache-Control"].replace(" ", "").split(",")) >= {"private", "no-store"}
    assert response["X-Content-Type-Options"] == "nosniff"


def test_the_login_page_has_the_policy(db):
    response = Client().get("/login/")
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


INLINE = re.compile(r"<script(?![^>]*\ssrc=)[^>]*>|<style[\s>]|\sstyle=|\son[a-z]+=", re.IGNORECASE)


def test_no_template_or_script_has_inline_code_the_policy_would_block():
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for folder in ("templates", "static/js")
        for path in (ROOT / folder).rglob("*.*")
        for match in INLINE.finditer(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
