"""Dashboard pages: parse the query string, call one selector, render HTML or CSV (``?format=csv``)."""

from __future__ import annotations

from dataclasses import replace

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from annotation.services.agreement import (
    agreement_statistics_settle, judge_statistics_settle, ranking_statistics_settle,
)
from annotation.services.projects import project_from_verdicts
from benchmark.models import Protocol
from benchmark.spreadsheet import csv_writer
from core.accounts import is_global_curator
from core.bounded import ascii_digits
from core.converters import MAX_ID, id_from_text
from core.http import refuse

from ..calibration.views import leaderboard_calibration
from .views_reading import human_vs_automated_protocol, preference_sources_in
from . import charts, figures, judge_consistency, progress, triage
from . import inter_annotator as iaa_selectors
from . import human as human_selectors
from . import human_stored, judge_stored
from . import selectors as s


def _int(request, name: str) -> int | None:
    """An optional id from the query string; text that is no number is ignored, a number beyond
    any id is a 400."""
    raw = request.GET.get(name, "")
    if not raw.isdigit():
        return None
    try:
        return id_from_text(name, raw)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def _protocol(request) -> str:
    protocol = request.GET.get("protocol", "")
    return protocol if protocol in Protocol.values else Protocol.DEEPSYNTH


def _wants_csv(request) -> bool:
    return request.GET.get("format") == "csv"


def _csv(filename: str, header: list[str], rows: list[list]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv_writer(response)
    writer.writerow(header)
    writer.writerows(rows)
    return response


def _digits(percent: bool) -> int:
    return 1 if percent else 3


@login_required
def index(request):
    return render(request, "dashboards/index.html", {"protocols": Protocol.choices, "sources": human_selectors.preference_sources(),
                                                     "progress": progress.runs_in_progress()})


@login_required
def leaderboard(request):
    protocol, run_id, task_set_id = _protocol(request), _int(request, "run"), _int(request, "task_set")
    board = s.leaderboard(protocol=protocol, run_id=run_id, task_set_id=task_set_id)
    if _wants_csv(request):
        rows = []
        for row in board["rows"]:
            for cell in row["cells"]:
                test = board["tests"].get(cell["metric"]) or {}
                is_best = test.get("best") == row["system_id"]
                rows.append([row["system"], cell["metric"], cell.get("estimate"), cell.get("low"), cell.get("high"),
                             cell.get("n_tasks", 0), row["items_judged"], row["items_failed"],
                             test.get("p_value") if is_best else None, test.get("p_holm") if is_best else None,
                             int(cell["significant"])])
        header = ["system", "metric", "mean", "ci95_low", "ci95_high", "tasks", "items_judged", "items_failed",
                  "p_best_vs_second", "p_holm", "significant"]
        return _csv(f"leaderboard-{protocol}.csv", header, rows)
    # The human side of this protocol's leaderboard: its own systems on its own tasks only.
    human = ranking_statistics_settle(human_stored.human_ranking_read(
        scope=human_selectors.Scope(protocol=protocol, task_set=task_set_id), with_correlations=False))
    # The page shows metrics as rows and systems (best first) as columns: a protocol has up to ~26
    # headline metrics but a study compares a handful of systems, so the table fits a laptop's width.
    by_metric = [(metric, [(row, row["cells"][i]) for row in board["rows"]]) for i, metric in enumerate(board["metrics"])]
    context = {
        "by_metric": by_metric,
        "board": board, "protocol": protocol, "protocol_label": Protocol(protocol).label, "run_id": run_id,
        "task_set_id": task_set_id, "filters": s.leaderboard_filters(protocol=protocol), "digits": _digits(board["percent"]),
        "human": human, "significance": s.SIGNIFICANCE, "min_test_tasks": s.MIN_TEST_TASKS,
        "is_curator": is_global_curator(request.user),
        **leaderboard_calibration(request, protocol=protocol, run_id=run_id),
    }
    return render(request, "dashboards/leaderboard.html", context)


@login_required
def human_ranking(request):
    try:
        scope = human_selectors.scope_from_params(request.GET)
        ranking = ranking_statistics_settle(human_stored.human_ranking_read(
            scope=scope, by=request.GET.get("by", ""), p_method=request.GET.get("p", "") or "asymptotic",
            prior=request.GET.get("prior", ""), cluster=request.GET.get("cluster", "") or "item"))
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("dashboards:human")
    if _wants_csv(request):
        header = ["rank", "system", "bt_theta", "theta_ci95_low", "theta_ci95_high", "bt_elo_scale",
                  "bt_elo_scale_ci95_low", "bt_elo_scale_ci95_high", "surveylens_elo_k32", "arena_elo_k4", "wins", "losses", "ties",
                  "comparisons"]
        rows = [[r["rank"], r["system"], r["theta"], r["low"], r["high"], r["bt_elo_scale"], r["bt_elo_scale_low"],
                 r["bt_elo_scale_high"], r["surveylens_elo"], r["arena_elo"], r["wins"], r["losses"], r["ties"], r["n"]]
                for r in ranking["systems"]]
        return _csv("human-ranking.csv", header, rows)
    chart = charts.interval_plot(
        [{"label": r["system"], "estimate": r["bt_elo_scale"], "low": r["bt_elo_scale_low"], "high": r["bt_elo_scale_high"]}
         for r in ranking["systems"]],
        title="Bradley–Terry strength from human preferences (on an Elo-like scale, 95 % CI)",
        x_label="Bradley–Terry θ on an Elo-like scale", chart_id="chart-human",
    ) if ranking["systems"] else None
    context = {"ranking": ranking, "chart": chart, "options": human_selectors.scope_options(), "scope": scope,
               "by": ranking["by"], "mixed_sources": preference_sources_in(scope),
               "is_curator": is_global_curator(request.user)}
    return render(request, "dashboards/human.html", context)


@login_required
def agreement(request):
    if _wants_csv(request):
        judge = judge_statistics_settle(judge_stored.judge_agreement_read(user=request.user))
        header = ["judge", "step", "level", "n", "accuracy", "cohen_kappa", "krippendorff_alpha", "unresolved",
                  "labels", "prompt_version"]
        rows = []
        for g in judge["groups"]:  # the group over all prompt versions ("" in the last column), then each version
            rows.append([g["judge"], g["step"], g.get("level"), g["n"], g.get("accuracy"), g.get("kappa"), g.get("alpha"),
                         g["unresolved"], g["n_labels"], ""])
            rows.extend([g["judge"], g["step"], v["level"], v["n"], v["accuracy"], v["kappa"], v["alpha"], None, None,
                         v["prompt_version"]] for v in g["versions"])
        return _csv("judge-agreement.csv", header, rows)
    # The scope picker: project labels and imported files side by side (default), or one of them.
    labels = request.GET.get("labels", "")
    labels = labels if labels in ("projects", "imported") else ""
    projects, imported = labels != "imported", labels != "projects"
    judge = judge_statistics_settle(judge_stored.judge_agreement_read(user=request.user)) if projects else None
    iaa = agreement_statistics_settle(iaa_selectors.inter_annotator(user=request.user)) if projects else None
    consistency = judge_consistency.judge_consistency() if projects and is_global_curator(request.user) else None
    return render(request, "dashboards/agreement.html",
                  {"judge": judge, "iaa": iaa, "imported": human_selectors.imported_agreement() if imported else [],
                   "judge_consistency": consistency, "labels_scope": labels})


@login_required
def agreement_judge(request):
    """The agreement page's judge-vs-people section alone: what it polls while figures are due."""
    judge = judge_statistics_settle(judge_stored.judge_agreement_read(user=request.user))
    return render(request, "dashboards/_judge_agreement.html", {"judge": judge})


@login_required
def agreement_inter_annotator(request):
    """The agreement page's inter-annotator section alone: what it polls while figures are due."""
    iaa = agreement_statistics_settle(iaa_selectors.inter_annotator(user=request.user))
    return render(request, "dashboards/_inter_annotator.html", {"iaa": iaa})


@login_required
def chart_verdicts(request):
    protocol, run_id = _protocol(request), _int(request, "run")
    data = s.verdict_breakdown(protocol=protocol, run_id=run_id)
    if _wants_csv(request):
        rows = [[r["system"], c["label"], c["n"], c["share"], r["total"]] for r in data["rows"] for c in r["counts"]]
        return _csv(f"verdicts-{protocol}.csv", ["system", "label", "count", "share", "total"], rows)
    chart = charts.stacked_bars(data["rows"], data["labels"],
                                title=f"{Protocol(protocol).label}: judge verdicts per system") if data["rows"] else None
    return render(request, "dashboards/chart.html", {
        "chart": chart, "kind": "verdicts", "protocol": protocol, "run_id": run_id, "data": data,
        "title": "Verdict breakdown", "filters": s.leaderboard_filters(protocol=protocol),
        "explain": "Share of correct / omitted / incorrect judge decisions over every checklist item of every report "
                   "(DeepSynth-Eval Fig. 4/6); each repeat of a judge call counts once. Hover a bar for its count.",
    })


@login_required
def chart_scores(request):
    protocol, run_id, task_set_id = _protocol(request), _int(request, "run"), _int(request, "task_set")
    data = s.score_points(protocol=protocol, metric=request.GET.get("metric", ""), run_id=run_id,
                          task_set_id=task_set_id)
    metric = data["metric"]
    if _wants_csv(request):
        rows = [[g["system"], p["task"], p["value"]] for g in data["groups"] for p in g["points"]]
        return _csv(f"scores-{protocol}-{metric}.csv", ["system", "task", metric], rows)
    chart = charts.strip_plot(
        [g for g in data["groups"] if g["points"]], title=f"{Protocol(protocol).label}: {s.metric_label(metric)} per task",
        y_label=s.metric_label(metric) + (" (%)" if data["percent"] else ""), digits=_digits(data["percent"]),
    ) if any(g["points"] for g in data["groups"]) else None
    return render(request, "dashboards/chart.html", {
        "chart": chart, "kind": "scores", "protocol": protocol, "run_id": run_id, "data": data, "metric": metric,
        "metrics": data["metrics"], "title": "Score distribution", "filters": s.leaderboard_filters(protocol=protocol),
        "explain": "One point per task (report-level score card); the black bar is the mean with its bootstrap 95 % "
                   "interval over tasks.",
    })


@login_required
def chart_human_vs_auto(request):
    try:
        scope = human_selectors.scope_from_params(request.GET)
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("dashboards:chart_human_vs_auto")
    metric = request.GET.get("metric", "")
    if not scope.protocol and not metric:  # open on a protocol where the chart has points
        scope = replace(scope, protocol=human_vs_automated_protocol())
    if scope.protocol and metric and not metric.startswith(f"{scope.protocol}:"):
        metric = ""  # the protocol was changed in the picker: its own first metric
    scope = human_selectors.human_vs_automated_scope(scope=scope, metric=metric)
    ranking = ranking_statistics_settle(human_stored.human_ranking_read(scope=scope))
    data = human_selectors.human_vs_automated_pick(ranking=ranking, metric=metric)
    chosen, corr = data["metric"], data["correlation"]
    if _wants_csv(request):
        rows = [[p["system"], p["human"], p["metric"]] for p in (corr["points"] if corr else [])]
        return _csv("human-vs-automated.csv", ["system", "human_bt_theta", chosen or "metric"], rows)
    chart = charts.scatter(
        [{"label": p["system"], "x": p["human"], "y": p["metric"]} for p in corr["points"]],
        title=f'Human Bradley–Terry strength vs {corr["label"]} ({Protocol(corr["protocol"]).label})',
        x_label="Human BT strength θ", y_label=corr["label"], digits=2,
    ) if corr else None
    return render(request, "dashboards/chart.html", {
        "chart": chart, "kind": "human_vs_auto", "corr": corr, "options": data["correlations"], "metric": chosen,
        "protocol": data["scope"]["protocol"], "protocols": Protocol.choices,
        "title": "Human vs automated", "explain": "Each point is a system present both in the human preferences and in "
        "the automated leaderboard.", "ranking": ranking, "is_curator": is_global_curator(request.user),
    })


# --------------------------------------------------------------------------- the papers' figures, triage, progress


def _figure_page(request, context: dict, *, status: int = 200):
    return render(request, "dashboards/figure.html", context, status=status)


def _percent(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


@login_required
def chart_recall_quartiles(request):
    run_id, task_set_id = _int(request, "run"), _int(request, "task_set")
    data = figures.recall_by_quartile(run_id=run_id, task_set_id=task_set_id)
    if _wants_csv(request):
        rows = [[r["system"], c["quartile"], c["n_references"], c["n_cited"], c["recall"]]
                for r in data["rows"] for c in r["cells"]]
        return _csv("recall-by-quartile.csv", ["system", "quartile", "gold_references", "cited", "recall"], rows)
    for row in data["rows"]:
        for cell in row["cells"]:
            cell["percent"] = _percent(cell["recall"])  # the paper's Table 2 is in percent
    series = [{"system": r["system"], "points": [
        {"x": q, "value": c["percent"], "n": c["n_references"]} for q, c in enumerate(r["cells"]) if c["recall"] is not None
    ]} for r in data["rows"]]
    series = [s for s in series if s["points"]]
    chart = charts.line_chart(series, data["quartiles"], title="ReportBench: citation recall by reference-importance quartile",
                              x_label="Quartile of the gold reference by citation count (Q1 least cited)",
                              y_label="Recall (%)", digits=1, chart_id="chart-recall-quartiles") if series else None
    return _figure_page(request, {
        "kind": "recall_quartiles", "title": "Recall by citation quartile", "chart": chart, "data": data,
        "run_id": run_id, "task_set_id": task_set_id, "filters": s.leaderboard_filters(protocol=Protocol.REPORTBENCH),
        "explain": "ReportBench Table 2 (App. A.2.1): within each task the gold references are split into quartiles by "
                   "citation count (Q1 least cited, Q4 most cited; a stored quartile on the gold reference is used as "
                   "given); per system, the share of all references of a quartile, pooled over its tasks, that its "
                   "report cited (matched reference verdicts of the score card's judge).",
    })


@login_required
def chart_coverage_window(request):
    run_id, task_set_id = _int(request, "run"), _int(request, "task_set")
    data = figures.coverage_by_window(run_id=run_id, task_set_id=task_set_id)
    if _wants_csv(request):
        rows = [[sr["system"], p["window"], p["estimate"], p["low"], p["high"], p["n_tasks"]]
                for sr in data["series"] for p in sr["points"]]
        return _csv("claim-coverage-by-window.csv", ["system", "window", "mean", "ci95_low", "ci95_high", "tasks"], rows)
    position = {w: i for i, w in enumerate(data["windows"])}
    series = [{"system": sr["system"], "points": [
        {"x": position[p["window"]], "value": p["estimate"], "low": p["low"], "high": p["high"], "n": p["n_tasks"]}
        for p in sr["points"]]} for sr in data["series"]]
    chart = charts.line_chart(series, [f"w = {w}" for w in data["windows"]],
                              title="DeepScholar-bench: claim coverage against window size",
                              x_label="Window w (sentences before and after a claim whose citations may support it)",
                              y_label="Claim coverage", digits=3, chart_id="chart-coverage-window") if series else None
    return _figure_page(request, {
        "kind": "coverage_window", "title": "Claim coverage by window", "chart": chart, "data": data,
        "run_id": run_id, "task_set_id": task_set_id, "filters": s.leaderboard_filters(protocol=Protocol.DEEPSCHOLAR),
        "explain": "DeepScholar-bench Fig. 5: mean claim coverage over tasks for each window size w, with its bootstrap "
                   "95 % interval; a claim is covered when a citation within w sentences supports it.",
    })


@login_required
def chart_heatmap(request):
    context = {"kind": "heatmap", "title": "Discipline × system heatmap", "run_id": _int(request, "run"),
               "task_set_id": _int(request, "task_set"), "protocols": Protocol.choices,
               "explain": "SurveyLens Fig. 5: mean of the chosen metric over the report score cards of each discipline "
                          "(of the task's gold survey) and system; n is the number of reports behind a cell. Overall "
                          "rubric = the mean of the outline, content and reference rubric scores when a card does not "
                          "store it. Darker = higher; every cell prints its value."}
    try:
        protocol = figures.protocol_param(request.GET.get("protocol", ""), Protocol.SURVEYLENS)
        context["protocol"] = protocol
        context["filters"] = s.leaderboard_filters(protocol=protocol)
        data = figures.discipline_heatmap(protocol=protocol, metric=request.GET.get("metric", ""),
                                          run_id=context["run_id"], task_set_id=context["task_set_id"])
    except ValueError as exc:
        return _figure_page(request, {**context, "error": str(exc)}, status=400)
    if _wants_csv(request):
        rows = [[r["discipline"], c["system"], c["mean"], c["n"]] for r in data["rows"] for c in r["cells"] if c["n"]]
        return _csv(f"heatmap-{protocol}-{data['metric']}.csv", ["discipline", "system", data["metric"], "reports"], rows)
    chart = charts.heatmap(data["rows"], [sy["system"] for sy in data["systems"]],
                           title=f"{Protocol(protocol).label}: {data['metric_label']} per discipline and system",
                           low=data["low"], high=data["high"], digits=2) if data["rows"] else None
    return _figure_page(request, {**context, "chart": chart, "data": data, "metric": data["metric"],
                                  "metrics": data["metrics"]})


@login_required
def judge_sensitivity(request):
    context = {"protocols": Protocol.choices, "task_set_id": _int(request, "task_set")}
    try:
        protocol = figures.protocol_param(request.GET.get("protocol", ""), Protocol.REPORTBENCH)
        context["protocol"] = protocol
        data = figures.judge_sensitivity(protocol=protocol, judge_a=figures.id_param("judge_a", request.GET.get("judge_a", "")),
                                         judge_b=figures.id_param("judge_b", request.GET.get("judge_b", "")), task_set_id=context["task_set_id"])
    except ValueError as exc:
        context.setdefault("protocol", Protocol.REPORTBENCH)
        context["judges"] = figures.sensitivity_judges(protocol=context["protocol"])
        return render(request, "dashboards/sensitivity.html", {**context, "error": str(exc)}, status=400)
    if _wants_csv(request):
        header = ["metric", "system", "tasks", "judge_a", "judge_b", "rank_a", "rank_b", "spearman_rho", "kendall_tau"]
        rows = [[e["key"], sy["system"], sy["n_tasks"], sy["a"], sy["b"], sy["rank_a"], sy["rank_b"],
                 (e["spearman"] or {}).get("rho"), (e["kendall"] or {}).get("tau")]
                for e in data["metrics"] for sy in e["systems"]]
        return _csv(f"judge-sensitivity-{protocol}.csv", header, rows)
    chosen = request.GET.get("metric", "")
    entry = next((e for e in data["metrics"] if e["key"] == chosen), data["metrics"][0] if data["metrics"] else None)
    chart = charts.scatter(
        [{"label": sy["system"], "x": sy["a"], "y": sy["b"]} for sy in entry["systems"]],
        title=f"{entry['label']}: system means under the two judges", x_label=data["judge_a_name"],
        y_label=data["judge_b_name"], digits=_digits(data["percent"]) + 1, chart_id="chart-sensitivity",
    ) if entry else None
    return render(request, "dashboards/sensitivity.html", {**context, "data": data, "judges": data["judges"],
                                                           "chart": chart, "entry": entry,
                                                           "digits": _digits(data["percent"]) + 1})


def _look_next_page(request, *, data: dict | None, error: str = "", status: int = 200):
    return render(request, "dashboards/look_next.html", {
        "data": data, "error": error, "protocols": Protocol.choices, "is_curator": is_global_curator(request.user),
        "default_name": f"Look next {timezone.localtime():%Y-%m-%d %H:%M:%S}",
    }, status=status)


@login_required
def look_next(request):
    # Per-target judge labels unblind agreement projects: curators only, as on the agreement page.
    if not is_global_curator(request.user):
        return refuse(request, "Only curators see which judged items need a human look.")
    try:
        data = triage.look_next_from_params(request.GET)
    except ValueError as exc:
        return _look_next_page(request, data=None, error=str(exc), status=400)
    if _wants_csv(request):
        header = ["rank", "priority", "reasons", "system", "task", "step", "target", "judge_disagreement",
                  "repeat_disagreement", "lowest_confidence", "judges", "verdict_id"]
        rows = [[n, i["priority"], "; ".join(i["reasons"]), i["system"], i["task"], i["step"], i["target"],
                 i["judge_disagreement"], i["repeat_disagreement"], i["lowest_confidence"],
                 " | ".join(f'{j["judge"]} {j["prompt_version"]}: {"/".join(j["labels"])}' for j in i["judges"]),
                 i["verdict_id"]] for n, i in enumerate(data["items"], start=1)]
        return _csv("look-next.csv", header, rows)
    return _look_next_page(request, data=data)


@require_POST
@login_required
def look_next_project(request):
    """Create an agreement project from the verdicts listed on the look-next page, then open it."""
    if not is_global_curator(request.user):
        return refuse(request, "Only curators create annotation projects.")
    raw_ids = request.POST.getlist("verdict")
    bad = [raw for raw in raw_ids if not ascii_digits(raw) or int(raw) > MAX_ID]
    try:
        if bad:
            raise ValueError(f"verdict: {bad[0]!r} is not a verdict id")
        project = project_from_verdicts(
            name=request.POST.get("name", "").strip() or f"Look next {timezone.localtime():%Y-%m-%d %H:%M:%S}",
            curator=request.user, verdict_ids=[int(raw) for raw in raw_ids],
            description="Judged items flagged on the dashboards' “where should humans look next” page.",
        )
    except ValueError as exc:
        try:
            data = triage.look_next_from_params(request.POST)
        except ValueError:
            data = None
        return _look_next_page(request, data=data, error=str(exc), status=400)
    messages.success(request, f"Project “{project.name}” created with {len(raw_ids)} items.")
    return redirect("annotation:progress", project_id=project.pk)


@login_required
def run_progress(request):
    """The polled fragment: it keeps its ``hx-trigger`` only while runs are running."""
    return render(request, "dashboards/_run_progress.html", {"progress": progress.runs_in_progress()})
