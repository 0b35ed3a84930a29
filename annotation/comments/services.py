"""Writes of the discussion on items: post a comment (its mentions notified), mark
notifications read. Each in one transaction with its audit row."""

import logging
import re

from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from core.accounts import is_global_curator
from core.audit_actions import AuditAction

from ..blind import item_reachable, item_revealed
from ..models import AnnotationItem, ProjectMembership
from ..selectors.projects import project_role
from ..services.audit import audit_record
from .models import COMMENT_MAX, CommentNotification, ItemComment

log = logging.getLogger(__name__)
MENTION = re.compile(r"(?<![\w@])@([\w.+-]{1,150})")
MENTIONS_MAX = 20  # people one comment may notify


class CommentsClosed(PermissionError):
    """The user may reach the item but not (yet) its discussion: in a blind project, until their
    label is committed and the reveal policy allows it."""


class ItemUnreachable(LookupError):
    """The user may not reach the item at all: answered exactly as a missing item."""


def comment_access(*, item: AnnotationItem, user) -> str:
    """The user's role when they may read and write the item's comments (``item.project`` read
    along). ``ItemUnreachable`` for someone who may not reach the item (no member; in a blind
    project, anyone ``annotation.blind.item_reachable`` keeps out); ``CommentsClosed`` while the item
    still hides what others did from them (``annotation.blind.item_revealed``: the same rule as
    others' labels, since comments speak of them)."""
    role = project_role(project=item.project, user=user)
    if role is None:
        raise ItemUnreachable(item.pk)
    if item_revealed(item=item, role=role, user=user):
        return role
    if not item_reachable(item=item, project=item.project, role=role, user=user):  # the blind reach rule (#37)
        raise ItemUnreachable(item.pk)
    raise CommentsClosed(
        "The discussion of this item opens to you once your label on it is committed"
        + (" and the study has closed (this project reveals at close)." if item.project.reveal == "close"
           else "." if role != "curator" else ": curators of a blind project read it once the item is settled.")
    )


def _mentioned(item: AnnotationItem, text: str, author) -> list:
    """The project's members and global curators named ``@username`` in ``text`` who may read the
    item's comments (in a blind project nobody is led to an item that still hides its labels)."""
    names = {name.rstrip(".") for name in MENTION.findall(text)}
    if not names:
        return []
    User = get_user_model()
    members = ProjectMembership.objects.filter(project=item.project).values("user_id")
    found = User.objects.filter(Q(pk__in=members) | Q(is_superuser=True) | Q(profile__role="curator"),
                                username__in=list(names)[:MENTIONS_MAX], is_active=True).exclude(pk=author.pk)
    readers = []
    for user in found.select_related("profile"):
        try:
            comment_access(item=item, user=user)
        except (ItemUnreachable, CommentsClosed):
            continue
        if ProjectMembership.objects.filter(project=item.project, user=user).exists() or is_global_curator(user):
            readers.append(user)
    return readers


def _email(notification_ids: list[int], site: str) -> None:
    """After the commit: each mentioned member with an address gets a short e-mail through
    Django's e-mail backend (never the comment's text: it may speak of labels the mail would
    carry outside the project). ``site``: the scheme and host the link starts with."""
    for note in CommentNotification.objects.filter(pk__in=notification_ids).select_related(
            "user", "comment__author", "comment__item"):
        if not note.user.email:
            continue
        item = note.comment.item
        path = reverse("annotation:comments", kwargs={"project_id": item.project_id, "item_id": item.pk})
        try:
            send_mail(
                subject=f"You were mentioned on item {item.position}",
                message=f"{note.comment.author.username} mentioned you in the discussion of item {item.position}.\n"
                        f"Open it: {site.rstrip('/')}{path}\n",
                from_email=None, recipient_list=[note.user.email],
            )
        except Exception:  # a mail server that refuses never undoes the comment; it is logged
            log.exception("mention e-mail to user %s failed", note.user_id)
            continue
        CommentNotification.objects.filter(pk=note.pk).update(emailed=True)


@transaction.atomic
def comment_post(*, item: AnnotationItem, author, text: str, site: str = "") -> ItemComment:
    """A comment on the item by ``author`` (``comment_access`` decides), its mentions notified
    (in-app; by e-mail after the commit where the member has an address; ``site``: the scheme
    and host of the link in it). ``ValueError`` naming ``text`` when it is empty or too long;
    nothing is stored then."""
    comment_access(item=item, user=author)
    text = (text or "").strip()
    if not text:
        raise ValueError("text: write something to post")
    if len(text) > COMMENT_MAX:
        raise ValueError(f"text: at most {COMMENT_MAX} characters, not {len(text)}")
    comment = ItemComment.objects.create(project=item.project, item=item, author=author, text=text)
    mentioned = _mentioned(item, text, author)
    comment.mentions.set(mentioned)
    notes = CommentNotification.objects.bulk_create(
        [CommentNotification(user=user, comment=comment) for user in mentioned])
    audit_record(actor=author, action=AuditAction.COMMENT_POST, target_kind="annotation_item", target_id=item.pk,
                 project=item.project, after={"comment_id": comment.pk, "text": text,
                                              "mentions": [user.username for user in mentioned]})
    if notes:
        ids = [note.pk for note in notes]
        transaction.on_commit(lambda: _email(ids, site), robust=True)
    return comment


def notifications_read(*, user, item: AnnotationItem) -> int:
    """Mark the user's notifications about the item's comments read (they opened its discussion)."""
    return CommentNotification.objects.filter(user=user, comment__item=item, read_at__isnull=True).update(
        read_at=timezone.now())
