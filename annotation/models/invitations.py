"""Invitations by e-mail: one row per invitee of a project, with its one-time link's hash.

The link's secret exists in clear only in the e-mail and on the page (or API answer) that made
it; the row keeps its SHA-256, so a leaked database opens no invitation. A resend draws a new
secret (the old link stops working) and a new expiry."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.models import Role, TimeStamped

from .workspace import AnnotationProject


class InvitationStatus(models.TextChoices):
    SENT = "sent", "sent"
    FAILED = "failed", "not delivered"  # the e-mail backend refused it; resend, or copy the link
    OPENED = "opened", "opened"
    JOINED = "joined", "joined"
    REVOKED = "revoked", "revoked"


# An invitation whose link may still be used (before its expiry).
INVITATION_OPEN = (InvitationStatus.SENT, InvitationStatus.FAILED, InvitationStatus.OPENED)


class Invitation(TimeStamped):
    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(help_text="stored in lower case")
    name = models.CharField(max_length=150, blank=True)
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.ANNOTATOR)
    token_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 (hex) of the link's secret")
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=InvitationStatus.choices, default=InvitationStatus.SENT)
    send_error = models.CharField(max_length=300, blank=True, help_text="why the last sending failed")
    send_count = models.PositiveSmallIntegerField(default=0)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+", help_text="the account that joined through it")
    sent_at = models.DateTimeField(null=True, blank=True)
    opened_at = models.DateTimeField(null=True, blank=True)
    joined_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # one live invitation per address and project: a second one is a resend
            models.UniqueConstraint(fields=["project", "email"], condition=Q(status__in=[s.value for s in INVITATION_OPEN]),
                                    name="invitation_open_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.project.name} ({self.status})"
