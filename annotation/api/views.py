"""The annotation workspace's API: projects, members, progress and items (the labelling loop —
claims, labels, gold labels, preferences — is ``annotation.api.labels``).

Access follows project membership (``project_role``): non-members get 404 for a project and
its items, so outsiders cannot tell which projects exist. What an item shows comes from
``item_context_for`` (blind mode); lists of labels, gold labels and verdicts use the same rule
(``annotation.blind``). Labelling services check roles themselves (viewers are refused).
"""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db.models import BooleanField, Q, Value
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from benchmark.api.common import DetailApi, GenericApi, LabellerWrites, ListApi, input_of
from benchmark.models import System, Task, TaskSet
from core.bounded import HOLD_SECONDS_MAX, SMALL_MAX, BoundedIntegerSerializerField, IdRelatedField
from core.parsers import BoundedJSONField
from scoring.models import JudgeConfig

from core.accounts import is_global_curator

from ..blind import NO_ITEM, blind_overlap_warnings, item_reachable, status_shown, target_id_shown, with_revealed
from ..crowd.models import CrowdStudy
from ..models import (DEFAULT_HOLD, DEFAULT_UNIFORM_SHARE, VERIFY_TARGETS, AnnotationItem, AnnotationProject,
                      Assignment, ProjectMembership, Role, TargetKind)
from ..selectors.progress import project_progress
from ..selectors.projects import project_role, project_with_role, projects_for
from ..selectors.workspace import item_context_for
from ..services.projects import membership_add, membership_remove, project_create, project_update
from ..loop.settle import item_adjudicate


def member_project(request, pk: int) -> tuple[AnnotationProject, str]:
    """The project and the user's role in it (one statement, compiled once: ``project_with_role``);
    a missing project and one the user is not in answer the same 404."""
    try:
        project, role = project_with_role(project_id=pk, user=request.user)
    except AnnotationProject.DoesNotExist:
        raise Http404("No such project") from None
    if role is None:
        raise Http404("No such project")
    return project, role


def reachable_item(request, pk: int) -> tuple[AnnotationItem, str]:
    """The item and the user's role in its project, when they may reach it (``item_reachable``:
    in a blind project, through their own claim or label). A missing item, one of a project they
    are not in, and one they may not reach all answer the same 404 (``NO_ITEM``)."""
    item = next(iter(AnnotationItem.objects.select_related("project").filter(pk=pk)[:1]), None)
    role = None if item is None else project_role(project=item.project, user=request.user)
    if role is None or not item_reachable(item=item, project=item.project, role=role, user=request.user):
        raise Http404(NO_ITEM)
    return item, role


def curated_project(request, pk: int, *, action: str) -> AnnotationProject:
    """The project, once the user is known to curate it: refused before their input is read (the
    service checks again inside its transaction)."""
    project, role = member_project(request, pk)
    if role != Role.CURATOR:
        raise PermissionError(f"only curators {action} in project {project.name!r}")
    return project


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


class AssignmentOutputSerializer(serializers.Serializer):
    # Fields spelled out: a ModelSerializer builds them from the model for every instance, and
    # the annotator loop makes one per request.
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    item = serializers.IntegerField(source="item_id")
    user = serializers.IntegerField(source="user_id")
    claimed_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=Assignment.Status.choices)
    ended_at = serializers.DateTimeField(allow_null=True)


class LabellerApi:
    permission_classes = [IsAuthenticated, LabellerWrites]


# --- Projects ---------------------------------------------------------------------------------


class ProjectListApi(ListApi):
    class OutputSerializer(serializers.ModelSerializer):
        my_role = serializers.CharField(read_only=True, allow_null=True)
        n_items = serializers.IntegerField(read_only=True)
        n_settled = serializers.IntegerField(read_only=True)
        # The sampling design is the curators' until a blind project closes, as in the exports: an
        # adaptive sample is drawn by the judge's uncertainty, something derived from its verdicts.
        sampling = serializers.SerializerMethodField(help_text=(
            "agreement: how the verdicts were sampled (all, uniform, stratified, adaptive, chosen); null for a member "
            "who is no curator of a blind project until it closes (the curators' design, as in the exports)"))
        sampling_unit = serializers.SerializerMethodField(help_text=(
            "agreement: what the sample drew (verdict, group, sentence); null for a member who is no curator of a "
            "blind project until it closes (the curators' design, as in the exports)"))

        class Meta:
            model = AnnotationProject
            fields = ["id", "name", "description", "guidelines", "guidelines_version", "kind", "status", "blind",
                      "reveal", "overlap", "task_set", "label_set", "label_level", "dimensions", "item_kinds",
                      "sampling", "sampling_unit", "pair_choice", "uniform_share", "pairs_budget", "criteria", "scale",
                      "my_role", "n_items",
                      "n_settled", "created_at"]

        def get_sampling(self, project) -> str | None:
            return project.sampling if self._design_shown(project) else None

        def get_sampling_unit(self, project) -> str | None:
            return project.sampling_unit if self._design_shown(project) else None

        def _design_shown(self, project) -> bool:
            if not project.blind or project.status == AnnotationProject.Status.CLOSED:
                return True
            request = self.context.get("request")
            if request is None:
                return False
            if "global_curator" not in self.context:  # once per answer, not per project
                self.context["global_curator"] = is_global_curator(request.user)
            return project.my_role == Role.CURATOR or (project.my_role is None and self.context["global_curator"])

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        kind = serializers.ChoiceField(choices=AnnotationProject.Kind.choices)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        guidelines = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=False,
                                           help_text="markdown shown to annotators in the workspace")
        tasks = IdRelatedField(queryset=Task.objects.all(), many=True, required=False)
        task_set = IdRelatedField(queryset=TaskSet.objects.all(), required=False, allow_null=True)
        item_kinds = serializers.ListField(child=serializers.ChoiceField(choices=list(VERIFY_TARGETS)), required=False,
                                          help_text="verify: which proposed kinds to review (default all)")
        systems = IdRelatedField(queryset=System.objects.all(), many=True, required=False,
                                                     help_text="pairwise/agreement: empty = all")
        component = serializers.CharField(required=False, default="report", max_length=30)
        judge_config = IdRelatedField(queryset=JudgeConfig.objects.all(), required=False,
                                                          allow_null=True, help_text="agreement: whose verdicts")
        steps = serializers.ListField(child=serializers.CharField(max_length=100), required=False,
                                      help_text="agreement: judge steps (default all)")
        overlap = BoundedIntegerSerializerField(required=False, allow_null=True, min_value=1, max_value=SMALL_MAX,
                                           help_text="labels per item (k); default 2 for verify, else 1")
        blind = serializers.BooleanField(required=False, default=True)
        reveal = serializers.ChoiceField(
            choices=AnnotationProject.Reveal.choices, required=False, allow_null=True, default=None,
            help_text="blind: when an annotator who labelled an item learns what it hid (others' labels, the"
                      " judge's verdict, the reports and systems): 'close' when the study closes, 'label' after each"
                      " label; default: pairwise and rating 'close', others 'label'")
        hold_seconds = BoundedIntegerSerializerField(required=False, min_value=1, max_value=HOLD_SECONDS_MAX,
                                                default=int(DEFAULT_HOLD.total_seconds()))
        label_set = serializers.DictField(required=False, allow_null=True, help_text="default: the kind's labels")
        dimensions = serializers.ListField(child=serializers.CharField(max_length=100), required=False,
                                           allow_null=True, help_text="pairwise: dimensions (default the standard ones)")
        criteria = serializers.ListField(child=serializers.CharField(max_length=100), required=False, allow_null=True,
                                         help_text="rating: the criteria every report is rated on (default: each"
                                                   " task's rubric criteria of the component)")
        scale = serializers.DictField(required=False, allow_null=True,
                                      help_text='rating: {"min": 1, "max": 5} by default (0–100 allowed), "anchors":'
                                                ' {point: meaning}, "adjudicate_beyond": the score distance that goes'
                                                " to a curator (default a quarter of the scale)")
        seed = BoundedIntegerSerializerField(
            required=False, allow_null=True, default=None,
            help_text="not blind only (default 0): seed of the schedule and sample; a blind project's is drawn by"
                      " the server and kept secret")
        sampling = serializers.ChoiceField(
            choices=[c for c in AnnotationProject.Sampling.choices if c[0] != AnnotationProject.Sampling.CHOSEN],
            required=False, default=AnnotationProject.Sampling.ALL,
            help_text="agreement: every verdict ('all') or a random sample for calibrated scores")
        sample_size = BoundedIntegerSerializerField(required=False, allow_null=True, default=None, min_value=1,
                                                    help_text="agreement, sampled: how many verdicts (or units)")
        sampling_unit = serializers.ChoiceField(
            choices=AnnotationProject.SamplingUnit.choices, required=False,
            default=AnnotationProject.SamplingUnit.VERDICT,
            help_text="agreement, sampled: what the design draws: 'verdict', or every verdict of a DeepSynth checklist"
                      " 'group' or of a DeepScholar claim 'sentence' (steps: that unit's step, the default)")
        pair_choice = serializers.ChoiceField(
            choices=AnnotationProject.PairChoice.choices, required=False,
            default=AnnotationProject.PairChoice.ROUND_ROBIN,
            help_text="pairwise: 'round_robin' (every pair of reports, each side once) or 'adaptive' (the pairs whose"
                      " Bradley–Terry outcome is least certain, chosen as labels come)")
        uniform_share = serializers.FloatField(required=False, default=DEFAULT_UNIFORM_SHARE, min_value=0, max_value=1,
                                               help_text="adaptive: share of pairs drawn uniformly")
        pairs_budget = BoundedIntegerSerializerField(required=False, allow_null=True, default=None, min_value=1,
                                                     max_value=10**6, help_text="adaptive: pairs in all (default"
                                                     " every ordered pair of reports)")

    filter_fields = {"kind": "kind", "status": "status", "task_set": "task_set_id"}
    ordering_fields = ("name", "created_at", "status")

    def get_queryset(self):
        return projects_for(self.request.user).order_by("-created_at", "-id")

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        """Create a project (curators): its items are made at once from the tasks (ids) or the task set.
        The answer's ``warnings``: a project that is not blind over what a blind study still hides
        (``blind_overlap_warnings``)."""
        data = input_of(self, request)
        hold = timedelta(seconds=data.pop("hold_seconds"))
        project = project_create(created_by=request.user, hold_duration=hold, **data)
        answer = self.OutputSerializer(projects_for(request.user).get(pk=project.pk), context={"request": request}).data
        return Response({**answer, "warnings": blind_overlap_warnings(project)}, status=status.HTTP_201_CREATED)


class ProjectDetailSerializer(ProjectListApi.OutputSerializer):
    crowd_token = serializers.SerializerMethodField(
        help_text="the crowd study's entry token (/join/<token>/): the project's curators only; null otherwise")

    class Meta(ProjectListApi.OutputSerializer.Meta):
        fields = [*ProjectListApi.OutputSerializer.Meta.fields, "crowd_token"]

    def get_crowd_token(self, project) -> str | None:
        request = self.context.get("request")
        if not project.has_crowd_study or request is None:
            return None
        if (project.my_role or (Role.CURATOR if is_global_curator(request.user) else None)) != Role.CURATOR:
            return None
        return CrowdStudy.objects.filter(project=project).values_list("token", flat=True).first()


class ProjectDetailApi(DetailApi):
    OutputSerializer = ProjectDetailSerializer

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(required=False, max_length=200)
        description = serializers.CharField(required=False, allow_blank=True)
        guidelines = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                           help_text="markdown; a change is a new guidelines_version")
        hold_seconds = BoundedIntegerSerializerField(required=False, min_value=1, max_value=HOLD_SECONDS_MAX)
        status = serializers.ChoiceField(required=False, choices=AnnotationProject.Status.choices)

    def get_queryset(self):
        return projects_for(self.request.user)

    def get_permissions(self):  # project curators (not only global ones) edit; the service checks
        return [IsAuthenticated(), LabellerWrites()]

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def patch(self, request, pk: int):
        """Change what is safe to change once labelling started: name, description, guidelines, hold time, status.
        Other fields (kind, tasks, k, labels, blind) are refused with 400."""
        project = curated_project(request, pk, action="edit projects")
        unknown = sorted(set(request.data) - set(self.InputSerializer().fields))
        if unknown:
            raise serializers.ValidationError(
                {field: ["cannot be changed after creation; make a new project"] for field in unknown}
            )
        data = input_of(self, request)
        if "hold_seconds" in data:
            data["hold_duration"] = timedelta(seconds=data.pop("hold_seconds"))
        project_update(project=project, actor=request.user, **data)
        return Response(self.OutputSerializer(self.get_queryset().get(pk=pk), context={"request": request}).data)


class ProjectMemberListApi(GenericApi):
    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        role = serializers.ChoiceField(choices=Role.choices)

    class OutputSerializer(serializers.Serializer):
        user = serializers.IntegerField(source="user_id")
        username = serializers.CharField(source="user.username")
        role = serializers.CharField()
        added_at = serializers.DateTimeField(source="created_at")

    def get_permissions(self):  # project curators (not only global ones) manage members; the service checks
        return [IsAuthenticated(), LabellerWrites()]

    @extend_schema(responses={200: OutputSerializer(many=True)})
    def get(self, request, pk: int):
        """The project's members and their roles (project curators)."""
        project = curated_project(request, pk, action="manage members")
        members = ProjectMembership.objects.filter(project=project).select_related("user").order_by("user__username")
        return Response(self.OutputSerializer(members, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request, pk: int):
        """Add a member by username with a role, or change the role of one already in. The answer's
        ``warnings``: as when the project was created, naming the members it shares with a blind study."""
        project = curated_project(request, pk, action="manage members")
        data = input_of(self, request)
        user = get_user_model().objects.filter(username=data["username"]).first()
        if user is None:
            raise ValueError(f"username: no account named {data['username']!r}")
        membership = membership_add(project=project, user=user, role=data["role"], actor=request.user)
        return Response({**self.OutputSerializer(membership).data, "warnings": blind_overlap_warnings(project)},
                        status=status.HTTP_201_CREATED)


class ProjectMemberDetailApi(GenericApi):
    OutputSerializer = ProjectMemberListApi.OutputSerializer

    def get_permissions(self):  # project curators (not only global ones) manage members; the service checks
        return [IsAuthenticated(), LabellerWrites()]

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int, username: str):
        """Remove a member: their claims are released, their labels stay."""
        project, _ = member_project(request, pk)
        membership_remove(project=project, user=username, actor=request.user)  # no account-existence oracle
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProjectProgressApi(GenericApi):
    class OutputSerializer(serializers.Serializer):
        project_id = serializers.IntegerField()
        role = serializers.CharField()
        items = serializers.IntegerField()
        open = serializers.IntegerField()
        complete = serializers.IntegerField()
        adjudicated = serializers.IntegerField(allow_null=True, help_text="null: hidden by blind mode")
        awaiting_adjudication = serializers.IntegerField(allow_null=True, help_text="null: hidden by blind mode")
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
        # Blind mode (``with_revealed``): an unrevealed pair or verdict has no target id, and an
        # unrevealed item's adjudication reads as complete.
        target_id = serializers.SerializerMethodField()
        status = serializers.SerializerMethodField()
        labels_needed = serializers.SerializerMethodField(help_text="null for a crowd study's labellers")
        labels_done = serializers.SerializerMethodField(help_text="null for a crowd study's labellers")

        class Meta:
            model = AnnotationItem
            fields = ["id", "project", "target_kind", "target_id", "task", "position", "labels_needed",
                      "labels_done", "status", "completed_at"]

        # a crowd study's attention checks take every worker's label (``annotation.crowd``): their
        # counts would single them out, so the study's labellers see none (as in the workspace)
        def get_labels_needed(self, item) -> int | None:
            return None if getattr(item, "counts_hidden", False) else item.labels_needed

        def get_labels_done(self, item) -> int | None:
            return None if getattr(item, "counts_hidden", False) else item.labels_done

        def get_target_id(self, item) -> int | None:
            return target_id_shown(kind=item.target_kind, target_id=item.target_id, revealed=item.revealed)

        def get_status(self, item) -> str:
            return status_shown(item.status, revealed=item.revealed)

    filter_fields = {"task": "task_id", "target_kind": "target_kind"}
    extra_query_params = ("status",)
    ordering_fields = ("position", "labels_done", "completed_at")

    def get_queryset(self):
        project, role = member_project(self.request, self.kwargs["pk"])
        items = with_revealed(AnnotationItem.objects.filter(project=project), self.request.user)
        if project.has_crowd_study and role != Role.CURATOR:
            items = items.annotate(counts_hidden=Value(True, output_field=BooleanField()))
            self.ordering_fields = ("position", "completed_at")  # nor an order by the counts
        status_filter = self.request.query_params.get("status")
        if status_filter:  # the status as shown: ``adjudicated`` finds only items revealed as such
            complete = AnnotationItem.Status.COMPLETE
            if status_filter == complete:
                items = items.filter(Q(status=complete) | Q(status=AnnotationItem.Status.ADJUDICATED, revealed=False))
            elif status_filter == AnnotationItem.Status.ADJUDICATED:
                items = items.filter(status=status_filter, revealed=True)
            else:
                items = items.filter(status=status_filter)
        return items.order_by("position", "id")


class ItemDetailApi(GenericApi):
    OutputSerializer = ContextSerializer

    def get(self, request, pk: int):
        """What the workspace shows you about this item (blind until you have labelled it; in a
        blind project, only an item you hold or labelled: every other one is a 404)."""
        item, role = reachable_item(request, pk)
        return Response(ContextSerializer(item_context_for(item=item, user=request.user, role=role)).data)


class ItemSideApi(GenericApi):
    class OutputSerializer(serializers.Serializer):
        item = serializers.IntegerField()
        side = serializers.CharField()
        text = serializers.CharField()
        outline = serializers.ListField(required=False)
        report_id = serializers.IntegerField(allow_null=True)
        system = serializers.CharField(allow_null=True)
        system_label = serializers.CharField(allow_null=True)

    SIDES = {"left": TargetKind.REPORT_PAIR, "right": TargetKind.REPORT_PAIR, "report": TargetKind.VERDICT}

    @extend_schema(operation_id="annotation_items_side_retrieve", responses={200: OutputSerializer})
    def get(self, request, pk: int, side: str):
        """One side of an item: ``left``/``right`` of a pair, the ``report`` a verdict judged: its
        text (and a pair's outline). Which report and system it is stays null until the item is
        revealed to you (blind mode), as in the item's answer; in a blind project, only of an item
        you hold or labelled (every other one is a 404)."""
        item, role = reachable_item(request, pk)
        context = item_context_for(item=item, user=request.user, role=role)
        target = context["target"]
        if self.SIDES.get(side) != context["item"]["target_kind"] or target.get("missing"):
            raise Http404("No such side of this item")
        if side == "report":
            shown = {"text": target["report_text"], "report_id": target["report_id"], "system": None,
                     "system_label": None}
        else:
            shown = target[side]
        return Response(self.OutputSerializer({"item": item.pk, "side": side, **shown}).data)


class ItemAdjudicateApi(GenericApi):
    class InputSerializer(serializers.Serializer):
        value = BoundedJSONField()
        note = serializers.CharField(required=False, allow_blank=True, max_length=10000)
        expected_version = BoundedIntegerSerializerField(required=False, allow_null=True, min_value=1)

    OutputSerializer = ContextSerializer

    @extend_schema(request=InputSerializer, responses={201: ContextSerializer})
    def post(self, request, pk: int):
        """A curator's gold label for a complete item whose labels disagree."""
        item, _ = reachable_item(request, pk)
        data = input_of(self, request)
        item_adjudicate(item=item, curator=request.user, value=data["value"], note=data.get("note", ""),
                        expected_version=data.get("expected_version"))
        return Response(ContextSerializer(item_context_for(item=item, user=request.user)).data,
                        status=status.HTTP_201_CREATED)

    def get_permissions(self):  # project curators (not only global ones) adjudicate; the service checks
        return [IsAuthenticated(), LabellerWrites()]


# --- Claims -----------------------------------------------------------------------------------
