"""Dashboard pages: parse the query string, call one selector, render HTML or CSV (``?format=csv``)."""

from __future__ import annotations

import csv

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from benchmark.models import Protocol

from . import charts
from . import selectors as s


def _int(request, name: str) -> int | None:
    raw = request.GET.get(name, "")
    return int(raw) if raw.isdigit() else None


def _protocol(request) -> str:
    protocol = request.GET.get("protocol", "")
    return protocol if protocol in Protocol.values else Protocol.DEEPSYNTH


def _wants_csv(request) -> bool:
    return request.GET.get("format") == "csv"


def _csv(filename: str, header: list[str], rows: list[list]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows([["" if v is None else v for v in row] for row in rows])
    return response


def _digits(percent: bool) -> int:
    return 1 if percent else 3


@login_required
def index(request):
    return render(request, "dashboards/index.html", {"protocols": Protocol.choices, "sources": s.preference_sources()})


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
                             test.get("p_value") if is_best else None, int(cell["significant"])])
        header = ["system", "metric", "mean", "ci95_low", "ci95_high", "tasks", "items_judged", "items_failed",
                  "p_best_vs_second", "significant"]
        return _csv(f"leaderboard-{protocol}.csv", header, rows)
    human = s.human_ranking(with_correlations=False)
    context = {
        "board": board, "protocol": protocol, "protocol_label": Protocol(protocol).label, "run_id": run_id,
        "task_set_id": task_set_id, "filters": s.leaderboard_filters(protocol=protocol), "digits": _digits(board["percent"]),
        "human": human, "significance": s.SIGNIFICANCE,
    }
    return render(request, "dashboards/leaderboard.html", context)


@login_required
def human_ranking(request):
    source, component = request.GET.get("source", ""), request.GET.get("component", "")
    ranking = s.human_ranking(source=source, component=component)
    if _wants_csv(request):
        header = ["rank", "system", "bt_theta", "theta_ci95_low", "theta_ci95_high", "elo", "elo_ci95_low",
                  "elo_ci95_high", "wins", "losses", "ties", "comparisons"]
        rows = [[r["rank"], r["system"], r["theta"], r["low"], r["high"], r["elo"], r["elo_low"], r["elo_high"],
                 r["wins"], r["losses"], r["ties"], r["n"]] for r in ranking["systems"]]
        return _csv("human-ranking.csv", header, rows)
    chart = charts.interval_plot(
        [{"label": r["system"], "estimate": r["elo"], "low": r["elo_low"], "high": r["elo_high"]} for r in ranking["systems"]],
        title="Bradley–Terry strength from human preferences (Elo scale, 95 % CI)", x_label="Elo-scale rating",
        chart_id="chart-human",
    ) if ranking["systems"] else None
    context = {"ranking": ranking, "chart": chart, "sources": s.preference_sources(), "source": source,
               "component": component}
    return render(request, "dashboards/human.html", context)


@login_required
def agreement(request):
    judge = s.judge_agreement(user=request.user)
    iaa = s.inter_annotator(user=request.user)
    if _wants_csv(request):
        header = ["judge", "step", "level", "n", "accuracy", "cohen_kappa", "krippendorff_alpha", "unresolved",
                  "labels"]
        rows = [[g["judge"], g["step"], g.get("level"), g["n"], g.get("accuracy"), g.get("kappa"), g.get("alpha"),
                 g["unresolved"], g["n_labels"]] for g in judge["groups"]]
        return _csv("judge-agreement.csv", header, rows)
    return render(request, "dashboards/agreement.html",
                  {"judge": judge, "iaa": iaa, "imported": s.imported_agreement()})


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
    data = s.human_vs_automated(source=request.GET.get("source", ""), component=request.GET.get("component", ""),
                                metric=request.GET.get("metric", ""))
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
        "title": "Human vs automated", "explain": "Each point is a system present both in the human preferences and in "
        "the automated leaderboard.",
    })
