"""Comments on annotation items and the notifications their mentions send."""

from django.conf import settings
from django.db import models

from ..models.workspace import AnnotationItem, AnnotationProject

COMMENT_MAX = 5000


class ItemComment(models.Model):
    project = models.ForeignKey(AnnotationProject, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(AnnotationItem, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    text = models.TextField(max_length=COMMENT_MAX)
    mentions = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["item", "created_at"])]

    def __str__(self) -> str:
        return f"comment {self.pk} on item {self.item_id}"


class CommentNotification(models.Model):
    """One mention of a user in a comment; read once they open it (``read_at``)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="comment_notifications")
    comment = models.ForeignKey(ItemComment, on_delete=models.CASCADE, related_name="notifications")
    emailed = models.BooleanField(default=False)
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["user", "comment"], name="comment_notification_unique")]
        indexes = [models.Index(fields=["user", "read_at"])]
