"""Judge endpoint keys (``scoring.judges.endpoints``, ``transport.make_client``): every text shown
from an endpoint is redacted (the key verbatim, spaced out, reversed, base64-encoded), and a key
goes only to URLs under its exact base URL: a redirect, even to another path on the same host, is
not followed and never carries the key. The endpoint is the test's own server on a random port."""

from __future__ import annotations

import base64

import httpx2
import pytest
from django.urls import reverse

from scoring.judges.endpoints import redact, url_is_under
from scoring.judges.transport import _key_only_under
from scoring.services.judge_configs import judge_config_create
from tests.annotation_factories import curator
from tests.support.fake_openai import Reply

pytestmark = pytest.mark.django_db
KEY = "lab-key-7f3a9c1e5b"


def _spellings(key: str) -> list[str]:
    return [key, " ".join(key), "\u200b".join(key), key[::-1], base64.b64encode(key.encode()).decode(),
            base64.b64encode(f"Bearer {key}".encode()).decode(), base64.urlsafe_b64encode(f"x{key}".encode()).decode()]


def _leaks(text: str) -> list[str]:
    return [s for s in _spellings(KEY) if s in text] + [s for s in _spellings(KEY)[4:] if s[2:-3] in text]


@pytest.fixture
def bound(fake_openai, settings):
    settings.JUDGE_ENDPOINTS = {fake_openai.base_url: KEY}
    user = curator()
    config = judge_config_create(actor=user, name="echo", backend="openai", model="m", base_url=fake_openai.base_url)
    return user, config


@pytest.mark.parametrize("spelling", range(7))
def test_redact_catches_every_spelling_of_a_bound_key(settings, spelling):
    settings.JUDGE_ENDPOINTS = {"https://llm.example.org/v1": KEY}
    text = f"model said: {_spellings(KEY)[spelling]} (end)"
    shown = redact(text)
    assert "[redacted]" in shown and not _leaks(shown), shown
    assert redact("an ordinary answer about base64 and keys") == "an ordinary answer about base64 and keys"


@pytest.mark.parametrize("spelling", range(7))
def test_test_connection_shows_no_key_from_a_successful_answer(client, fake_openai, bound, spelling):
    user, config = bound
    echoed = _spellings(KEY)[spelling]
    fake_openai.script(Reply.text(f"OK {echoed}", model=f"model-{echoed}"))
    client.force_login(user)
    page = client.post(reverse("runs:judge_test", args=[config.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and "Works" in html and "[redacted]" in html
    assert not _leaks(html), html
    edit = client.get(reverse("runs:judge_edit", args=[config.pk])).content.decode()
    assert not _leaks(edit)


def test_a_same_origin_redirect_is_not_followed_and_carries_no_key(client, fake_openai, bound):
    user, config = bound
    root = fake_openai.base_url.rsplit("/v1", 1)[0]
    fake_openai.script(Reply(status=307, headers={"Location": f"{root}/other/chat/completions"},
                             body={"error": {"message": "moved"}}))
    client.force_login(user)
    html = client.post(reverse("runs:judge_test", args=[config.pk])).content.decode()
    assert "Failed" in html and "HTTP 307" in html
    assert [r.path for r in fake_openai.requests] == ["/v1/chat/completions"]  # the redirect was not followed
    assert all(not r.path.startswith("/other") for r in fake_openai.requests)


def test_the_key_goes_only_to_urls_under_the_exact_base_url():
    base = "http://127.0.0.1:9/v1"
    hook = _key_only_under(base)
    for url, keeps in [(f"{base}/chat/completions", True), (base, True), ("http://127.0.0.1:9/v1evil/x", False),
                       ("http://127.0.0.1:9/other/chat/completions", False), ("http://127.0.0.1:10/v1/x", False),
                       ("https://127.0.0.1:9/v1/x", False), ("http://localhost:9/v1/x", False)]:
        request = httpx2.Request("POST", url, headers={"Authorization": f"Bearer {KEY}", "api-key": KEY})
        hook(request)
        assert ("authorization" in request.headers) is keeps and ("api-key" in request.headers) is keeps, url
    assert url_is_under("https://api.openai.com:443/v1/chat", "https://api.openai.com/v1")
