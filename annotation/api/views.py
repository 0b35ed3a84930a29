"""The annotation workspace's API: projects, items, claims, labels, gold labels, preferences.

Access follows project membership (``project_role``): non-members get 404 for a project and
its items, so outsiders cannot tell which projects exist. What an item shows comes from
``item_context_for`` (blind mode); lists of labels, gold labels and verdicts use the same rule
(``visibility``). Labelling services check roles themselves (viewers are refused).
"""

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from benchmark.api.common import DetailApi, GenericApi, LabellerWrites, ListApi, input_of
from config.parsers import BoundedJSONField

from ..assignment import assignment_skip, next_item_for
from ..models import AnnotationItem, AnnotationProject, Assignment
from ..selectors import item_context_for, project_progress, project_role, projects_for
from ..services.labels import label_submit
from ..services.review import item_adjudicate
from .visibility import visible_gold_labels, visible_labels, visible_preferences


def member_project(request, pk: int) -> tuple[AnnotationProject, str]:
    project = get_object_or_404(AnnotationProject, pk=pk)
    role = project_role(project=project, user=request.user)
    if role is None:
        raise Http404("No such project")
    return project, role


class ContextSerializer(serializers.Serializer):
    """``item_context_for``: project, role, item, target, own_label, claim, revealed, other_labels,
    judge, gold (hidden parts are null in a blind project until the user has labelled)."""

    project = serializers.DictField()
    role = serializers.CharField()
    item = serializers.DictField()
    target = serializers.DictField()
    own_label = serializers.DictField(allow_null=True)
    claim = serializers.DictField(allow_null=True)
    revealed = serializers.BooleanField()
    other_labels = serializers.ListField(child=serializers.DictField(), allow_null=True)
    judge = serializers.DictField(allow_null=True)
    gold = serializers.DictField(allow_null=True)


class AssignmentOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Assignment
        fields = ["id", "project", "item", "user", "claimed_at", "expires_at", "status", "ended_at"]


class LabellerApi:
    permission_classes = [IsAuthenticated, LabellerWrites]


# --- Projects ---------------------------------------------------------------------------------


class ProjectListApi(ListApi):
    class OutputSerializer(serializers.ModelSerializer):
        my_role = serializers.CharField(read_only=True, allow_null=True)
        n_items = serializers.IntegerField(read_only=True)
        n_settled = serializers.IntegerField(read_only=True)

        class Meta:
            model = AnnotationProject
            fields = ["id", "name", "description", "kind", "status", "blind", "overlap", "task_set", "label_set", "label_level",
                      "dimensions", "item_kinds", "my_role", "n_items", "n_settled", "created_at"]

    filter_fields = {"kind": "kind", "status": "status", "task_set": "task_set_id"}
    ordering_fields = ("name", "created_at", "status")

    def get_queryset(self):
        return projects_for(self.request.user).order_by("-created_at", "-id")


class ProjectDetailApi(DetailApi):
    OutputSerializer = ProjectListApi.OutputSerializer

    def get_queryset(self):
        return projects_for(self.request.user)


class ProjectProgressApi(GenericApi):
    class OutputSerializer(serializers.Serializer):
        project_id = serializers.IntegerField()
        role = serializers.CharField()
        items = serializers.IntegerField()
        open = serializers.IntegerField()
        complete = serializers.IntegerField()
        adjudicated = serializers.IntegerField()
        awaiting_adjudication = serializers.IntegerField()
        labels_done = serializers.IntegerField()
        labels_needed = serializers.IntegerField()
        annotators = serializers.ListField(child=serializers.DictField())

    def get(self, request, pk: int):
        """Totals, and per-annotator counts (everyone's for curators, only one's own for annotators)."""
        project, _ = member_project(request, pk)
        return Response(self.OutputSerializer(project_progress(project=project, user=request.user)).data)


# --- Items ------------------------------------------------------------------------------------


class ProjectItemListApi(ListApi):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = AnnotationItem
            fields = ["id", "project", "target_kind", "target_id", "task", "position", "labels_needed",
                      "labels_done", "status", "completed_at"]

    filter_fields = {"status": "status", "task": "task_id", "target_kind": "target_kind"}
    ordering_fields = ("position", "labels_done", "completed_at")

    def get_queryset(self):
        project, _ = member_project(self.request, self.kwargs["pk"])
        return AnnotationItem.objects.filter(project=project).order_by("position", "id")


class ItemDetailApi(GenericApi):
    OutputSerializer = ContextSerializer

    def get(self, request, pk: int):
        """What the workspace shows you about this item (blind until you have labelled it)."""
        item = get_object_or_404(AnnotationItem, pk=pk)
        member_project(request, item.project_id)
        return Response(ContextSerializer(item_context_for(item=item, user=request.user)).data)


class ItemAdjudicateApi(GenericApi):
    class InputSerializer(serializers.Serializer):
        value = BoundedJSONField()
        note = serializers.CharField(required=False, allow_blank=True, max_length=10000)
        expected_version = serializers.IntegerField(required=False, allow_null=True, min_value=1)

    OutputSerializer = ContextSerializer

    @extend_schema(request=InputSerializer, responses={201: ContextSerializer})
    def post(self, request, pk: int):
        """A curator's gold label for a complete item whose labels disagree."""
        item = get_object_or_404(AnnotationItem, pk=pk)
        member_project(request, item.project_id)
        data = input_of(self, request)
        item_adjudicate(item=item, curator=request.user, value=data["value"], note=data.get("note", ""),
                        expected_version=data.get("expected_version"))
        return Response(ContextSerializer(item_context_for(item=item, user=request.user)).data,
                        status=status.HTTP_201_CREATED)

    def get_permissions(self):  # project curators (not only global ones) adjudicate; the service checks
        return [IsAuthenticated(), LabellerWrites()]


# --- Claims -----------------------------------------------------------------------------------


class NextItemApi(LabellerApi, GenericApi):
    class OutputSerializer(serializers.Serializer):
        assignment = AssignmentOutputSerializer(allow_null=True)
        item = ContextSerializer(allow_null=True)

    @extend_schema(request=None, responses={200: OutputSerializer})
    def post(self, request, pk: int):
        """Claim your next item (or get the one you hold); both null when nothing is left for you."""
        project, _ = member_project(request, pk)
        assignment = next_item_for(project=project, user=request.user)
        if assignment is None:
            return Response({"assignment": None, "item": None})
        context = item_context_for(item=assignment.item, user=request.user)
        return Response(self.OutputSerializer({"assignment": assignment, "item": context}).data)


class AssignmentListApi(ListApi):
    OutputSerializer = AssignmentOutputSerializer
    filter_fields = {"project": "project_id", "status": "status", "item": "item_id"}
    ordering_fields = ("claimed_at", "expires_at")

    def get_queryset(self):
        return Assignment.objects.filter(user=self.request.user).order_by("-claimed_at", "-id")


class AssignmentSkipApi(LabellerApi, GenericApi):
    OutputSerializer = AssignmentOutputSerializer

    def get_queryset(self):
        return Assignment.objects.filter(user=self.request.user)

    @extend_schema(request=None, responses={200: AssignmentOutputSerializer})
    def post(self, request, pk: int):
        """Give the item back; it is not offered to you again."""
        skipped = assignment_skip(assignment=self.get_object(), user=request.user)
        return Response(AssignmentOutputSerializer(skipped).data)


# --- Labels, gold labels, preferences ---------------------------------------------------------


class LabelListApi(LabellerApi, ListApi):
    class InputSerializer(serializers.Serializer):
        item = serializers.PrimaryKeyRelatedField(queryset=AnnotationItem.objects.all())
        value = BoundedJSONField()
        client_token = serializers.UUIDField(help_text="one per form: resubmitting it returns the first label")

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        project = serializers.IntegerField(source="project_id")
        item = serializers.IntegerField(source="item_id")
        annotator = serializers.IntegerField(source="annotator_id")
        annotator_name = serializers.CharField(source="annotator.username")
        value = serializers.JSONField()
        created_at = serializers.DateTimeField()

    filter_fields = {"project": "project_id", "item": "item_id", "annotator": "annotator_id"}
    ordering_fields = ("created_at",)

    def get_queryset(self):
        return visible_labels(self.request.user).select_related("annotator").order_by("created_at", "id")

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        """Submit your label for an item you may label (final; undo in the workspace)."""
        data = input_of(self, request)
        member_project(request, data["item"].project_id)
        label = label_submit(
            item=data["item"], annotator=request.user, value=data["value"], client_token=data["client_token"]
        )
        return Response(self.OutputSerializer(label).data, status=status.HTTP_201_CREATED)


class GoldLabelListApi(ListApi):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        item = serializers.IntegerField(source="item_id")
        project = serializers.IntegerField(source="item.project_id")
        value = serializers.JSONField()
        note = serializers.CharField()
        decided_by = serializers.IntegerField(source="decided_by_id")
        decided_at = serializers.DateTimeField()

    filter_fields = {"project": "item__project_id", "item": "item_id"}
    ordering_fields = ("decided_at",)

    def get_queryset(self):
        return visible_gold_labels(self.request.user).select_related("item").order_by("decided_at", "id")


class PreferenceListApi(ListApi):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        task = serializers.IntegerField(source="task_id")
        report_left = serializers.IntegerField(source="report_left_id")
        report_right = serializers.IntegerField(source="report_right_id")
        annotator = serializers.IntegerField(source="annotator_id")
        component = serializers.CharField()
        choice = serializers.CharField()
        dimensions = serializers.JSONField()
        reason = serializers.CharField()
        seconds_taken = serializers.FloatField(allow_null=True)
        labeled_at = serializers.DateTimeField()
        source = serializers.CharField()
        project = serializers.IntegerField(source="project_id", allow_null=True)

    filter_fields = {"task": "task_id", "project": "project_id", "source": "source", "component": "component",
                     "choice": "choice"}
    ordering_fields = ("labeled_at", "task")

    def get_queryset(self):
        return visible_preferences(self.request.user).order_by("-labeled_at", "-id")
