"""The benchmark's API: surveys, bibliography, tasks and their curated items, task sets, systems,
reports and imports. Reads are open to every signed-in user; writes need a curator
(``CuratorWrites``), and go through the services."""

from pathlib import Path

from django.contrib.contenttypes.models import ContentType
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from core.blind import blind_restrict
from core.bounded import BoundedIntegerSerializerField, IdRelatedField
from core.parsers import BoundedJSONField, BoundedJSONParser

from core.audit_actions import AuditAction
from core.models import AuditLog

from ..importers.catalogue import IMPORTERS

from ..models import BibEntry, Protocol, Report, Survey, System, Task, TaskSet
from ..services.bibliography import bib_entries_upsert
from ..services.history import proposable_review, proposable_update
from ..services.reports import ReportInput, reports_submit
from ..services.systems import system_create
from ..services.uploads import (
    REPORT_SUFFIXES,
    UploadRefused,
    upload_import,
    upload_report_file,
    upload_text_check,
)
from ..services.tasksets import taskset_create, taskset_export
from .common import HISTORY_PARAM, Api, DetailApi, GenericApi, ListApi, input_of

# Report text above this many bytes (UTF-8) is refused with 413, naming the report.
# Formats an upload can feed: the importers that read one file (the others read a folder).
UPLOAD_IMPORT_FORMATS = ("native", "deepsynth", "bibtex", "reportbench")


def refused(exc: UploadRefused) -> Response:
    return Response({"detail": str(exc), "file": exc.name}, status=exc.status_code)


# --- Surveys and bibliography -----------------------------------------------------------------


class SurveyListApi(ListApi):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Survey
            fields = ["id", "kind", "title", "authors", "venue", "year", "arxiv_id", "doi", "url", "discipline",
                      "source", "external_id", "created_at"]

    queryset = Survey.objects.order_by("pk")
    filter_fields = {"kind": "kind", "source": "source", "discipline": "discipline_id", "year": "year"}
    ordering_fields = ("title", "year", "created_at")


class SurveyDetailApi(DetailApi):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Survey
            exclude = ["full_text", "bibliography"]

    queryset = Survey.objects.all()


class BibEntryListApi(ListApi):
    class InputSerializer(serializers.Serializer):
        class Record(serializers.Serializer):
            title = serializers.CharField(max_length=5000)
            authors = serializers.CharField(required=False, allow_blank=True, max_length=20000)
            year = BoundedIntegerSerializerField(required=False, allow_null=True, min_value=0, max_value=32767)
            venue = serializers.CharField(required=False, allow_blank=True, max_length=500)
            arxiv_id = serializers.CharField(required=False, allow_blank=True, max_length=200)
            doi = serializers.CharField(required=False, allow_blank=True, max_length=255)
            url = serializers.URLField(required=False, allow_blank=True, max_length=1000)
            abstract = serializers.CharField(required=False, allow_blank=True, max_length=100000)
            citation_count = BoundedIntegerSerializerField(required=False, allow_null=True, min_value=0)

        entries = Record(many=True, allow_empty=False, max_length=5000)

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = BibEntry
            fields = ["id", "title", "authors", "year", "venue", "arxiv_id", "doi", "url", "citation_count",
                      "created_at", "updated_at"]

    queryset = BibEntry.objects.order_by("pk")
    filter_fields = {"year": "year", "doi": "doi", "arxiv_id": "arxiv_id"}
    ordering_fields = ("title", "year", "created_at", "citation_count")

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer(many=True)})
    def post(self, request):
        """Store entries, deduplicated on DOI, then arXiv id, then normalized title."""
        data = input_of(self, request)
        entries = bib_entries_upsert([dict(record) for record in data["entries"]])
        return Response(self.OutputSerializer(entries, many=True).data)


class BibEntryDetailApi(DetailApi):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = BibEntry
            exclude = ["normalized_title"]

    queryset = BibEntry.objects.all()


# --- Tasks ------------------------------------------------------------------------------------


class TaskListApi(ListApi):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Task
            fields = ["id", "protocol", "key", "title", "survey", "status", "cutoff_date", "source", "created_at",
                      "updated_at"]

    queryset = Task.objects.order_by("protocol", "key")
    filter_fields = {"protocol": "protocol", "status": "status", "survey": "survey_id", "key": "key",
                     "source": "source", "task_set": "task_sets"}
    ordering_fields = ("key", "protocol", "status", "created_at", "updated_at")


class TaskDetailApi(DetailApi):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Task
            fields = "__all__"

    queryset = Task.objects.all()


# --- Curated items: one family of endpoints per proposable kind -------------------------------


@extend_schema_serializer(component_name="Revision")
class RevisionOutputSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = AuditLog
        fields = ["id", "action", "actor", "actor_label", "before", "after", "note", "created_at"]


@extend_schema_serializer(component_name="ProposableReview")
class ReviewInputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["accepted", "edited", "rejected", "proposed"])
    expected_version = BoundedIntegerSerializerField(min_value=1)
    note = serializers.CharField(required=False, allow_blank=True, max_length=10000)
    edits = serializers.DictField(required=False)


def proposable_endpoints(model, *, stem: str, filters: dict[str, str], ordering: tuple[str, ...]) -> dict:
    """List, detail (GET/PATCH), review and revision views for one proposable model."""
    editable = [name for name in model.tracked_fields if name != "review_status"]
    meta_fields = ["id", *[f.name for f in model._meta.concrete_fields if f.name != "id"]]

    output = type("OutputSerializer", (serializers.ModelSerializer,), {
        "Meta": type("Meta", (), {"model": model, "fields": meta_fields, "read_only_fields": meta_fields}),
    })
    patch_input = type("InputSerializer", (serializers.ModelSerializer,), {
        "expected_version": BoundedIntegerSerializerField(min_value=1, help_text="the version your edit is based on"),
        "note": serializers.CharField(required=False, allow_blank=True, max_length=10000),
        "Meta": type("Meta", (), {"model": model, "fields": [*editable, "expected_version", "note"]}),
    })

    class ListView(ListApi):
        OutputSerializer = output
        queryset = model.objects.order_by("pk")
        filter_fields = {**filters, "review_status": "review_status", "origin": "origin"}
        ordering_fields = ordering

    class DetailView(DetailApi):
        OutputSerializer = output
        InputSerializer = patch_input
        queryset = model.objects.all()

        @extend_schema(request=patch_input, responses={200: output})
        def patch(self, request, pk: int):
            """Edit tracked fields; a stale ``expected_version`` is a 409 and changes nothing."""
            obj = self.get_object()
            data = dict(input_of(self, request, partial=True))
            if "expected_version" not in data:
                return Response({"expected_version": ["This field is required."]}, status=400)
            expected, note = data.pop("expected_version"), data.pop("note", "")
            updated = proposable_update(
                obj=obj, changes=data, expected_version=expected, actor=request.user, note=note
            )
            return Response(output(updated).data)

    class ReviewView(GenericApi):
        OutputSerializer = output
        queryset = model.objects.all()

        @extend_schema(request=ReviewInputSerializer, responses={200: output})
        def post(self, request, pk: int):
            """Accept, reject, or edit-and-accept (``edited`` with ``edits``)."""
            data = input_of(self, request, ReviewInputSerializer)
            updated = proposable_review(
                obj=self.get_object(), status=data["status"], expected_version=data["expected_version"],
                actor=request.user, note=data.get("note", ""), edits=data.get("edits"),
            )
            return Response(output(updated).data)

    class RevisionsView(ListApi):
        OutputSerializer = RevisionOutputSerializer
        filter_fields = {"action": "action"}
        filter_values = {"action": AuditAction.parse}
        ordering_fields = ("created_at",)

        def get_queryset(self):
            obj = get_object_or_404(model, pk=self.kwargs["pk"])
            content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
            return AuditLog.objects.filter(content_type=content_type, object_id=obj.pk).select_related("actor")

    views = {"list": ListView, "detail": DetailView, "review": ReviewView, "revisions": RevisionsView}
    for role, view in views.items():
        view.__name__ = view.__qualname__ = f"{stem}{role.title()}Api"
    extend_schema_serializer(component_name=stem)(output)
    extend_schema_serializer(component_name=f"{stem}Edit")(patch_input)
    return views


# --- Task sets --------------------------------------------------------------------------------


class TaskSetListApi(ListApi):
    class OutputSerializer(serializers.ModelSerializer):
        is_frozen = serializers.BooleanField(read_only=True)
        frozen_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

        class Meta:
            model = TaskSet
            fields = ["id", "name", "version", "description", "tasks", "is_frozen", "frozen_at", "frozen_by",
                      "pilot", "content_hash", "previous", "created_at"]

    queryset = TaskSet.objects.select_related("frozen_by").prefetch_related("tasks").order_by("name", "-version")
    filter_fields = {"name": "name", "version": "version", "unfrozen": "frozen_at__isnull"}
    ordering_fields = ("name", "version", "created_at", "frozen_at")

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        tasks = IdRelatedField(queryset=Task.objects.all(), many=True)

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        """Version 1 of a new, unfrozen task set with these tasks (a name in use is refused)."""
        data = input_of(self, request)
        task_set = taskset_create(name=data["name"], description=data["description"], tasks=data["tasks"],
                                  actor=request.user)
        return Response(self.OutputSerializer(task_set).data, status=status.HTTP_201_CREATED)


class TaskSetDetailApi(DetailApi):
    OutputSerializer = TaskSetListApi.OutputSerializer
    queryset = TaskSetListApi.queryset


class TaskSetExportApi(GenericApi):
    OutputSerializer = TaskSetListApi.OutputSerializer
    queryset = TaskSet.objects.all()

    @extend_schema(parameters=[HISTORY_PARAM], responses={(200, "application/x-ndjson"): OpenApiTypes.STR})
    def get(self, request, pk: int):
        """The set as native JSONL (a frozen set's snapshot), as a file download."""
        task_set = self.get_object()
        history = request.query_params.get("history", "").lower() in ("1", "true", "yes")
        body = taskset_export(task_set=task_set, include_history=history)
        response = HttpResponse(body, content_type="application/x-ndjson; charset=utf-8")
        filename = f"taskset-{task_set.pk}-v{task_set.version}.jsonl"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


# --- Systems and reports ----------------------------------------------------------------------


class SystemListApi(ListApi):
    class InputSerializer(serializers.ModelSerializer):
        class Meta:
            model = System
            fields = ["name", "version", "base_model", "workflow", "description"]

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = System
            fields = ["id", "name", "version", "base_model", "workflow", "description", "created_at"]

    queryset = System.objects.order_by("name", "version")
    filter_fields = {"name": "name", "version": "version", "workflow": "workflow"}
    ordering_fields = ("name", "version", "created_at")

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        system = system_create(actor=request.user, **input_of(self, request))
        return Response(self.OutputSerializer(system).data, status=status.HTTP_201_CREATED)


class SystemDetailApi(DetailApi):
    OutputSerializer = SystemListApi.OutputSerializer
    queryset = System.objects.all()


class ReportInputSerializer(serializers.Serializer):
    task = IdRelatedField(queryset=Task.objects.all())
    system = IdRelatedField(queryset=System.objects.all())
    text = serializers.CharField(trim_whitespace=False)
    format = serializers.ChoiceField(choices=Report.Format.choices, default=Report.Format.MARKDOWN)
    sources = serializers.ListField(child=BoundedJSONField(), required=False, max_length=10000)
    source_path = serializers.CharField(required=False, allow_blank=True, max_length=500)


class ReportListApi(ListApi):
    """Reports; POST uploads one (JSON object), a batch (``{"reports": [...]}``) or .md files
    (multipart: ``system``, ``protocol`` and ``files`` named ``<task key>.md``)."""

    InputSerializer = ReportInputSerializer

    class BatchInputSerializer(serializers.Serializer):
        reports = ReportInputSerializer(many=True, allow_empty=False, max_length=1000)

    class FilesInputSerializer(serializers.Serializer):
        system = IdRelatedField(queryset=System.objects.all())
        protocol = serializers.ChoiceField(choices=Protocol.choices)
        files = serializers.ListField(child=serializers.FileField(), allow_empty=False, max_length=1000)

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Report
            fields = ["id", "task", "system", "format", "content_hash", "submitted_at", "stats", "source_path",
                      "created_at", "updated_at"]

    class ResultSerializer(serializers.Serializer):
        created = serializers.IntegerField()
        updated = serializers.IntegerField()
        unchanged = serializers.IntegerField()

    parser_classes = [BoundedJSONParser, MultiPartParser, FormParser]
    filter_fields = {"task": "task_id", "system": "system_id", "protocol": "task__protocol", "format": "format"}
    ordering_fields = ("submitted_at", "created_at", "task", "system")

    def get_queryset(self):  # blind mode: no system of a report a blind pair still hides from the user
        reports = blind_restrict("report", Report.objects.all(), self.request.user)
        return reports.defer("text", "parsed").order_by("task_id", "system_id")

    @extend_schema(
        request={"application/json": ReportInputSerializer, "multipart/form-data": FilesInputSerializer},
        responses={201: ResultSerializer, 200: ResultSerializer},
    )
    def post(self, request):
        try:
            items = self._items(request)
        except UploadRefused as exc:
            return refused(exc)
        counts = reports_submit(items=items)
        code = status.HTTP_201_CREATED if counts["created"] else status.HTTP_200_OK
        return Response(counts, status=code)

    def _items(self, request) -> list[ReportInput]:
        if request.FILES or request.content_type.startswith("multipart/"):
            data = input_of(self, request, self.FilesInputSerializer)
            texts = [upload_report_file(upload) for upload in data["files"]]
            tasks = {t.key: t for t in Task.objects.filter(protocol=data["protocol"], key__in=[k for k, _ in texts])}
            missing = sorted({key for key, _ in texts} - tasks.keys())
            if missing:
                raise UploadRefused(f"no {data['protocol']} task with key(s) {', '.join(missing)}", name=missing[0])
            return [
                ReportInput(task=tasks[key], system=data["system"], text=text, source_path=upload.name,
                            format=REPORT_SUFFIXES[Path(upload.name).suffix.lower()])
                for (key, text), upload in zip(texts, data["files"])
            ]
        if isinstance(request.data, dict) and "reports" in request.data:
            rows = input_of(self, request, self.BatchInputSerializer)["reports"]
        else:
            rows = [input_of(self, request)]
        items = []
        for n, row in enumerate(rows):
            name = row.get("source_path") or f"report {n + 1} (task {row['task'].pk}, system {row['system'].pk})"
            items.append(ReportInput(
                task=row["task"], system=row["system"], text=upload_text_check(row["text"], name=name), format=row["format"],
                sources=row.get("sources"), source_path=row.get("source_path", ""),
            ))
        return items


class ReportDetailApi(DetailApi):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Report
            exclude = ["parsed"]

    def get_queryset(self):
        return blind_restrict("report", Report.objects.all(), self.request.user)


# --- Imports ----------------------------------------------------------------------------------


class ImportApi(Api):
    class InputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=[(name, IMPORTERS[name].description) for name in UPLOAD_IMPORT_FORMATS])
        file = serializers.FileField()

    class OutputSerializer(serializers.Serializer):
        counts = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()))
        messages = serializers.ListField(child=serializers.CharField())
        systems = serializers.ListField(child=serializers.DictField(), help_text="per system: reports, citations, "
                                        "resolved_citations, skipped [{file, reason}]")

    parser_classes = [MultiPartParser]

    @extend_schema(request={"multipart/form-data": InputSerializer}, responses={200: OutputSerializer})
    def post(self, request):
        """Run one single-file importer on the upload; all or nothing, errors name file/line/field."""
        data = input_of(self, request)
        try:
            result = upload_import(format_name=data["format"], upload=data["file"])
        except UploadRefused as exc:
            return refused(exc)
        return Response({"counts": result.counts, "messages": result.messages, "systems": result.system_rows()})

