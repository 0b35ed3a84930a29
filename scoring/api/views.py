"""Judges, evaluation runs and their results. Curators create and steer runs; everyone signed in
reads them. Verdicts are filtered by the blind rule of agreement projects (``annotation.blind.visible_verdicts``, reached through ``core.blind``)."""

from django.urls import reverse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from core.blind import blind_restrict
from core.bounded import IdRelatedField
from core.converters import id_from_text
from benchmark.api.common import DetailApi, GenericApi, ListApi, input_of
from benchmark.models import Protocol, System, Task, TaskSet

from ..judges.endpoints import redact
from ..models import EvaluationRun, JudgeConfig, ScoreCard, Verdict
from ..selectors import run_failure_reasons, run_progress, run_score_cards, run_verdicts, runs_usage
from ..services.judge_configs import judge_config_create, judge_config_update
from ..services.runs import DuplicateRunError, run_cancel, run_launch, run_resume, run_start


class JudgeConfigListApi(ListApi):
    class InputSerializer(serializers.ModelSerializer):
        class Meta:
            model = JudgeConfig
            exclude = ["id", "created_at", "updated_at"]

    class OutputSerializer(serializers.ModelSerializer):
        is_heuristic = serializers.BooleanField(read_only=True)

        class Meta:
            model = JudgeConfig
            fields = "__all__"

    queryset = JudgeConfig.objects.order_by("name")
    filter_fields = {"backend": "backend", "name": "name", "prompt_version": "prompt_version"}
    ordering_fields = ("name", "created_at")

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request):
        """A new judge configuration, on an endpoint the deployment allows (``base_url`` empty: the
        default); the key that endpoint gets is bound to it in the settings, never sent here."""
        data = input_of(self, request)
        config = judge_config_create(actor=request.user, **data)
        return Response(self.OutputSerializer(config).data, status=status.HTTP_201_CREATED)


class JudgeConfigDetailApi(DetailApi):
    InputSerializer = JudgeConfigListApi.InputSerializer
    OutputSerializer = JudgeConfigListApi.OutputSerializer
    queryset = JudgeConfig.objects.all()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def patch(self, request, pk: int):
        """Change some fields of a configuration (e.g. ``batch``, ``batch_discount``); once it has verdicts,
        what shapes a verdict is refused with 400 (make a new configuration)."""
        config = self.get_object()
        data = input_of(self, request, instance=config, partial=True)
        config = judge_config_update(config=config, actor=request.user, **data)
        return Response(self.OutputSerializer(config).data)


class RunOutputSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = EvaluationRun
        fields = ["id", "name", "protocol", "task_set", "tasks", "systems", "judge_config", "status", "created_by",
                  "started_at", "finished_at", "error", "created_at"]


class FailureReasonSerializer(serializers.Serializer):
    reason = serializers.CharField()
    count = serializers.IntegerField()
    of = serializers.ChoiceField(choices=["items", "jobs"], help_text="what the count counts")


class UsageSerializer(serializers.Serializer):
    calls = serializers.IntegerField(help_text="logical judge calls, one answer each")
    requests = serializers.IntegerField(help_text="HTTP requests those calls took, retries included")
    failed_calls = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost_usd = serializers.FloatField()


class ProgressSerializer(serializers.Serializer):
    status = serializers.CharField()
    error = serializers.CharField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    waiting = serializers.IntegerField(help_text="batch mode: jobs whose judge calls are in a batch")
    eta_seconds = serializers.FloatField(allow_null=True)
    usage = UsageSerializer()
    failure_reasons = FailureReasonSerializer(many=True)


def run_progress_data(run: EvaluationRun) -> dict:
    return {**run_progress(run=run), "error": run.error, "usage": runs_usage(run_ids=[run.pk])[run.pk],
            "failure_reasons": run_failure_reasons(run=run)}


class ScoreCardOutputSerializer(serializers.ModelSerializer):
    system_name = serializers.CharField(source="system.__str__", read_only=True)

    class Meta:
        model = ScoreCard
        fields = ["id", "run", "system", "system_name", "report", "metrics", "items_judged", "items_failed",
                  "created_at"]


class RunListApi(ListApi):
    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(required=False, allow_blank=True, max_length=200)
        protocol = serializers.ChoiceField(choices=Protocol.choices)
        judge_config = IdRelatedField(queryset=JudgeConfig.objects.all())
        systems = IdRelatedField(queryset=System.objects.all(), many=True)
        task_set = IdRelatedField(queryset=TaskSet.objects.all(), required=False, allow_null=True)
        tasks = IdRelatedField(queryset=Task.objects.all(), many=True, required=False)
        start = serializers.BooleanField(default=False, help_text="start the run at once")
        force = serializers.BooleanField(
            default=False, help_text="make it even when the same run (judge configuration, systems, tasks, prompt "
                                     "version) is running or finished; without it that is a 409 naming the run")

    OutputSerializer = RunOutputSerializer
    queryset = EvaluationRun.objects.select_related("created_by").prefetch_related("tasks", "systems")
    filter_fields = {"protocol": "protocol", "status": "status", "judge_config": "judge_config_id",
                     "task_set": "task_set_id"}
    ordering_fields = ("created_at", "started_at", "finished_at", "status")

    @extend_schema(request=InputSerializer, responses={201: RunOutputSerializer})
    def post(self, request):
        """Create a run (one job per report × step); ``start: true`` also starts it. The same run
        running or finished already is a 409 naming it (``duplicate_of``), unless ``force: true``."""
        data = input_of(self, request)
        try:
            run = run_launch(
                protocol=data["protocol"], judge_config=data["judge_config"], systems=data["systems"],
                task_set=data.get("task_set"), tasks=data.get("tasks") if "tasks" in data else None,
                name=data.get("name", ""), actor=request.user, start=data["start"], force=data["force"],
            )
        except DuplicateRunError as exc:
            return Response({"detail": exc.messages[0], "duplicate_of": {
                "id": exc.run.pk, "name": str(exc.run), "status": exc.run.status,
                "url": reverse("runs:detail", args=[exc.run.pk])}}, status=status.HTTP_409_CONFLICT)
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED)


class RunDetailApi(DetailApi):
    OutputSerializer = RunOutputSerializer
    queryset = RunListApi.queryset


def _run_action(service, description: str):
    # The docs say what the action does for an API user; the service's docstring is for developers.
    class RunActionApi(GenericApi):
        OutputSerializer = RunOutputSerializer
        queryset = EvaluationRun.objects.all()

        @extend_schema(request=None, responses={200: RunOutputSerializer}, description=description)
        def post(self, request, pk: int):
            run = service(run=self.get_object())
            run.refresh_from_db()
            return Response(RunOutputSerializer(run).data)

    return RunActionApi


class RunStartApi(_run_action(run_start, "Start a pending run: its jobs are queued for the workers.")):
    pass


class RunCancelApi(_run_action(run_cancel, "Cancel the run's pending jobs; jobs already running finish.")):
    pass


class RunResumeApi(_run_action(
    run_resume, "Queue again the run's unfinished and failed jobs (and reports whose judge calls failed).",
)):
    pass


class RunProgressApi(GenericApi):
    OutputSerializer = ProgressSerializer
    queryset = EvaluationRun.objects.all()

    def get(self, request, pk: int):
        """Job counts by status, an ETA in seconds (null until a job has settled), judge calls and HTTP
        requests, and why items or jobs failed, grouped by reason."""
        return Response(ProgressSerializer(run_progress_data(self.get_object())).data)


class RunScoreCardsApi(ListApi):
    OutputSerializer = ScoreCardOutputSerializer
    filter_fields = {"system": "system_id"}
    ordering_fields = ("system", "created_at")

    def get_queryset(self):
        run = get_object_or_404(EvaluationRun, pk=self.kwargs["pk"])
        per_report = self.request.query_params.get("per_report", "").lower() in ("1", "true", "yes")
        return run_score_cards(run=run, per_report=per_report)


class ScoreCardListApi(ListApi):
    OutputSerializer = ScoreCardOutputSerializer
    queryset = ScoreCard.objects.select_related("system").order_by("run_id", "system_id", "report_id")
    filter_fields = {"run": "run_id", "system": "system_id", "report": "report_id", "per_system": "report__isnull"}
    ordering_fields = ("run", "system", "report", "created_at")


class VerdictListApi(ListApi):
    class OutputSerializer(serializers.ModelSerializer):
        error = serializers.SerializerMethodField()

        class Meta:
            model = Verdict
            fields = ["id", "report", "judge_config", "prompt_version", "step", "target_kind", "target_id",
                      "target_key", "repeat", "label", "score", "confidence", "rationale", "evidence", "error",
                      "created_at"]

        def get_error(self, verdict) -> str:
            return redact(verdict.error)  # errors stored before redaction existed are redacted when shown

    filter_fields = {"report": "report_id", "judge_config": "judge_config_id", "step": "step",
                     "target_kind": "target_kind", "label": "label"}
    extra_query_params = ("run",)
    strict_query_params = True
    ordering_fields = ("report", "step", "created_at")

    @extend_schema(parameters=[OpenApiParameter(
        "run", int, description="only the verdicts a run's scores are made of: its reports, under its judge "
                                "configuration and prompt version")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        verdicts = blind_restrict("verdict", Verdict.objects.all(), self.request.user).order_by("pk")
        run_id = self.request.query_params.get("run")
        if run_id not in (None, ""):
            try:  # an id beyond range is no run, and never reaches the database
                run_pk = id_from_text("run", run_id)
            except ValueError:
                run_pk = None
            run = EvaluationRun.objects.select_related("judge_config").filter(pk=run_pk).first() if run_pk else None
            if run is None:
                raise serializers.ValidationError({"run": [f"no run {run_id!r}"]})
            verdicts = run_verdicts(run=run, verdicts=verdicts)
        return verdicts
