"""Where should humans look next: judged targets on which the judges are unsure of themselves.

A target is one thing a judge decided about in one report (``report``, ``step``,
``target_kind``, ``target_id``, ``target_key``). It is flagged when

* **judges disagree** — two judges (judge configuration + prompt version) reached different
  decisions on it (each judge's decision: the most frequent label over its repeats);
* **repeats disagree** — one judge gave different labels in its repeated calls;
* **confidence is low** — some verdict on it reports a confidence below the threshold.

Priority = judge disagreement (1 − the largest share of judges that reached the same decision)
+ repeat disagreement (the largest, over judges, of 1 − the share of the judge's most frequent
label) + low confidence ((threshold − lowest confidence) / threshold, when below). Failed
verdicts (no label) are left out. Four queries: flagged targets (aggregated in the database),
the judge configurations, the flagged targets' verdicts, the shown targets' reports.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

from django.db.models import Count, Exists, Min, OuterRef, Q

from benchmark.models import Protocol, Report
from benchmark.naming import system_label
from core.converters import id_from_text
from scoring.models import JudgeConfig, Verdict

CONFIDENCE_BELOW = 0.6
LOOK_NEXT_LIMIT = 100
TARGET_FIELDS = ("report_id", "step", "target_kind", "target_id", "target_key")


def _modal_share(labels: list[str]) -> tuple[str | None, float]:
    """The most frequent label (None when several tie) and its share of ``labels``."""
    counts = Counter(labels).most_common()
    top = counts[0][1]
    tied = sum(1 for _, n in counts if n == top) > 1
    return (None if tied else counts[0][0]), top / len(labels)


class _Verdict(NamedTuple):
    id: int
    report_id: int
    step: str
    target_kind: str
    target_id: int
    target_key: str
    judge_config_id: int
    prompt_version: str
    repeat: int
    label: str
    confidence: float | None


def _target_figures(verdicts: list[_Verdict], confidence_below: float, judge_names: dict[int, str]) -> dict:
    by_judge: dict[tuple[int, str], list[_Verdict]] = defaultdict(list)
    for v in verdicts:
        by_judge[(v.judge_config_id, v.prompt_version)].append(v)
    judges = []
    repeat_disagreement = 0.0
    for (config_id, version), rows in sorted(by_judge.items(), key=lambda kv: (judge_names[kv[0][0]], kv[0][1])):
        rows.sort(key=lambda v: v.repeat)
        labels = [v.label for v in rows]
        decision, share = _modal_share(labels)
        repeat_disagreement = max(repeat_disagreement, 1.0 - share)
        judges.append({"judge_config_id": config_id, "judge": judge_names[config_id], "prompt_version": version,
                       "decision": decision, "labels": labels, "confidences": [v.confidence for v in rows]})
    decided = Counter(j["decision"] for j in judges if j["decision"] is not None)
    judge_disagreement = 1.0 - (max(decided.values(), default=0) / len(judges)) if len(judges) >= 2 else 0.0
    confidences = [v.confidence for v in verdicts if v.confidence is not None]
    lowest = min(confidences, default=None)
    low = max(0.0, (confidence_below - lowest) / confidence_below) if lowest is not None else 0.0
    reasons = []
    if judge_disagreement > 0:
        reasons.append("judges disagree")
    if repeat_disagreement > 0:
        reasons.append("repeats disagree")
    if low > 0:
        reasons.append("low confidence")
    return {"judges": judges, "judge_disagreement": judge_disagreement, "repeat_disagreement": repeat_disagreement,
            "lowest_confidence": lowest, "low_confidence": low, "reasons": reasons,
            "priority": judge_disagreement + repeat_disagreement + low}


def look_next_from_params(params) -> dict:
    """``look_next`` for the page's and the API's query strings (``protocol``, ``judge``, ``confidence``)."""
    judge_id = id_from_text("judge", params.get("judge", ""))
    raw = params.get("confidence", "")
    try:
        confidence = float(raw) if raw else CONFIDENCE_BELOW
    except ValueError:
        raise ValueError(f"confidence: {raw!r} is not a number") from None
    return look_next(protocol=params.get("protocol", ""), judge_id=judge_id,
                     confidence_below=confidence)


def look_next(*, protocol: str = "", judge_id: int | None = None, confidence_below: float = CONFIDENCE_BELOW,
              limit: int = LOOK_NEXT_LIMIT) -> dict:
    """Flagged targets, highest priority first (at most ``limit``), with each judge's labels, the
    figures behind the priority and the verdict an agreement project would show (the first
    judge's first repeat, or ``judge_id``'s when it judged the target)."""
    if protocol and protocol not in Protocol.values:
        raise ValueError(f"protocol: {protocol!r} is not one of {', '.join(Protocol.values)}")
    if not 0 < confidence_below <= 1:
        raise ValueError(f"confidence: {confidence_below} is not a threshold between 0 (excluded) and 1")
    verdicts = Verdict.objects.exclude(label="").filter(error="")
    if protocol:
        verdicts = verdicts.filter(step__startswith=f"{protocol}.")
    flagged = (verdicts.values(*TARGET_FIELDS).order_by()
               .annotate(n_labels=Count("label", distinct=True), lowest=Min("confidence"))
               .filter(Q(n_labels__gt=1) | Q(lowest__lt=confidence_below)))
    if judge_id is not None:
        flagged = flagged.annotate(by_judge=Count("pk", filter=Q(judge_config_id=judge_id))).filter(by_judge__gt=0)
    keys = set(flagged.values_list(*TARGET_FIELDS))
    judged = Verdict.objects.filter(judge_config=OuterRef("pk"))
    judges = list(JudgeConfig.objects.filter(Exists(judged)).order_by("name").values("id", "name"))
    judge_names = {j["id"]: j["name"] for j in judges}
    rows: dict[tuple, list[_Verdict]] = defaultdict(list)
    if keys:
        found = verdicts.filter(report_id__in={k[0] for k in keys}, step__in={k[1] for k in keys}).values_list(
            *_Verdict._fields)
        for v in map(_Verdict._make, found):
            key = (v.report_id, v.step, v.target_kind, v.target_id, v.target_key)
            if key in keys:
                rows[key].append(v)
    items = []
    for key, target_verdicts in rows.items():
        figures = _target_figures(target_verdicts, confidence_below, judge_names)
        shown = min(target_verdicts, key=lambda v: (v.repeat, v.judge_config_id != judge_id, v.id))
        report_id, step, kind, target_id, target_key = key
        items.append({"report_id": report_id, "step": step, "target_kind": kind, "target_id": target_id,
                      "target_key": target_key, "target": f"{kind} #{target_id}{' ' + target_key if target_key else ''}",
                      "verdict_id": shown.id, "n_verdicts": len(target_verdicts), **figures})
    items.sort(key=lambda i: (-i["priority"], -i["n_verdicts"], i["report_id"], i["step"], i["target_kind"],
                              i["target_id"], i["target_key"]))
    counts = Counter(reason for item in items for reason in item["reasons"])
    top = items[:limit]
    reports = {row[0]: row for row in Report.objects.filter(pk__in={i["report_id"] for i in top}).values_list(
        "pk", "system__name", "system__version", "task_id", "task__key", "system__display_name")}
    for item in top:
        _, name, version, task_id, task_key, display_name = reports[item["report_id"]]
        item.update(system=system_label(name, version, display_name), task_id=task_id, task=task_key)
    return {"items": top, "n_flagged": len(items), "limit": limit, "protocol": protocol, "judge_id": judge_id,
            "confidence_below": confidence_below, "judges": judges,
            "n_judges_disagree": counts["judges disagree"], "n_repeats_disagree": counts["repeats disagree"],
            "n_low_confidence": counts["low confidence"]}
