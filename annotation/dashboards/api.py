"""The dashboards' figures as JSON (``/api/dashboards/…``): each endpoint calls the selector its HTML
page calls (``selectors``) and returns the same numbers; access is the pages' (signed in; agreement
limited to the projects the user curates, by ``judge_agreement``/``inter_annotator``)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.services.agreement import (
    agreement_statistics_settle, judge_statistics_settle, ranking_statistics_settle,
)
from benchmark.models import Protocol
from core.accounts import is_global_curator
from core.converters import id_from_text

from . import figures as figure_selectors
from . import judge_consistency, progress, triage
from . import inter_annotator as iaa_selectors
from . import human as human_selectors
from . import human_stored, judge_stored
from . import selectors as s


def _int(request, name: str) -> int | None:
    """As the pages' ``_int``: text that is no number is ignored, a number beyond any id is a 400."""
    raw = request.query_params.get(name, "")
    if not raw.isdigit():
        return None
    try:
        return id_from_text(name, raw)
    except ValueError as exc:
        raise ValidationError({name: [str(exc)]}) from None


def _protocol(request) -> str:
    protocol = request.query_params.get("protocol", "")
    return protocol if protocol in Protocol.values else Protocol.DEEPSYNTH


PROTOCOL = OpenApiParameter("protocol", str, enum=list(Protocol.values), description="default deepsynth")
RUN = OpenApiParameter("run", int, description="an evaluation run's id")
TASK_SET = OpenApiParameter("task_set", int, description="a task set's id")
METRIC = OpenApiParameter("metric", str)
SOURCE = OpenApiParameter("source", str)
COMPONENT = OpenApiParameter("component", str)
HUMAN_SCOPE = (
    OpenApiParameter("protocol", str, enum=list(Protocol.values), description="only preferences on this protocol's tasks"),
    OpenApiParameter("task_set", int, description="only preferences on this task set's tasks"),
    OpenApiParameter("project", int, description="only preferences given in this annotation project"),
    SOURCE, COMPONENT,
    OpenApiParameter("discipline", str, description="only tasks whose survey has this discipline (name)"),
    OpenApiParameter("annotator", str, description="only this annotator's preferences (username)"),
)
BY = OpenApiParameter("by", str, enum=["discipline", "annotator"], description="also one ranking per value")
PRIOR = OpenApiParameter("prior", str, enum=["weak"],
                         description="weak: the prior θ ~ N(0, 4) everywhere (default: only where the MLE does not exist)")
CLUSTER = OpenApiParameter("cluster", str, enum=["item", "topic"],
                           description="what a bootstrap resample draws whole: item (default) or topic (task)")
P_METHOD = OpenApiParameter("p", str, enum=["asymptotic", "permutation"],
                            description="correlation p-values: asymptotic (default) or also exact permutation")


class DashboardApi(APIView):
    permission_classes = [IsAuthenticated]

    def figures(self, request) -> dict:
        raise NotImplementedError

    def get(self, request):
        try:
            return Response(s.jsonable(self.figures(request)))
        except ValueError as exc:  # a bad parameter: the selector's message names it
            raise ValidationError({"detail": str(exc)}) from exc


def _schema(*parameters, summary: str):
    return extend_schema(parameters=list(parameters), responses={200: OpenApiTypes.OBJECT}, summary=summary)


class LeaderboardApi(DashboardApi):
    @_schema(PROTOCOL, RUN, TASK_SET, summary="Automated leaderboard (selectors.leaderboard)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        board = s.leaderboard(protocol=_protocol(request), run_id=_int(request, "run"),
                              task_set_id=_int(request, "task_set"))
        return s.leaderboard_public(board)


class HumanRankingApi(DashboardApi):
    @_schema(*HUMAN_SCOPE, BY, PRIOR, CLUSTER, P_METHOD,
             summary="Bradley–Terry ranking from human preferences (human.human_ranking), as stored "
                     "(human_stored.human_ranking_read: `statistics.state` says whether a worker computes newer ones)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return ranking_statistics_settle(human_stored.human_ranking_read(
            scope=human_selectors.scope_from_params(request.query_params), by=request.query_params.get("by", ""),
            p_method=request.query_params.get("p", "") or "asymptotic", prior=request.query_params.get("prior", ""),
            cluster=request.query_params.get("cluster", "") or "item"))


class AgreementApi(DashboardApi):
    @_schema(summary="Judge and inter-annotator agreement over the projects the user curates")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        iaa = agreement_statistics_settle(iaa_selectors.inter_annotator(user=request.user))
        return {"judge": judge_statistics_settle(judge_stored.judge_agreement_read(user=request.user)), "iaa": iaa,
                "imported": human_selectors.imported_agreement(),
                # per-target judge labels: curators only (they would unblind agreement projects)
                "judge_consistency": judge_consistency.judge_consistency() if is_global_curator(request.user) else None}


class VerdictChartApi(DashboardApi):
    @_schema(PROTOCOL, RUN, summary="Judge verdicts per system (selectors.verdict_breakdown)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return s.verdict_breakdown(protocol=_protocol(request), run_id=_int(request, "run"))


class ScoreChartApi(DashboardApi):
    @_schema(PROTOCOL, RUN, TASK_SET, METRIC, summary="Per-task values of one metric (selectors.score_points)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return s.score_points(protocol=_protocol(request), metric=request.query_params.get("metric", ""),
                              run_id=_int(request, "run"), task_set_id=_int(request, "task_set"))


class HumanVsAutomatedChartApi(DashboardApi):
    @_schema(*HUMAN_SCOPE, METRIC, summary="Human strength vs an automated metric (human.human_vs_automated)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        metric = request.query_params.get("metric", "")
        scope = human_selectors.human_vs_automated_scope(
            scope=human_selectors.scope_from_params(request.query_params), metric=metric)
        ranking = ranking_statistics_settle(human_stored.human_ranking_read(scope=scope))
        return {**human_selectors.human_vs_automated_pick(ranking=ranking, metric=metric),
                "statistics": ranking["statistics"]}



def _id(request, name: str) -> int | None:
    return figure_selectors.id_param(name, request.query_params.get(name, ""))


def _named_protocol(request, default: str) -> str:
    return figure_selectors.protocol_param(request.query_params.get("protocol", ""), default)


JUDGE_A = OpenApiParameter("judge_a", int, description="a judge configuration's id (default: the most recently used)")
JUDGE_B = OpenApiParameter("judge_b", int, description="another judge configuration's id")
JUDGE = OpenApiParameter("judge", int, description="only targets this judge configuration judged")
CONFIDENCE = OpenApiParameter("confidence", float, description=f"low-confidence threshold, default {triage.CONFIDENCE_BELOW}")


class RecallByQuartileApi(DashboardApi):
    @_schema(RUN, TASK_SET, summary="ReportBench citation recall by reference-importance quartile (figures.recall_by_quartile)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return figure_selectors.recall_by_quartile(run_id=_int(request, "run"), task_set_id=_int(request, "task_set"))


class CoverageByWindowApi(DashboardApi):
    @_schema(RUN, TASK_SET, summary="DeepScholar claim coverage against window size (figures.coverage_by_window)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return figure_selectors.coverage_by_window(run_id=_int(request, "run"), task_set_id=_int(request, "task_set"))


class DisciplineHeatmapApi(DashboardApi):
    @_schema(PROTOCOL, METRIC, RUN, TASK_SET, summary="Mean of a metric per discipline × system (figures.discipline_heatmap)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return figure_selectors.discipline_heatmap(protocol=_named_protocol(request, Protocol.SURVEYLENS),
                                          metric=request.query_params.get("metric", ""),
                                          run_id=_int(request, "run"), task_set_id=_int(request, "task_set"))


class JudgeSensitivityApi(DashboardApi):
    @_schema(PROTOCOL, JUDGE_A, JUDGE_B, TASK_SET, summary="System rankings under two judges (figures.judge_sensitivity)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return figure_selectors.judge_sensitivity(protocol=_named_protocol(request, Protocol.REPORTBENCH),
                                         judge_a=_id(request, "judge_a"), judge_b=_id(request, "judge_b"),
                                         task_set_id=_int(request, "task_set"))


class LookNextApi(DashboardApi):
    """Curators only: per-target judge labels would unblind agreement projects."""

    @_schema(PROTOCOL, JUDGE, CONFIDENCE, summary="Judged targets humans should look at next (triage.look_next)")
    def get(self, request):
        if not is_global_curator(request.user):
            raise PermissionDenied("only curators see which judged items need a human look")
        return super().get(request)

    def figures(self, request):
        return triage.look_next_from_params(request.query_params)


class RunProgressApi(DashboardApi):
    @_schema(summary="Running evaluation runs with done/total/failed and ETA (progress.runs_in_progress)")
    def get(self, request):
        return super().get(request)

    def figures(self, request):
        return progress.runs_in_progress()
