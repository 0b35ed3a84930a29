"""People: accounts with a role and, for annotators, disciplines."""

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from ..models import AnnotatorProfile, Role
from core.accounts import is_global_curator
from core.audit_actions import AuditAction
from .audit import audit_record

# Roles create_account offers; a viewer is an account whose profile role is changed in the admin.
ACCOUNT_ROLES = (Role.CURATOR, Role.ANNOTATOR)

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


def _account_new(*, username: str, role: str, roles, email: str = ""):
    """An unsaved user after the checks every new account passes; ``ValueError`` names the field."""
    User = get_user_model()
    username = (username or "").strip()
    if not username:
        raise ValueError("username: must not be empty")
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError as exc:
        raise ValueError("username: " + " ".join(exc.messages)) from None
    if role not in roles:
        raise ValueError(f"role: {str(role)!r} is not one of {', '.join(roles)}")
    if User.objects.filter(username__iexact=username).exists():
        raise ValueError(f"username: an account named {username!r} already exists (nothing was changed)")
    return User(username=username, email=email.strip(), is_staff=role == Role.CURATOR)


@transaction.atomic
def account_create(*, username: str, role: str, password: str | None = None, email: str = "",
                   actor=None) -> tuple[object, str | None]:
    """A new account with its role, and its audit row. A curator is staff, as the demo curator.

    ``password`` is checked against ``AUTH_PASSWORD_VALIDATORS``; without one a random password
    is generated and returned (the only place it exists in clear: it is neither stored nor
    logged), else None. ``ValueError`` naming the field when the username is taken or an input
    is invalid; nothing is stored then."""
    user = _account_new(username=username, role=role, roles=ACCOUNT_ROLES, email=email)
    generated = None
    if password is None:
        password = generated = secrets.token_urlsafe(15)
    try:
        validate_password(password, user=user)
    except ValidationError as exc:
        raise ValueError("password: " + " ".join(exc.messages)) from None
    user.set_password(password)
    user.save()
    AnnotatorProfile.objects.create(user=user, role=role)
    audit_record(actor=actor, action=AuditAction.ACCOUNT_CREATE, target_kind="user", target_id=user.pk,
                 after={"username": user.username, "email": user.email, "role": role, "is_staff": user.is_staff})
    return user, generated


@transaction.atomic
def account_invite(*, username: str, role: str, actor) -> tuple[object, str, str]:
    """A new account without a password, and the ``(uidb64, token)`` of its one-time link to set
    one (Django's password-reset token: it stops working once the password is set). The link is
    handed to the curator and never stored. Only global curators invite."""
    if not is_global_curator(actor):
        raise PermissionError("only curators create accounts")
    user = _account_new(username=username, role=role, roles=Role.values)
    user.set_unusable_password()
    user.save()
    AnnotatorProfile.objects.create(user=user, role=role)
    audit_record(actor=actor, action=AuditAction.ACCOUNT_INVITE, target_kind="user", target_id=user.pk,
                 after={"username": user.username, "role": role})
    return user, urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


def demo_accounts_ensure() -> list[tuple[str, str, str, bool]]:
    """The demo's accounts: ``(username, password, role, created)``; the curator may use the admin."""
    rows = []
    for username, password, role in DEMO_ACCOUNTS:
        _, created = account_ensure(username=username, password=password, role=role, is_staff=role == Role.CURATOR)
        rows.append((username, password, role, created))
    return rows


# The demo's annotation projects: (name, kind, demo task set of ``load_demo``, what it is for).
DEMO_PROJECTS = (
    ("Demo: review DeepSynth proposals", "verify", "demo-deepsynth",
     "Accept, edit or reject the checklist items, constraint questions and prompts proposed for the DeepSynth tasks."),
    ("Demo: compare DeepScholar reports", "pairwise", "demo-deepscholar",
     "Which of two related-work sections is better? Each pair is shown twice, positions swapped."),
)


def demo_projects_ensure() -> list[tuple[str, int, bool]]:
    """The demo's annotation projects, created by the demo curator over ``load_demo``'s task
    sets with both demo annotators as members: ``(name, items, created)``. A project whose
    task set is missing (no demo data loaded) is left out; an existing one is left as it is."""
    from benchmark.models import TaskSet

    from ..models import AnnotationProject
    from .projects import membership_add, project_create

    User = get_user_model()
    curator = User.objects.get(username=DEMO_ACCOUNTS[0][0])
    annotators = [User.objects.get(username=name) for name, _, role in DEMO_ACCOUNTS if role == Role.ANNOTATOR]
    rows = []
    for name, kind, task_set_name, description in DEMO_PROJECTS:
        project = AnnotationProject.objects.filter(name=name).first()
        created = False
        if project is None:
            task_set = TaskSet.objects.filter(name=task_set_name).first()
            if task_set is None:
                continue
            with transaction.atomic():
                project = project_create(name=name, kind=kind, created_by=curator, task_set=task_set,
                                         description=description)
                for user in annotators:
                    membership_add(project=project, user=user, role=Role.ANNOTATOR, actor=curator)
            created = True
        rows.append((name, project.items.count(), created))
    return rows
