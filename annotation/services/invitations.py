"""Invitations by e-mail: a curator invites a list of addresses to a project; each invitee gets a
one-time link, opens it, and joins (a new account, or the one they are signed in with, or the
one their institution's identity provider signs them in with: ``invitations_join_for``).

The link's secret is returned to the caller and put in the e-mail, never stored (the row keeps
its hash). Every write has its audit row in the same transaction; sending happens after the rows
are committed, one message at a time on one connection, so one refused address marks only its own
invitation ``failed`` (with the backend's reason) and the others still go out."""

import csv
import hashlib
import secrets
from collections.abc import Callable
from datetime import timedelta
from email.utils import parseaddr

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage, get_connection
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.template.loader import render_to_string
from django.utils import timezone

from core.audit_actions import AuditAction
from core.models import AnnotatorProfile
from core.oidc import oidc_enabled, oidc_provider_name

from ..models import INVITATION_OPEN, AnnotationProject, Invitation, InvitationStatus, ProjectMembership, Role
from .accounts import _account_new
from .audit import audit_record
from .projects import _require_curator

# How many addresses one request may invite: a lab's list, not a mailing.
INVITEES_MAX = 500

LinkFor = Callable[[str], str]  # the link's secret -> the absolute URL of the page that accepts it


class InvitationUnusable(Exception):
    """The link names no invitation that can still be accepted; the message says why, for the page."""


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_secret() -> tuple[str, str]:
    token = secrets.token_urlsafe(32)
    return token, _token_hash(token)


def _expiry():
    return timezone.now() + timedelta(days=settings.INVITATION_EXPIRY_DAYS)


def invitee_of(entry: str) -> tuple[str, str]:
    """``(name, email)`` of one entry, ``a@b`` or ``Name <a@b>`` (the address unchecked yet)."""
    entry = entry.strip()
    if "<" in entry:
        name, email = parseaddr(entry)
        return name.strip()[:150], (email or entry).lower()
    return "", entry.lower()


def invitees_parse(text: str) -> list[tuple[str, str]]:
    """``(name, email)`` for each line of a pasted list or an uploaded CSV: ``a@b``,
    ``Name <a@b>``, or CSV fields one of which is the address (another, if any, the name; a
    header line without an address is skipped). Several addresses on a line may be separated by
    commas or semicolons when the line has no name. ``ValueError`` naming every bad line."""
    invitees, errors = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "<" in line:
            entries = [invitee_of(line)[::-1]]
        else:
            fields = [field.strip() for field in next(csv.reader([line.replace(";", ",")]))]
            addresses = [field for field in fields if "@" in field]
            others = [field for field in fields if field and "@" not in field]
            if not addresses:
                if number == 1:  # a CSV header ("email,name")
                    continue
                errors.append(f"line {number}: {line[:80]!r} has no e-mail address")
                continue
            name = " ".join(others) if len(addresses) == 1 else ""
            entries = [(address, name) for address in addresses]
        for email, name in entries:
            try:
                validate_email(email)
            except ValidationError:
                errors.append(f"line {number}: {email[:80]!r} is not an e-mail address")
                continue
            invitees.append((name[:150], email.lower()))
    if errors:
        raise ValueError("emails: " + "; ".join(errors))
    return invitees


def _send(invitations: list[tuple[Invitation, str]]) -> None:
    """Send each invitation its link on one connection; record per invitation what happened."""
    sso = oidc_provider_name() if oidc_enabled() else ""
    connection = get_connection(fail_silently=False)
    try:
        connection.open()
    except Exception as exc:  # the backend is unreachable: every one of them failed, for that reason
        opened, failure = False, f"{type(exc).__name__}: {exc}"
    else:
        opened, failure = True, ""
    try:
        for invitation, link in invitations:
            error = failure
            if opened:
                message = EmailMessage(
                    subject=f"Invitation to “{invitation.project.name}” on Survey Eval Studio",
                    body=render_to_string("annotation/email/invitation.txt",
                                          {"invitation": invitation, "link": link, "sso_provider": sso}),
                    to=[invitation.email], connection=connection)
                try:
                    message.send()
                except Exception as exc:  # an SMTP refusal of this address, or a dropped connection
                    error = f"{type(exc).__name__}: {exc}"
            _record_sending(invitation, error)
    finally:
        if opened:
            connection.close()


@transaction.atomic
def _record_sending(invitation: Invitation, error: str) -> None:
    now = timezone.now()
    Invitation.objects.filter(pk=invitation.pk, status__in=INVITATION_OPEN).update(
        status=InvitationStatus.FAILED if error else InvitationStatus.SENT, send_error=error[:300],
        sent_at=None if error else now, updated_at=now)
    audit_record(actor=None, action=AuditAction.INVITATION_SEND_FAIL if error else AuditAction.INVITATION_SEND,
                 target_kind="invitation", target_id=invitation.pk, project=invitation.project,
                 after={"email": invitation.email, **({"error": error[:300]} if error else {})})
    invitation.refresh_from_db()


def invitations_create(*, project: AnnotationProject, invitees: list[tuple[str, str]], role: str, actor,
                       link_for: LinkFor) -> list[tuple[Invitation, str]]:
    """One invitation per ``(name, email)``, each e-mailed its link: ``[(invitation, link)]``.

    Refused as a whole (``ValueError`` naming each address) when an address is malformed,
    repeated, already invited to the project (resend that one) or already a member's; nothing
    is stored then."""
    if role not in Role.values:
        raise ValueError(f"role: {role!r} is not one of {', '.join(Role.values)}")
    if not invitees:
        raise ValueError("emails: give at least one e-mail address")
    if len(invitees) > INVITEES_MAX:
        raise ValueError(f"emails: at most {INVITEES_MAX} addresses at once ({len(invitees)} given)")
    try:
        made = _invitations_store(project=project, invitees=invitees, role=role, actor=actor, link_for=link_for)
    except IntegrityError:  # the same address invited by another request at the same moment (a double click)
        raise ValueError("emails: some of these addresses were just invited by another request; reload the page "
                         "to see them (nothing was sent twice)") from None
    _send(made)
    return made


@transaction.atomic
def _invitations_store(*, project, invitees, role, actor, link_for) -> list[tuple[Invitation, str]]:
    """The rows and their audit rows, in one transaction, after the checks; ``[(invitation, link)]``."""
    _require_curator(project=project, user=actor, action="invite people")
    errors, seen = [], set()
    for _, email in invitees:
        try:
            validate_email(email)
        except ValidationError:
            errors.append(f"{email[:80]!r} is not an e-mail address")
        if email in seen:
            errors.append(f"{email} is listed twice")
        seen.add(email)
    pending = set(Invitation.objects.filter(project=project, email__in=seen, status__in=INVITATION_OPEN)
                  .values_list("email", flat=True))
    members = set(ProjectMembership.objects.annotate(address=Lower("user__email"))
                  .filter(project=project, address__in=seen).values_list("address", flat=True))
    errors += [f"{email} is already invited (resend that invitation)" for email in sorted(pending)]
    errors += [f"{email} is already a member" for email in sorted(members)]
    if errors:
        raise ValueError("emails: " + "; ".join(errors))
    made = []
    for name, email in invitees:
        token, token_hash = _new_secret()
        invitation = Invitation.objects.create(
            project=project, email=email, name=name, role=role, token_hash=token_hash, expires_at=_expiry(),
            invited_by=actor, send_count=1)
        audit_record(actor=actor, action=AuditAction.INVITATION_CREATE, target_kind="invitation",
                     target_id=invitation.pk, project=project,
                     after={"email": email, "name": name, "role": role, "expires_at": invitation.expires_at.isoformat()})
        made.append((invitation, link_for(token)))
    return made


def invitation_resend(*, invitation: Invitation, actor, link_for: LinkFor) -> str:
    """A new link (the previous one stops working) with a new expiry, e-mailed again; the link."""
    with transaction.atomic():
        _require_curator(project=invitation.project, user=actor, action="invite people")
        locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if locked.status not in INVITATION_OPEN:
            raise ValueError(f"invitation: {locked.email} has {locked.get_status_display()}; nothing to resend")
        token, locked.token_hash = _new_secret()
        before = {"expires_at": locked.expires_at.isoformat()}
        locked.expires_at, locked.send_count = _expiry(), locked.send_count + 1
        locked.save(update_fields=["token_hash", "expires_at", "send_count", "updated_at"])
        audit_record(actor=actor, action=AuditAction.INVITATION_RESEND, target_kind="invitation", target_id=locked.pk,
                     project=locked.project, before=before, after={"expires_at": locked.expires_at.isoformat()})
    link = link_for(token)
    _send([(locked, link)])
    invitation.refresh_from_db()
    return link


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor) -> Invitation:
    """Its link stops working at once; a joined member stays (remove them from the members)."""
    _require_curator(project=invitation.project, user=actor, action="invite people")
    locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if locked.status not in INVITATION_OPEN:
        raise ValueError(f"invitation: {locked.email} has {locked.get_status_display()}; nothing to revoke")
    before = {"status": locked.status}
    locked.status, locked.revoked_at = InvitationStatus.REVOKED, timezone.now()
    locked.save(update_fields=["status", "revoked_at", "updated_at"])
    audit_record(actor=actor, action=AuditAction.INVITATION_REVOKE, target_kind="invitation", target_id=locked.pk,
                 project=locked.project, before=before, after={"status": locked.status})
    return locked


def invitation_for_token(token: str) -> Invitation:
    """The invitation the link's secret names, if it can still be accepted; ``InvitationUnusable``
    saying why not (the same words for an unknown secret as for a used one: a link tells no
    stranger which invitations exist)."""
    invitation = (Invitation.objects.select_related("project").filter(token_hash=_token_hash(token or "")).first()
                  if token else None)
    if invitation is None or invitation.status == InvitationStatus.JOINED:
        raise InvitationUnusable("This invitation link is not valid: it may have been used already, or replaced by "
                                 "a newer one. Ask the curator who invited you to send it again.")
    if invitation.status == InvitationStatus.REVOKED:
        raise InvitationUnusable("This invitation was withdrawn by the project's curators.")
    if invitation.expires_at <= timezone.now():
        raise InvitationUnusable(f"This invitation expired on {invitation.expires_at:%Y-%m-%d %H:%M} UTC. "
                                 "Ask the curator who invited you to send it again.")
    return invitation


def invitation_joined_by(*, token: str, user) -> Invitation | None:
    """The invitation ``user`` joined through this link, if they did (back from the provider's
    sign-in started on the invitation's page, which joined them on the way)."""
    if not token or not getattr(user, "is_authenticated", False):
        return None
    return Invitation.objects.filter(token_hash=_token_hash(token), status=InvitationStatus.JOINED, user=user).first()


@transaction.atomic
def invitation_open(*, invitation: Invitation) -> None:
    """The first opening of the link: ``sent`` (or ``failed``, the link having been copied) → ``opened``."""
    changed = Invitation.objects.filter(
        pk=invitation.pk, status__in=(InvitationStatus.SENT, InvitationStatus.FAILED)
    ).update(status=InvitationStatus.OPENED, opened_at=timezone.now(), updated_at=timezone.now())
    if changed:
        audit_record(actor=None, action=AuditAction.INVITATION_OPEN, target_kind="invitation", target_id=invitation.pk,
                     project=invitation.project, after={"status": InvitationStatus.OPENED})
        invitation.refresh_from_db()


def _join(invitation: Invitation, user) -> None:
    """Make ``user`` a member with the invitation's role (a higher role already held is kept)."""
    membership = ProjectMembership.objects.filter(project=invitation.project, user=user).first()
    if membership is None:
        ProjectMembership.objects.create(project=invitation.project, user=user, role=invitation.role)
        audit_record(actor=user, action=AuditAction.MEMBERSHIP_SET, target_kind="user", target_id=user.pk,
                     project=invitation.project, before=None, after={"role": invitation.role, "by": "invitation"})
    now = timezone.now()
    Invitation.objects.filter(pk=invitation.pk).update(status=InvitationStatus.JOINED, user=user, joined_at=now,
                                                       updated_at=now)
    audit_record(actor=user, action=AuditAction.INVITATION_JOIN, target_kind="invitation", target_id=invitation.pk,
                 project=invitation.project, before={"status": invitation.status},
                 after={"status": InvitationStatus.JOINED, "user": user.pk})


@transaction.atomic
def invitation_accept(*, token: str, user=None, username: str = "", password: str = ""):
    """Accept the invitation the link names: as ``user`` (signed in), or as a new account
    ``username`` with ``password`` and the invitation's address. The account (new or linked).
    ``InvitationUnusable`` for a dead link; ``ValueError`` naming the field for bad input, with
    nothing stored and the invitation still open."""
    invitation = invitation_for_token(token)
    invitation = Invitation.objects.select_for_update().select_related("project").get(pk=invitation.pk)
    if invitation.status not in INVITATION_OPEN:  # accepted in another tab meanwhile
        raise InvitationUnusable("This invitation link has just been used.")
    if user is None:
        if get_user_model().objects.filter(email__iexact=invitation.email).exists():
            raise ValueError(f"username: an account with the address {invitation.email} exists already: "
                             "log in with it, then open this link again")
        user = _account_new(username=username, role=Role.ANNOTATOR, roles=(Role.ANNOTATOR,), email=invitation.email)
        user.is_staff = False  # a project curator by invitation curates that project, not the site
        try:
            validate_password(password, user=user)
        except ValidationError as exc:
            raise ValueError("password: " + " ".join(exc.messages)) from None
        user.set_password(password)
        try:
            with transaction.atomic():
                user.save()
        except IntegrityError:  # the same name taken by another sign-up at the same moment
            raise ValueError(f"username: an account named {user.username!r} already exists") from None
        AnnotatorProfile.objects.create(user=user, role=Role.VIEWER if invitation.role == Role.VIEWER else Role.ANNOTATOR)
        audit_record(actor=user, action=AuditAction.ACCOUNT_CREATE, target_kind="user", target_id=user.pk,
                     after={"username": user.username, "email": user.email, "by": "invitation"})
    _join(invitation, user)
    return user


@transaction.atomic
def invitations_join_for(*, user) -> list[Invitation]:
    """Every open, unexpired invitation to ``user``'s address, accepted as ``user``: an expert
    invited by e-mail who signs in with their institution's identity provider lands in the
    projects they were invited to. The invitations joined."""
    if not user.email:
        return []
    invitations = list(Invitation.objects.select_for_update().select_related("project").filter(
        email__iexact=user.email, status__in=INVITATION_OPEN, expires_at__gt=timezone.now()))
    for invitation in invitations:
        _join(invitation, user)
    return invitations
