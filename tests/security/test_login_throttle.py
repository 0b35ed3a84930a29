"""Failed-login throttling: /login/ and the token endpoint refuse a username+address after N failures."""

import time

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import path, resolve, reverse
from rest_framework.test import APIClient, APIRequestFactory

import config.settings as project_module
from config.throttling import ThrottledLoginView, ThrottledObtainAuthToken
from tests.factories import UserFactory

PASSWORD = "correct horse battery staple"
LIMIT = 3

# The token view as config/api_urls.py would route it (see test_api_token_route_is_throttled).
urlpatterns = [path("token/", ThrottledObtainAuthToken.as_view(), name="throttled-token")]


@pytest.fixture(autouse=True)
def small_limit(settings):
    cache.clear()
    settings.LOGIN_FAILURE_LIMIT = LIMIT
    yield
    cache.clear()


@pytest.fixture
def user(db):
    user = UserFactory(username="alice")
    user.set_password(PASSWORD)
    user.save()
    return user


def html_login(client, password, username="alice"):
    return client.post(reverse("login"), {"username": username, "password": password})


def test_project_defaults_are_ten_per_fifteen_minutes():
    assert (project_module.LOGIN_FAILURE_LIMIT, project_module.LOGIN_FAILURE_WINDOW) == (10, 900)
    assert issubclass(resolve("/login/").func.view_class, ThrottledLoginView)


def test_html_login_locks_out_after_limit_even_with_right_password(user):
    client = Client()
    for _ in range(LIMIT):
        response = html_login(client, "wrong")
        assert response.status_code == 200
        assert "Too many failed attempts" not in response.content.decode()
    response = html_login(client, PASSWORD)
    assert response.status_code == 429
    html = response.content.decode()
    assert "Too many failed attempts, try again in 15 minutes." in html
    assert "_auth_user_id" not in client.session
    # Another address, or another username from this address, is not locked out.
    assert html_login(Client(REMOTE_ADDR="10.0.0.9"), PASSWORD).status_code == 302
    assert html_login(client, "wrong", username="bob").status_code == 200


def test_html_login_success_resets_the_count(user):
    client = Client()
    for _ in range(LIMIT - 1):
        html_login(client, "wrong")
    assert html_login(client, PASSWORD).status_code == 302
    client.logout()
    for _ in range(LIMIT - 1):
        assert html_login(client, "wrong").status_code == 200
    assert html_login(client, PASSWORD).status_code == 302


def test_html_lockout_ends_with_the_window(user, settings):
    settings.LOGIN_FAILURE_WINDOW = 1
    client = Client()
    for _ in range(LIMIT):
        html_login(client, "wrong")
    assert html_login(client, PASSWORD).status_code == 429
    time.sleep(1.2)
    assert html_login(client, PASSWORD).status_code == 302


@pytest.mark.urls(__name__)
def test_token_endpoint_answers_429_with_retry_after(user):
    client = APIClient()
    url = reverse("throttled-token")
    for _ in range(LIMIT):
        assert client.post(url, {"username": "alice", "password": "wrong"}, format="json").status_code == 400
    response = client.post(url, {"username": "alice", "password": PASSWORD}, format="json")
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 900
    assert response.json()["detail"].startswith("Too many failed attempts, try again in 15 minutes.")
    assert "token" not in response.json()
    other = APIClient(REMOTE_ADDR="10.0.0.9")
    assert "token" in other.post(url, {"username": "alice", "password": PASSWORD}, format="json").json()


@pytest.mark.urls(__name__)
def test_token_success_resets_and_junk_bodies_do_not_crash(user):
    client = APIClient()
    url = reverse("throttled-token")
    for _ in range(LIMIT - 1):
        client.post(url, {"username": "alice", "password": "wrong"}, format="json")
    assert client.post(url, {"username": "alice", "password": PASSWORD}, format="json").status_code == 200
    for _ in range(LIMIT - 1):
        assert client.post(url, {"username": "alice", "password": "wrong"}, format="json").status_code == 400
    assert client.post(url, {"username": "alice", "password": PASSWORD}, format="json").status_code == 200
    assert client.post(url, ["not", "an", "object"], format="json").status_code == 400


def test_html_and_token_share_one_count(user):
    """Failures on the HTML form lock the token view out too (the view class, directly)."""
    client = Client()
    for _ in range(LIMIT):
        html_login(client, "wrong")
    request = APIRequestFactory().post("/api/auth/token/", {"username": "alice", "password": PASSWORD}, format="json")
    response = ThrottledObtainAuthToken.as_view()(request)
    assert response.status_code == 429


def test_api_token_route_is_throttled(user):
    client = APIClient()
    for _ in range(LIMIT):
        client.post(reverse("api:token"), {"username": "alice", "password": "wrong"}, format="json")
    assert client.post(reverse("api:token"), {"username": "alice", "password": PASSWORD},
                       format="json").status_code == 429


def _token_login(client, username, password, **extra):
    return client.post(reverse("api:token"), {"username": username, "password": password}, format="json", **extra)


@pytest.mark.parametrize("channel", ["html", "token"])
def test_a_forged_forwarded_for_does_not_escape_the_lockout(user, channel):
    """Without trusted proxies X-Forwarded-For is the client's word: the peer address counts."""
    client = Client() if channel == "html" else APIClient()
    for n in range(LIMIT):
        forged = {"HTTP_X_FORWARDED_FOR": f"203.0.113.{n}"}
        if channel == "html":
            client.post(reverse("login"), {"username": "alice", "password": "wrong"}, **forged)
        else:
            assert _token_login(client, "alice", "wrong", **forged).status_code == 400
    fresh = {"HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    if channel == "html":
        response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD}, **fresh)
    else:
        response = _token_login(client, "alice", PASSWORD, **fresh)
    assert response.status_code == 429


@pytest.mark.parametrize("channel", ["html", "token"])
def test_username_variants_count_as_one(user, channel):
    client = Client() if channel == "html" else APIClient()
    variants = [" alice", "ALICE", "Alice ", "ａｌｉｃｅ"][:LIMIT]  # the last: full-width letters (NFKC)
    for variant in variants:
        if channel == "html":
            html_login(client, "wrong", username=variant)
        else:
            _token_login(client, variant, "wrong")
    if channel == "html":
        assert html_login(client, PASSWORD).status_code == 429
    else:
        assert _token_login(client, "alice", PASSWORD).status_code == 429


def test_behind_trusted_proxies_the_address_they_wrote_counts(user, settings):
    """TRUSTED_PROXY_COUNT=1 (DRF's NUM_PROXIES): the last X-Forwarded-For entry is the client;
    what the client put before it changes nothing."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    client = APIClient()
    for n in range(LIMIT):
        _token_login(client, "alice", "wrong", HTTP_X_FORWARDED_FOR=f"10.9.9.{n}, 192.0.2.1")
    assert _token_login(client, "alice", PASSWORD, HTTP_X_FORWARDED_FOR="10.1.1.1, 192.0.2.1").status_code == 429
    other = _token_login(client, "alice", PASSWORD, HTTP_X_FORWARDED_FOR="192.0.2.2")
    assert other.status_code == 200 and "token" in other.json()


def test_the_default_trusts_no_proxy():
    assert project_module.REST_FRAMEWORK["NUM_PROXIES"] == 0
