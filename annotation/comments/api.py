"""The discussion API: ``/api/annotation-items/<id>/comments/`` (GET the comments, POST one) and
``/api/notifications/`` (your unread mentions)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from benchmark.api.common import GenericApi, input_of

from ..models import AnnotationItem
from .models import COMMENT_MAX
from .selectors import item_comments, unread_mentions
from .services import ItemUnreachable, comment_access, comment_post, notifications_read


def reachable_item(request, pk: int) -> AnnotationItem:
    """The item, once the user may read its discussion. An item they may not reach answers
    exactly as a missing one (the same 404 body); one whose discussion is still closed to them
    (blind, before their label) a 403 saying when it opens."""
    item = next(iter(AnnotationItem.objects.select_related("project").filter(pk=pk)[:1]), None)
    try:
        if item is None:
            raise ItemUnreachable(pk)
        comment_access(item=item, user=request.user)
    except ItemUnreachable:
        get_object_or_404(AnnotationItem.objects.none(), pk=pk)  # the very answer of a missing item
    return item


class CommentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    author = serializers.CharField()
    text = serializers.CharField()
    html = serializers.CharField(help_text="the text as sanitized HTML (markdown, cleaned by nh3)")
    mentions = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()


class ItemCommentListApi(GenericApi):
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(max_length=COMMENT_MAX, help_text="markdown; @username mentions a member")

    OutputSerializer = CommentSerializer

    def get_permissions(self):  # members of every role discuss; ``comment_access`` decides per item
        return [IsAuthenticated()]

    @extend_schema(responses={200: CommentSerializer(many=True)})
    def get(self, request, pk: int):
        """The item's discussion, oldest first (blind: once your label is committed and the reveal policy allows)."""
        item = reachable_item(request, pk)
        notifications_read(user=request.user, item=item)
        return Response(CommentSerializer(item_comments(item=item), many=True).data)

    @extend_schema(request=InputSerializer, responses={201: CommentSerializer})
    def post(self, request, pk: int):
        """Post a comment; ``@username`` notifies that member (in-app, and by e-mail where configured)."""
        item = reachable_item(request, pk)
        comment = comment_post(item=item, author=request.user, text=input_of(self, request)["text"],
                               site=request.build_absolute_uri("/"))
        shown = next(row for row in item_comments(item=item) if row["id"] == comment.pk)
        return Response(CommentSerializer(shown).data, status=status.HTTP_201_CREATED)


class NotificationListApi(GenericApi):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        comment = serializers.IntegerField()
        item = serializers.IntegerField()
        project = serializers.IntegerField()
        position = serializers.IntegerField()
        author = serializers.CharField()
        created_at = serializers.DateTimeField()

    def get_permissions(self):
        return [IsAuthenticated()]

    def get(self, request):
        """Your unread mentions, newest first (read once you open the item's discussion)."""
        return Response(self.OutputSerializer(unread_mentions(user=request.user), many=True).data)
