"""API tokens follow the password (``core.tokens``): each login issues a fresh key, a password
change revokes it, the token page rotates (showing the key once) and revokes it, each with its
audit row and never the key in it. Removing a member tells nobody whether an account exists."""

import html

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.models import AuditLog
from tests.api.conftest import client_for
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
PASSWORD = "s3cret-pass!word"


@pytest.fixture
def user():
    user = UserFactory(username="scripter")
    user.set_password(PASSWORD)
    user.save()
    return user


def _login(username="scripter", password=PASSWORD) -> str:
    response = APIClient().post(reverse("api:token"), {"username": username, "password": password}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["token"]


def _works(key: str) -> bool:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get(reverse("api:project-list")).status_code == 200


def test_each_login_issues_a_fresh_token_and_the_old_one_stops_working(user):
    first, second = _login(), _login()
    assert first != second
    assert not _works(first) and _works(second)
    assert list(AuditLog.objects.filter(object_id=user.pk).values_list("action", flat=True).order_by("id")) == [
        "api_token.issue", "api_token.rotate"]
    assert not any(first in str(row.before) + str(row.after) + row.note for row in AuditLog.objects.all())


def test_a_password_change_revokes_the_token_on_every_path(user):
    key = _login()
    browser = Client()
    browser.force_login(user)
    changed = browser.post(reverse("password_change"), {"old_password": PASSWORD, "new_password1": "An0ther-pass!x",
                                                        "new_password2": "An0ther-pass!x"})
    assert changed.status_code == 302
    assert not _works(key) and not Token.objects.filter(user=user).exists()
    assert AuditLog.objects.filter(action="api_token.revoke", object_id=user.pk, note="the password changed").exists()
    key = _login(password="An0ther-pass!x")
    user = User.objects.get(pk=user.pk)
    user.set_password("Third-pass!x1")  # the admin, changepassword, an invite link: all save the user
    user.save()
    assert not _works(key)
    key = _login(password="Third-pass!x1")
    User.objects.filter(pk=user.pk).get().save(update_fields=["last_login"])  # other saves keep the token
    user.first_name = "S"
    user.save()
    assert _works(key)


def test_the_token_page_rotates_showing_the_key_once_and_revokes(user):
    old = _login()
    browser = Client()
    browser.force_login(user)
    page = browser.get(reverse("account_tokens"))
    html = page.content.decode()
    assert page.status_code == 200 and "You have a token, made" in html and old not in html
    rotated = browser.post(reverse("account_tokens"), {"action": "rotate"})
    new = Token.objects.get(user=user).key
    assert rotated.status_code == 200 and new in rotated.content.decode() and "shown this once" in rotated.content.decode()
    assert new != old and not _works(old) and _works(new)
    again = browser.get(reverse("account_tokens")).content.decode()
    assert new not in again and "You have a token" in again  # never shown again
    revoked = browser.post(reverse("account_tokens"), {"action": "revoke"}, follow=True)
    assert "Token revoked" in revoked.content.decode() and "You have no token." in revoked.content.decode()
    assert not _works(new)
    assert browser.post(reverse("account_tokens"), {"action": "steal"}).status_code == 400
    actions = list(AuditLog.objects.filter(object_id=user.pk).values_list("action", "actor_id").order_by("id"))
    assert actions == [("api_token.issue", user.pk), ("api_token.rotate", user.pk), ("api_token.revoke", user.pk)]
    assert Client().get(reverse("account_tokens")).status_code == 302  # signed-in accounts only


def test_removing_a_member_answers_the_same_for_unknown_and_existing_accounts(world):
    UserFactory(username="outsider")  # exists, not a member
    for caller, expected in (("ann_a", 403), ("viewer", 403), ("curator", 400)):
        answers = []
        for username in ("outsider", "no-such-account"):
            url = reverse("api:project-member-detail", kwargs={"pk": world.project_a.pk, "username": username})
            response = client_for(world.users[caller]).delete(url)
            answers.append((response.status_code, response.content.decode().replace(username, "NAME")))
        assert answers[0] == answers[1] and answers[0][0] == expected, answers


def test_the_members_page_remove_with_an_unknown_username_is_a_400_not_a_500(world):
    browser = Client()
    browser.force_login(world.users["curator"])
    url = reverse("annotation:members", args=[world.project_a.pk])
    answers = [browser.post(url, {"action": "remove", "username": name}) for name in ("ann_b", "no-such-account")]
    assert [a.status_code for a in answers] == [400, 400]
    assert "'no-such-account' is not a member" in html.unescape(answers[1].content.decode())
    removed = browser.post(url, {"action": "remove", "username": "ann_a"})
    assert removed.status_code == 302
