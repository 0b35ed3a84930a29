"""Export jobs over the API: request one, poll it, download its file.

``POST /api/exports/`` queues a job (task set: curators; annotations: project members, all
projects: curators) and answers 202 at once; the file is written by a worker.
``GET /api/exports/<id>/`` reports status and progress, ``.../download/`` streams the file.
A job is visible to the user who asked for it (while they may still see its data) and to
curators; to everybody else it does not exist (404).
"""

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import permissions, serializers, status
from rest_framework.response import Response

from benchmark.api.common import Api, ListApi, input_of
from benchmark.services.bundles import TASKSET_FORMATS
from core.bounded import BoundedIntegerSerializerField
from core.converters import MAX_ID

from ..exporters import FORMATS as ANNOTATION_FORMATS
from ..models import ExportJob
from ..services.exports import (
    export_delete,
    export_file,
    export_get,
    export_request,
    exports_for,
)


@extend_schema_field({"type": "string", "description": "one of: taskset, annotations"})
class ExportKindField(serializers.ChoiceField):
    """Described in prose in the schema: an enum named after ``kind`` would collide with other apps' kinds."""

    def __init__(self, **kwargs) -> None:
        super().__init__(choices=ExportJob.Kind.choices, **kwargs)


class ExportJobOutputSerializer(serializers.ModelSerializer):
    kind = ExportKindField(read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    percent = serializers.IntegerField(read_only=True)
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = ["id", "kind", "parameters", "requested_by", "status", "progress_done", "progress_total", "percent",
                  "filename", "size", "sha256", "error", "created_at", "started_at", "finished_at", "download_url"]

    def get_download_url(self, job) -> str | None:
        if job.status != ExportJob.Status.DONE:
            return None
        request = self.context.get("request")
        path = f"/api/exports/{job.pk}/download/"
        return request.build_absolute_uri(path) if request else path


class ExportListApi(ListApi):
    permission_classes = [permissions.IsAuthenticated]  # the service decides who may export what

    class InputSerializer(serializers.Serializer):
        kind = ExportKindField()
        task_set = BoundedIntegerSerializerField(required=False, min_value=1, max_value=MAX_ID, help_text="kind taskset: the set")
        project = BoundedIntegerSerializerField(required=False, allow_null=True, min_value=1, max_value=MAX_ID,
                                           help_text="kind annotations: the project (omit: every project, curators)")
        format = serializers.ChoiceField(choices=sorted({*TASKSET_FORMATS, *ANNOTATION_FORMATS}), required=False,
                                         help_text="taskset: native, deepsynth, reportbench, deepscholar, "
                                                   "huggingface (frozen sets: a zipped dataset folder); "
                                                   "annotations: jsonl, csv")
        include_history = serializers.BooleanField(required=False, default=False)
        include_unreviewed = serializers.BooleanField(
            required=False, default=False,
            help_text="taskset, upstream formats: also draft tasks and unreviewed items (default: curated tasks, "
                      "accepted and edited items only)")
        include_labels = serializers.BooleanField(
            required=False, default=False,
            help_text="taskset, huggingface format: add the labels and gold labels of the set's tasks as the "
                      "labels and gold_labels configs (with annotators' usernames)")

    OutputSerializer = ExportJobOutputSerializer
    filter_fields = {"kind": "kind", "status": "status"}
    ordering_fields = ("created_at", "finished_at")

    def get_queryset(self):
        return exports_for(self.request.user).select_related("requested_by")

    @extend_schema(request=InputSerializer, responses={202: ExportJobOutputSerializer})
    def post(self, request):
        """Queue an export; poll the returned job until ``status`` is done, then fetch ``download_url``."""
        data = dict(input_of(self, request))
        kind = data.pop("kind")
        job = export_request(user=request.user, kind=kind, parameters=data)
        return Response(self.OutputSerializer(job, context={"request": request}).data, status=status.HTTP_202_ACCEPTED)


class ExportDetailApi(Api):
    permission_classes = [permissions.IsAuthenticated]
    OutputSerializer = ExportJobOutputSerializer

    @extend_schema(responses={200: ExportJobOutputSerializer})
    def get(self, request, pk: int):
        job = export_get(job_id=pk, user=request.user)
        return Response(self.OutputSerializer(job, context={"request": request}).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        """Delete the export and its file (cancel it while queued); 400 while it is running."""
        export_delete(job_id=pk, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ExportDownloadApi(Api):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, pk: int):
        """The finished job's zip; 400 while it is not done or when its file is gone."""
        job = export_get(job_id=pk, user=request.user)
        return FileResponse(export_file(job=job).open("rb"), as_attachment=True, filename=job.filename,
                            content_type="application/zip")
