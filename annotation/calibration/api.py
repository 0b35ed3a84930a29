"""``GET /api/runs/<id>/calibrated/?project=<agreement project id>``: a run's calibrated scores
(``selectors.calibrated_scores``); the planner's question, ``&width=<w>&metric=<key>``
(``&separation=1``: the best-vs-second difference), rides on the same route.

Who: the project's curators only. The route sits under ``/api/runs/``, which the blind ranking
gate closes to anyone still labelling blind (``annotation.middleware``), and the population
leaves out every verdict a blind study hides from the asker (``blind_items``, ``hidden_reports``); a project
the user does not belong to is a 404, as on every project route.
"""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from benchmark.api.common import GenericApi
from core.bounded import integer_param
from scoring.models import EvaluationRun

from ..api.views import member_project
from .selectors import PLAN_ASSUMPTION, calibrated_scores, calibrated_scores_shown, labels_plan

WIDTH_MAX = 1e6


def width_param(params) -> float | None:
    raw = params.get("width", "")
    if raw in (None, ""):
        return None
    try:
        width = float(raw)
    except ValueError:
        raise ValueError(f"width: {raw!r} is not a number") from None
    if not (0 < width < WIDTH_MAX):
        raise ValueError(f"width: give a positive number below {WIDTH_MAX:g}")
    return width


class RunCalibratedApi(GenericApi):
    permission_classes = [IsAuthenticated]

    class OutputSerializer(serializers.Serializer):
        run_id = serializers.IntegerField(allow_null=True)
        project_id = serializers.IntegerField()
        project = serializers.CharField()
        sampling = serializers.CharField(help_text="how the project chose its verdicts")
        sampling_unit = serializers.CharField(help_text="what its design drew: verdict, group or sentence")
        random_sample = serializers.BooleanField()
        warning = serializers.CharField(allow_blank=True)
        confidence = serializers.FloatField()
        min_human_labels = serializers.IntegerField()
        meaning = serializers.CharField()
        metrics = serializers.ListField(
            child=serializers.DictField(), help_text=(
                "per metric: definition, unit (verdict; group: a DeepSynth checklist group, sentence: a DeepScholar "
                "claim sentence, several verdicts each), systems (judge_only, human_only, ppi, n_judge and n_human "
                "in units, ess_gain, lam, waiting_adjudication, off_scale_labels and part_labelled in units), "
                "best_vs_second"))
        statistics = serializers.DictField(help_text=(
            "state: current (the figures are of the labels and verdicts now), updating (a worker computes new "
            "ones; the figures shown, if any, are those computed at computed_at) or no_worker; computed_at; "
            "seconds (the worker's computation)"))
        plan = serializers.DictField(required=False, help_text="with width and metric: the planner's answer")

    @extend_schema(responses={200: OutputSerializer}, parameters=[
        OpenApiParameter("project", int, required=True,
                         description="the agreement project whose expert labels calibrate"),
        OpenApiParameter("width", float, description="planner: the interval width wanted"),
        OpenApiParameter("metric", str, description="planner: which metric (a key of the answer's metrics)"),
        OpenApiParameter("separation", bool, description="planner: the best-vs-second difference instead"),
    ])
    def get(self, request, pk: int):
        """Per system and metric: ``judge_only``, ``human_only`` and ``ppi`` (each ``estimate``, ``low``,
        ``high``, ``se``), ``n_judge``, ``n_human``, ``ess_gain``; per metric the best system against the
        second (``best_vs_second.ppi``). With ``width`` and ``metric``: the planner's ``plan``."""
        project_id = integer_param(request.query_params, "project", min_value=1)
        if project_id is None:
            raise ValueError("project: give the agreement project whose labels calibrate the run")
        project, _ = member_project(request, project_id)
        run = get_object_or_404(EvaluationRun.objects.select_related("judge_config", "task_set"), pk=pk)
        width = width_param(request.query_params)
        result = calibrated_scores(run=run, project=project, user=request.user)
        plan = None
        if width is not None:
            plan = labels_plan(result, metric=request.query_params.get("metric", ""), width=width,
                               separation=request.query_params.get("separation") in ("1", "true"))
            plan["assumption"] = PLAN_ASSUMPTION
        answer = calibrated_scores_shown(result)
        if plan is not None:
            answer["plan"] = plan
        return Response(self.OutputSerializer(answer).data)
