"""Sign-in with an OpenID Connect provider, end to end against a real one: django-oidc-provider in
a second process on loopback (``tests.support.oidc_provider``). The studio's side runs in the test
client; the browser's side at the provider (its login form, its redirects) is a requests session;
the back channel (token, userinfo, JWKS, discovery) is real HTTP from the studio to the provider."""

import time
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import override_settings

from annotation.models import Invitation, ProjectMembership
from annotation.services.invitations import invitations_create
from core.models import AuditLog
from core.oidc import oidc_discovery_forget
from tests.annotation_factories import annotator, checklist_task, curator, verify_project
from tests.support.oidc_provider.process import CLIENT_ID, PASSWORD, free_port, oidc_provider, studio_sso_settings

CALLBACK = "http://testserver/oidc/callback/"
USERS = ("ada:ada@lab.org", "bea:bea@lab.org", "cara:cara@lab.org", "other-app:other@lab.org", "late:late@lab.org",
         "mallory:mallory@elsewhere.org")


@pytest.fixture(scope="module")
def provider(tmp_path_factory):
    """The provider's issuer URL, its process serving until the module's tests are done."""
    with oidc_provider(tmp_path_factory.mktemp("oidc") / "provider.sqlite3", CALLBACK, USERS) as issuer:
        yield issuer


@pytest.fixture
def sso(provider):
    oidc_discovery_forget()
    with override_settings(**studio_sso_settings(provider, OIDC_ALLOWED_DOMAINS=["lab.org"],
                                                 OIDC_PROVIDER_NAME="Lab ID")):
        yield provider
    oidc_discovery_forget()


def _authorize_url(client, start_at: str = "/oidc/authenticate/") -> str:
    start = client.get(start_at)
    assert start.status_code == 302, start.content
    return start["Location"]


def _at_provider(authorize: str, username: str) -> str:
    """Log in at the provider as a browser would; the callback URL it sends the browser back to."""
    browser = requests.Session()
    to_login = browser.get(authorize, allow_redirects=False, timeout=10)
    assert to_login.status_code == 302, to_login.text
    login_url = urljoin(authorize, to_login.headers["Location"])
    assert browser.get(login_url, timeout=10).status_code == 200
    logged_in = browser.post(login_url, allow_redirects=False, timeout=10, data={
        "username": username, "password": PASSWORD, "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        "next": parse_qs(urlsplit(login_url).query)["next"][0]})
    assert logged_in.status_code == 302, logged_in.text
    back = browser.get(urljoin(login_url, logged_in.headers["Location"]), allow_redirects=False, timeout=10)
    assert back.status_code == 302, back.text
    assert back.headers["Location"].startswith(CALLBACK), back.headers["Location"]
    return back.headers["Location"].removeprefix("http://testserver")


def _sign_in(client, username: str):
    return client.get(_at_provider(_authorize_url(client), username))


@pytest.mark.django_db
def test_the_login_page_offers_the_provider_only_when_configured(client, provider):
    with override_settings(OIDC_ISSUER=""):
        assert b"data-role=\"sso-login\"" not in client.get("/login/").content
        assert client.get("/oidc/authenticate/").status_code == 404
        assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    oidc_discovery_forget()
    with override_settings(**studio_sso_settings(provider, OIDC_PROVIDER_NAME="Lab ID")):
        page = client.get("/login/").content.decode()
        assert 'data-role="sso-login" href="/oidc/authenticate/"' in page and "Sign in with Lab ID" in page


@pytest.mark.django_db
def test_a_first_sign_in_makes_an_annotator_who_joins_the_projects_invited_to(client, sso):
    owner = curator("pi")
    task, _ = checklist_task(1)
    project = verify_project(owner, [], tasks=[task], name="Expert check")
    invitations_create(project=project, invitees=[("Ada", "ada@lab.org")], role="annotator", actor=owner,
                       link_for=lambda token: f"http://testserver/invitation/{token}/")

    authorize = _authorize_url(client)
    assert authorize.startswith(f"{sso}/authorize")  # from the discovery document
    params = {key: values[0] for key, values in parse_qs(urlsplit(authorize).query).items()}
    assert params["client_id"] == CLIENT_ID and params["response_type"] == "code"
    assert params["redirect_uri"] == CALLBACK and params["code_challenge_method"] == "S256"
    assert len(params["state"]) >= 32 and len(params["nonce"]) >= 32 and len(params["code_challenge"]) == 43
    signed_in = client.get(_at_provider(authorize, "ada"))
    assert signed_in.status_code == 302 and signed_in["Location"] == "/"

    ada = get_user_model().objects.get(email="ada@lab.org")
    assert (ada.username, ada.is_staff, ada.is_superuser, ada.profile.role, ada.has_usable_password()) == (
        "ada", False, False, "annotator", False)
    assert ProjectMembership.objects.get(project=project, user=ada).role == "annotator"
    assert Invitation.objects.get(email="ada@lab.org").status == "joined"
    assert AuditLog.objects.filter(action="account.sso_create", object_id=ada.pk).count() == 1
    assert client.get(f"/annotate/{project.pk}/").status_code == 200

    # the second sign-in is the same account; the state was used once
    client.logout()
    assert _sign_in(client, "ada").status_code == 302
    assert get_user_model().objects.filter(email="ada@lab.org").count() == 1
    assert client.get("/annotate/").status_code == 200


@pytest.mark.django_db
def test_signing_in_from_the_invitations_page_goes_on_to_the_project(client, sso):
    owner = curator("pi")
    task, _ = checklist_task(1)
    project = verify_project(owner, [], tasks=[task], name="Expert check")
    links = []
    invitations_create(project=project, invitees=[("", "cara@lab.org")], role="viewer", actor=owner,
                       link_for=lambda token: links.append(f"/invitation/{token}/") or links[-1])
    (message,) = [m for m in mail.outbox if m.to == ["cara@lab.org"]]
    assert "sign in with Lab ID (with the address cara@lab.org)" in message.body
    page = client.get(links[0]).content.decode()
    sso_link = f"/oidc/authenticate/?next={links[0]}"
    assert f'data-role="sso-login" href="{sso_link}"' in page
    back = client.get(_at_provider(_authorize_url(client, sso_link), "cara"))
    assert back.status_code == 302 and back["Location"] == links[0]
    onward = client.get(links[0])
    assert onward.status_code == 302 and onward["Location"] == f"/annotate/{project.pk}/progress/"  # a viewer labels nothing
    cara = get_user_model().objects.get(email="cara@lab.org")
    assert ProjectMembership.objects.get(project=project, user=cara).role == "viewer"
    assert cara.profile.role == "annotator" and not cara.is_staff


@pytest.mark.django_db
def test_an_existing_account_with_the_address_is_signed_in_without_curator_rights(client, sso):
    bea = annotator("bea.local")
    bea.email = "BEA@lab.org"
    bea.save()
    assert _sign_in(client, "bea").status_code == 302
    assert get_user_model().objects.filter(email__iexact="bea@lab.org").count() == 1
    assert client.get("/annotate/new/").status_code in (302, 403)  # creating projects is a curator's


@pytest.mark.django_db
@pytest.mark.parametrize("username, status, words", [
    ("other-app", 403, "issued for another application"),
    ("late", 403, "ID token has expired"),
    ("mallory", 403, "accounts of elsewhere.org cannot sign in here"),
])
def test_a_token_for_another_audience_an_expired_token_or_an_unknown_domain_is_refused(client, sso, username,
                                                                                        status, words):
    before = get_user_model().objects.count()
    refused = _sign_in(client, username)
    assert refused.status_code == status and words in refused.content.decode()
    assert 'data-role="sso-refused"' in refused.content.decode()
    assert get_user_model().objects.count() == before
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_a_forged_state_or_a_provider_error_is_a_page_not_a_500(client, sso):
    _authorize_url(client)  # a state in the session, but not this one
    forged = client.get("/oidc/callback/?code=stolen&state=forged")
    assert forged.status_code == 400 and b"could not be verified" in forged.content
    denied = client.get("/oidc/callback/?error=access_denied&state=forged")
    assert denied.status_code == 403 and b"access_denied" in denied.content
    fresh = client.__class__()
    assert fresh.get("/oidc/callback/?code=x&state=y").status_code == 403  # no sign-in was started


@pytest.mark.django_db
def test_a_provider_that_does_not_answer_refuses_sso_but_not_password_logins(client):
    user = annotator("pat")
    user.set_password(PASSWORD)
    user.save()
    oidc_discovery_forget()
    with override_settings(**studio_sso_settings(f"http://127.0.0.1:{free_port()}/openid", OIDC_TIMEOUT=2)):
        down = client.get("/oidc/authenticate/")
        assert down.status_code == 502 and b"could not be read" in down.content
        started = time.monotonic()
        assert client.post("/login/", {"username": "pat", "password": PASSWORD}).status_code == 302
        assert time.monotonic() - started < 2  # the provider was not asked
    oidc_discovery_forget()
