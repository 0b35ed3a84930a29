"""The crowd study's API, for the project's curators: its settings and entry link
(``/api/projects/<id>/crowd/``), a new token (``…/crowd/rotate-token/``) and the attention
checks (``/api/projects/<id>/attention-checks/``)."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from benchmark.api.common import GenericApi, LabellerWrites, input_of
from core.bounded import BoundedIntegerSerializerField
from core.parsers import BoundedJSONField

from ..api.views import curated_project
from .models import AttentionCheck, CrowdStudy
from .selectors import attention_results
from .services import attention_check_set, crowd_study_set, crowd_token_rotate


class StudySerializer(serializers.ModelSerializer):
    entry_link = serializers.SerializerMethodField()

    class Meta:
        model = CrowdStudy
        fields = ["project", "token", "entry_link", "open", "worker_param", "study_param", "session_param", "quota",
                  "check_rate", "max_failures", "completion_code", "completion_url", "created_at"]

    def get_entry_link(self, study) -> str:
        """The link to give the platform (it appends the worker, study and session ids itself)."""
        request = self.context.get("request")
        path = reverse("crowd_join", kwargs={"token": study.token})
        return request.build_absolute_uri(path) if request is not None else path


class CuratorApi(GenericApi):
    def get_permissions(self):  # project curators (not only global ones); ``curated_project`` and the services check
        return [IsAuthenticated(), LabellerWrites()]


class CrowdStudyApi(CuratorApi):
    class InputSerializer(serializers.Serializer):
        open = serializers.BooleanField(required=False)
        worker_param = serializers.CharField(required=False, max_length=40)
        study_param = serializers.CharField(required=False, max_length=40)
        session_param = serializers.CharField(required=False, max_length=40)
        quota = BoundedIntegerSerializerField(required=False, min_value=1, max_value=10000)
        check_rate = serializers.FloatField(required=False, min_value=0, max_value=0.99)
        max_failures = BoundedIntegerSerializerField(required=False, min_value=1, max_value=1000)
        completion_code = serializers.CharField(required=False, max_length=40)
        completion_url = serializers.URLField(required=False, allow_blank=True, max_length=200,
                                              help_text="'{code}' in it is replaced by the completion code")

    OutputSerializer = StudySerializer

    def get(self, request, pk: int):
        """The project's crowd study (404 when it has none), with its entry link: curators only."""
        project = curated_project(request, pk, action="see the crowd study")
        study = CrowdStudy.objects.get(project=project)
        return Response(StudySerializer(study, context={"request": request}).data)

    @extend_schema(request=InputSerializer, responses={200: StudySerializer})
    def put(self, request, pk: int):
        """Open the project to a crowd platform, or change its study's settings."""
        project = curated_project(request, pk, action="open projects to a crowd")
        study = crowd_study_set(project=project, actor=request.user, **input_of(self, request))
        return Response(StudySerializer(study, context={"request": request}).data)


class CrowdTokenRotateApi(CuratorApi):
    OutputSerializer = StudySerializer

    @extend_schema(request=None, responses={200: StudySerializer})
    def post(self, request, pk: int):
        """A new entry token: the old link answers 404 from now on."""
        project = curated_project(request, pk, action="rotate the crowd entry link")
        study = crowd_token_rotate(project=project, actor=request.user)
        return Response(StudySerializer(study, context={"request": request}).data)


class AttentionCheckListApi(CuratorApi):
    class InputSerializer(serializers.Serializer):
        item = BoundedIntegerSerializerField(min_value=1)
        expected = BoundedJSONField(help_text='the known answer: label fields and their values, e.g. {"choice": "left"}')

    class OutputSerializer(serializers.Serializer):
        item = serializers.IntegerField(source="item_id")
        expected = serializers.JSONField()
        created_at = serializers.DateTimeField()

    def get(self, request, pk: int):
        """The project's attention checks and, per annotator, how many they labelled and failed (curators)."""
        project = curated_project(request, pk, action="see attention checks")
        checks = AttentionCheck.objects.filter(item__project=project).order_by("item_id")
        results = [{"user_id": user_id, **row} for user_id, row in sorted(attention_results(project=project).items())]
        return Response({"checks": self.OutputSerializer(checks, many=True).data, "annotators": results})

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request, pk: int):
        """Make an open item an attention check with a known answer (every worker may label it)."""
        project = curated_project(request, pk, action="set attention checks")
        data = input_of(self, request)
        check = attention_check_set(project=project, item_id=data["item"], expected=data["expected"],
                                    actor=request.user)
        return Response(self.OutputSerializer(check).data, status=status.HTTP_201_CREATED)
