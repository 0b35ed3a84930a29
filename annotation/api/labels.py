"""The annotation API's labelling loop: the next items to label, claims, labels (one and in
batches), gold labels and preferences. The rules of access and blind mode are those of
``annotation.api.views`` (projects and items), whose helpers these views use."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from benchmark.api.common import GenericApi, ListApi, input_of
from core.bounded import BoundedIntegerSerializerField, integer_check
from core.converters import MAX_ID
from core.parsers import BoundedJSONField

from ..loop.claims import MAX_CLAIMS, assignment_skip, claim_next_items
from ..blind import label_value_shown, labeller_revealed, visible_gold_labels, visible_labels, visible_preferences
from ..models import AnnotationProject, Assignment
from ..selectors.targets import item_targets
from ..selectors.workspace import item_context_for
from ..loop.labels import Submission, label_submit_and_claim, label_submit_many
from .views import AssignmentOutputSerializer, ContextSerializer, LabellerApi, member_project


def claims_answer(request, project: AnnotationProject, role: str, *, count: int = 1) -> list[dict]:
    """Claim the user's next ``count`` items (or return those held): ``{"assignment", "item"}``
    each, the item as ``item_context_for`` shows it (blind mode)."""
    claims = claim_next_items(project=project, user=request.user, role=role, count=count)
    targets = item_targets([claim.item for claim in claims if not hasattr(claim.item, "target_row")], with_text=True)
    return [
        {"assignment": claim, "item": item_context_for(item=claim.item, user=request.user, role=role, claim=claim,
                                                       project=project, target=targets.get(claim.item.pk))}
        for claim in claims
    ]


class NextItemApi(LabellerApi, GenericApi):
    class OutputSerializer(serializers.Serializer):
        assignment = AssignmentOutputSerializer(allow_null=True)
        item = ContextSerializer(allow_null=True)

    class BatchOutputSerializer(serializers.Serializer):
        claims = serializers.ListField(child=serializers.DictField())

    @extend_schema(request=None, responses={200: OutputSerializer})
    def post(self, request, pk: int):
        """Claim your next item (or get the one you hold); both null when nothing is left for you.
        ``?count=N`` (1 to 50): claim up to N items at once, each held and reclaimed like one;
        the answer is then ``{"claims": [{"assignment", "item"}, ...]}`` (fewer, or none, when
        less is left), the claims you hold first."""
        project, role = member_project(request, pk)
        raw = request.query_params.get("count")
        if raw is not None:
            count = integer_check("count", raw, min_value=1, max_value=MAX_CLAIMS)  # ASCII digits only
            claims = claims_answer(request, project, role, count=count)
            return Response({"claims": self.OutputSerializer(claims, many=True).data})
        claims = claims_answer(request, project, role)
        if not claims:
            return Response({"assignment": None, "item": None})
        return Response(self.OutputSerializer(claims[0]).data)


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


MAX_BATCH = 50  # answers per POST /api/labels/batch/; documented in docs/performance.md


class LabelInputSerializer(serializers.Serializer):
    item = BoundedIntegerSerializerField(min_value=1, max_value=MAX_ID)
    value = BoundedJSONField()
    client_token = serializers.UUIDField(help_text="one per form: resubmitting it returns the first label")
    seconds_taken = serializers.FloatField(
        required=False, allow_null=True, min_value=0, default=None,
        help_text="how long the label took, in seconds (a pairwise value's own seconds_taken also counts)")


class LabelOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    item = serializers.IntegerField(source="item_id")
    annotator = serializers.IntegerField(source="annotator_id")
    annotator_name = serializers.CharField(source="annotator.username")
    value = serializers.SerializerMethodField()
    seconds_taken = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_value(self, label) -> dict:
        """Blind mode: no report ids until the item is revealed (``visible_labels`` says so of
        listed labels; a label just given is revealed to its labeller as its project says)."""
        revealed = getattr(label, "revealed", None)
        if revealed is None:
            revealed = labeller_revealed(label.project)
        return label_value_shown(label.value, revealed=revealed)


class LabelListApi(LabellerApi, ListApi):
    class InputSerializer(LabelInputSerializer):
        next = serializers.BooleanField(required=False, default=False,
                                        help_text="also claim your next item: the answer carries it")

    OutputSerializer = LabelOutputSerializer

    filter_fields = {"project": "project_id", "item": "item_id", "annotator": "annotator_id"}
    ordering_fields = ("created_at",)

    def get_queryset(self):
        return visible_labels(self.request.user).select_related("annotator").order_by("created_at", "id")

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        """Submit your label for an item you may label (final; undo in the workspace). With
        ``"next": true`` the answer is ``{"label": ..., "next": {"assignment", "item"}}``, the next
        item claimed as ``POST /api/projects/<id>/next/`` does (both null when nothing is left)."""
        data = input_of(self, request)
        submission = Submission(item_id=data["item"], value=data["value"], client_token=data["client_token"],
                                seconds_taken=data["seconds_taken"])
        if not data["next"]:
            (result,) = label_submit_many(annotator=request.user, submissions=[submission])
            if result.error is not None:
                raise result.error
            return Response(self.OutputSerializer(result.label).data, status=status.HTTP_201_CREATED)
        result, claims = label_submit_and_claim(annotator=request.user, submission=submission)
        if result.error is not None:
            raise result.error
        following = {"assignment": None, "item": None}
        if claims:
            claim = claims[0]
            project = result.label.project
            following = NextItemApi.OutputSerializer({"assignment": claim, "item": item_context_for(
                item=claim.item, user=request.user, role=result.role, claim=claim, project=project)}).data
        return Response({"label": self.OutputSerializer(result.label).data, "next": following},
                        status=status.HTTP_201_CREATED)


class LabelBatchApi(LabellerApi, GenericApi):
    class OutputSerializer(serializers.Serializer):
        results = serializers.ListField(child=serializers.DictField(), help_text=(
            "one per answer, in order: status (201 stored, 200 resubmitted form, else the status "
            "POST /api/labels/ would answer), label or error"))

    @extend_schema(request=LabelInputSerializer(many=True), responses={200: OutputSerializer})
    def post(self, request):
        """Submit up to 50 answers at once, each the body ``POST /api/labels/`` takes. Each is
        accepted or refused on its own (a bad one never sinks the others), idempotent by its
        client_token. The request itself is refused (400) only when it is not a JSON list of at
        most 50 objects."""
        answers = request.data
        if not isinstance(answers, list) or not all(isinstance(answer, dict) for answer in answers):
            raise ValueError("body: a JSON list of label objects ({item, value, client_token})")
        if not 1 <= len(answers) <= MAX_BATCH:
            raise ValueError(f"body: 1 to {MAX_BATCH} answers per request, not {len(answers)}")
        results: list[dict | None] = [None] * len(answers)
        submissions, places = [], []
        checker = LabelInputSerializer()  # one for all: a serializer copies its fields when made
        for index, answer in enumerate(answers):
            try:
                data = checker.run_validation(answer)
            except serializers.ValidationError as exc:
                results[index] = {"status": 400, "error": exc.detail}
                continue
            submissions.append(Submission(item_id=data["item"], value=data["value"], client_token=data["client_token"],
                                          seconds_taken=data["seconds_taken"]))
            places.append(index)
        stored = list(zip(places, label_submit_many(annotator=request.user, submissions=submissions)))
        labels = iter(LabelOutputSerializer([r.label for _, r in stored if r.error is None], many=True).data)
        for index, result in stored:
            if result.error is None:
                results[index] = {"status": 201 if result.created else 200, "label": next(labels)}
            else:
                response = self.handle_exception(result.error)
                results[index] = {"status": response.status_code, "error": response.data}
        return Response({"results": results})


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
