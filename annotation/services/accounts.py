"""People: accounts with a role and, for annotators, disciplines."""

from django.contrib.auth import get_user_model
from django.db import transaction

from ..models import AnnotatorProfile, Role

DEMO_ACCOUNTS = (
    ("curator", "curator-demo", Role.CURATOR),
    ("annotator1", "annotator-demo", Role.ANNOTATOR),
    ("annotator2", "annotator-demo", Role.ANNOTATOR),
)


@transaction.atomic
def account_ensure(*, username: str, password: str, role: str, is_staff: bool = False) -> tuple[object, bool]:
    """Create the account when missing; an existing account keeps its password and profile."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"is_staff": is_staff})
    if created:
        user.set_password(password)
        user.save(update_fields=["password"])
    AnnotatorProfile.objects.get_or_create(user=user, defaults={"role": role})
    return user, created


def demo_accounts_ensure() -> list[tuple[str, str, str, bool]]:
    """The demo's accounts: ``(username, password, role, created)``; the curator may use the admin."""
    rows = []
    for username, password, role in DEMO_ACCOUNTS:
        _, created = account_ensure(username=username, password=password, role=role, is_staff=role == Role.CURATOR)
        rows.append((username, password, role, created))
    return rows
