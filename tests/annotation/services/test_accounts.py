"""Real accounts: account_create (the first curator, then curators and annotators) and account_invite."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.services.audit import audit_kind
from core.models import AuditLog

from annotation.models import AnnotatorProfile, Role
from core.accounts import is_global_curator
from annotation.services.accounts import account_create, account_invite
from tests.annotation_factories import annotator
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()


def test_the_first_curator_can_sign_in_and_curate_and_the_audit_row_holds_no_password():
    user, generated = account_create(username="ada", role=Role.CURATOR, password="a long phrase nobody guesses",
                                     email="ada@example.org")
    assert generated is None
    assert (user.is_staff, user.is_superuser, user.email) == (True, False, "ada@example.org")
    assert AnnotatorProfile.objects.get(user=user).role == Role.CURATOR
    assert is_global_curator(user)
    assert Client().login(username="ada", password="a long phrase nobody guesses")

    event = AuditLog.objects.get(action="account.create")
    assert (event.actor, audit_kind(event), event.object_id) == (None, "user", user.pk)
    assert event.after == {"username": "ada", "email": "ada@example.org", "role": "curator", "is_staff": True}
    assert "a long phrase" not in str(event.after) and user.password not in str(event.after)


def test_an_annotator_without_a_password_gets_a_generated_one_that_is_stored_hashed_only():
    curator, _ = account_create(username="ada", role=Role.CURATOR, password="a long phrase nobody guesses")
    user, generated = account_create(username="ben", role=Role.ANNOTATOR, actor=curator)
    assert len(generated) >= 20
    assert generated not in user.password and user.check_password(generated)
    assert not user.is_staff and not is_global_curator(user)
    assert AuditLog.objects.get(action="account.create", object_id=user.pk).actor == curator
    # two generated passwords differ
    _, other = account_create(username="cy", role=Role.ANNOTATOR)
    assert other != generated


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"username": "  ", "role": Role.CURATOR}, r"^username: must not be empty"),
    ({"username": "a b", "role": Role.CURATOR}, r"^username: Enter a valid username"),
    ({"username": "ada", "role": Role.VIEWER}, r"^role: 'viewer' is not one of curator, annotator"),
    ({"username": "ada", "role": Role.CURATOR, "password": "short"}, r"^password: This password is too short"),
    ({"username": "ada", "role": Role.CURATOR, "password": "password123"}, r"^password: This password is too common"),
])
def test_invalid_input_names_the_field_and_stores_nothing(kwargs, message):
    with pytest.raises(ValueError, match=message):
        account_create(**kwargs)
    assert (User.objects.count(), AnnotatorProfile.objects.count(), AuditLog.objects.count()) == (0, 0, 0)


def test_an_existing_username_in_any_case_is_refused_and_left_unchanged():
    existing = annotator("alice")
    before = User.objects.values().get(pk=existing.pk)
    with pytest.raises(ValueError, match=r"^username: an account named 'Alice' already exists \(nothing was changed\)"):
        account_create(username="Alice", role=Role.CURATOR, password="a long phrase nobody guesses")
    assert User.objects.values().get(pk=existing.pk) == before
    assert AnnotatorProfile.objects.get(user=existing).role == Role.ANNOTATOR
    assert not AuditLog.objects.filter(action="account.create").exists()


def test_invite_makes_a_passwordless_account_with_its_role_and_audit_row(owner):
    user, uid, token = account_invite(username=" erin ", role="viewer", actor=owner)
    assert user.username == "erin" and not user.has_usable_password()
    assert AnnotatorProfile.objects.get(user=user).role == "viewer"
    assert uid and token and token not in str(AuditLog.objects.get(action="account.invite").after)


@pytest.mark.parametrize(
    ("username", "role", "message"),
    [("has space", "annotator", r"^username: Enter a valid username"),
     ("taken", "annotator", "username: an account named 'taken' already exists"),
     ("fine", "owner", "role: 'owner' is not one of")],
)
def test_invite_refuses_bad_names_taken_names_and_unknown_roles(owner, username, role, message):
    UserFactory(username="taken")
    with pytest.raises(ValueError, match=message):
        account_invite(username=username, role=role, actor=owner)
    assert not AuditLog.objects.filter(action="account.invite").exists()


def test_only_curators_invite(alice):
    with pytest.raises(PermissionError, match="only curators create accounts"):
        account_invite(username="frank", role="annotator", actor=alice)
