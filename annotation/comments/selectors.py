"""Reads of the discussion on items: an item's comments as shown, a user's unread mentions."""

from benchmark.rendering import markdown_to_safe_html

from ..models import AnnotationItem
from .models import CommentNotification, ItemComment

COMMENTS_SHOWN = 200  # the newest of an item's comments a panel or answer lists


def item_comments(*, item: AnnotationItem) -> list[dict]:
    """The item's comments, oldest first (the newest ``COMMENTS_SHOWN``), each with its text as
    sanitized HTML (markdown through nh3: ``markdown_to_safe_html``). Two queries."""
    rows = list(ItemComment.objects.filter(item=item).select_related("author").prefetch_related("mentions")
                .order_by("-created_at", "-id")[:COMMENTS_SHOWN])
    return [{"id": row.pk, "author": row.author.username, "text": row.text, "html": markdown_to_safe_html(row.text),
             "mentions": [user.username for user in row.mentions.all()], "created_at": row.created_at}
            for row in reversed(rows)]


def unread_mentions(*, user, limit: int = 50) -> list[dict]:
    """The user's unread mentions, newest first: which item of which project, by whom."""
    rows = (CommentNotification.objects.filter(user=user, read_at__isnull=True)
            .select_related("comment__author", "comment__item").order_by("-created_at", "-id")[:limit])
    return [{"id": row.pk, "comment": row.comment_id, "item": row.comment.item_id,
             "project": row.comment.item.project_id, "position": row.comment.item.position,
             "author": row.comment.author.username, "created_at": row.created_at} for row in rows]
