import pytest

from annotation.models import AnnotatorProfile, AuditEvent
from annotation.services.accounts import account_invite
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_invite_makes_a_passwordless_account_with_its_role_and_audit_row(owner):
    user, uid, token = account_invite(username=" erin ", role="viewer", actor=owner)
    assert user.username == "erin" and not user.has_usable_password()
    assert AnnotatorProfile.objects.get(user=user).role == "viewer"
    assert uid and token and token not in str(AuditEvent.objects.get(action="account.invite").after)


@pytest.mark.parametrize(
    ("username", "role", "message"),
    [("has space", "annotator", "username: 'has space' is not a valid user name"),
     ("taken", "annotator", "username: an account named 'taken' already exists"),
     ("fine", "owner", "role: 'owner' is not one of")],
)
def test_invite_refuses_bad_names_taken_names_and_unknown_roles(owner, username, role, message):
    UserFactory(username="taken")
    with pytest.raises(ValueError, match=message):
        account_invite(username=username, role=role, actor=owner)
    assert not AuditEvent.objects.filter(action="account.invite").exists()


def test_only_curators_invite(alice):
    with pytest.raises(PermissionError, match="only curators create accounts"):
        account_invite(username="frank", role="annotator", actor=alice)
