"""API tokens (DRF's ``Authorization: Token <key>``, one per account): issue, rotate, revoke.

A token is a password's equal, so it follows the password: logging in through the token
endpoint issues a fresh key (the previous one stops working: a token is never handed out twice),
changing the password revokes it (``tokens_revoke_on_password_change``, connected in
``core.apps``), and the account's token page (``/account/tokens/``) rotates or revokes it. The
key is shown once, when it is made, and never again: pages show when it was made, audit rows
record who did what to which account's token, never the key.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from rest_framework.authtoken.models import Token

from .audit import audit_log_record
from .audit_actions import AuditAction


@transaction.atomic
def api_token_issue(*, user, actor=None, reason: str = "issued") -> Token:
    """A fresh key for ``user``, replacing any previous one (which stops working at once)."""
    replaced = Token.objects.filter(user=user).delete()[0] > 0
    token = Token.objects.create(user=user)
    audit_log_record(target_model=get_user_model(), target_id=user.pk, note=reason,
                     action=AuditAction.API_TOKEN_ROTATE if replaced else AuditAction.API_TOKEN_ISSUE, actor=actor or user)
    return token


@transaction.atomic
def api_token_revoke(*, user, actor=None, reason: str = "revoked") -> bool:
    """Remove ``user``'s token; whether there was one."""
    removed = Token.objects.filter(user=user).delete()[0] > 0
    if removed:
        audit_log_record(target_model=get_user_model(), target_id=user.pk, action=AuditAction.API_TOKEN_REVOKE, actor=actor,
                         note=reason)
    return removed


def tokens_revoke_on_password_change(sender, instance, update_fields=None, raw=False, **kwargs) -> None:
    """``pre_save`` of the user model: a changed password hash revokes the account's token, however
    it changed (the password form, an invite link, the admin, ``changepassword``)."""
    if raw or instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    stored = get_user_model().objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if stored is not None and stored != instance.password:
        api_token_revoke(user=instance, reason="the password changed")
