"""Is the judge consistent with itself? Position consistency of pairwise judge steps asked in
both orders (DeepScholar organization, §8.3.1, and SurveyScope's report vs the human survey:
the report as A and as B, each labelled from the report's side) and self-consistency
across repeats (repeat 0 against repeat 1 of every target, for configurations that repeat calls).
Curators only: per-target judge labels would unblind agreement projects."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Q

from scoring import metrics as m
from scoring.models import Verdict

from .human_bias import binomial_two_sided_p

# target_kind → (target_key with the report shown first, with the report shown second)
ORDERED_KINDS = {"organization": ("report_first", "report_second"), "human_pairwise": ("report_first", "human_first")}
CHUNK = 20_000
_FIELDS = ("judge_config_id", "judge_config__name", "judge_config__repeats", "prompt_version", "step", "report_id",
           "target_kind", "target_id", "target_key", "repeat", "label")


def _verdicts(condition: Q) -> Iterable[tuple]:
    return (Verdict.objects.filter(condition, error="").exclude(label="").order_by().values_list(*_FIELDS)
            .iterator(chunk_size=CHUNK))


_ORDERED = Q(target_kind__in=list(ORDERED_KINDS))
_REPEATED = Q(judge_config__repeats__gte=2, repeat__in=(0, 1))


def position_consistency(rows: Iterable[tuple] | None = None) -> list[dict]:
    """Per judge configuration, prompt version and pairwise kind: comparisons asked in both
    orders (same report, repeat), each labelled from the report's side (win / tie / loss).
    ``consistency`` = share with the same label in both orders; ``first_shown_wins`` /
    ``second_shown_wins`` / ``ties`` count the position that won, over both orders, with the
    two-sided binomial p of first-shown share = ½ over the decided comparisons."""
    orders: dict[tuple, dict[tuple, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for config_id, config, _, version, _, report, kind, target, key, repeat, label in (
            _verdicts(_ORDERED) if rows is None else rows):
        if kind in ORDERED_KINDS:
            orders[(config, config_id, version, kind)][(report, target, repeat)][key] = label
    out = []
    for (config, config_id, version, kind), pairs in sorted(orders.items(), key=lambda kv: kv[0][:1] + kv[0][2:]):
        first_key, second_key = ORDERED_KINDS[kind]
        both = [p for p in pairs.values() if first_key in p and second_key in p]
        first = sum(p[first_key] == "win" for p in both) + sum(p[second_key] == "loss" for p in both)
        second = sum(p[first_key] == "loss" for p in both) + sum(p[second_key] == "win" for p in both)
        same = sum(p[first_key] == p[second_key] for p in both)
        out.append({"judge": config, "judge_id": config_id, "prompt_version": version, "kind": kind,
                    "n_pairs": len(both), "n_one_order": len(pairs) - len(both), "consistent": same,
                    "consistency": same / len(both) if both else None, "first_shown_wins": first,
                    "second_shown_wins": second, "ties": 2 * len(both) - first - second,
                    "share": first / (first + second) if first + second else None,
                    "p_value": binomial_two_sided_p(first, first + second)})
    return out


def self_consistency(rows: Iterable[tuple] | None = None) -> list[dict]:
    """Per judge configuration that repeats calls, prompt version and step: the label of repeat 0
    against repeat 1 of every target judged in both (n, observed agreement, Cohen's κ with a
    bootstrap interval over targets)."""
    found: dict[tuple, dict[tuple, dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
    for config_id, config, repeats, version, step, report, kind, target, key, repeat, label in (
            _verdicts(_REPEATED) if rows is None else rows):
        if repeats >= 2 and repeat in (0, 1):
            found[(config, config_id, version, step)][(report, kind, target, key)][repeat] = label
    out = []
    for (config, config_id, version, step), targets in sorted(found.items(), key=lambda kv: kv[0][:1] + kv[0][2:]):
        both = [t for t in targets.values() if 0 in t and 1 in t]
        entry = {"judge": config, "judge_id": config_id, "prompt_version": version, "step": step, "n": len(both),
                 "observed_agreement": None, "kappa": None, "kappa_low": None, "kappa_high": None}
        if both:
            kappa = m.cohen_kappa_bootstrap([t[0] for t in both], [t[1] for t in both], seed=0)
            entry.update(observed_agreement=kappa["observed"], kappa=kappa["kappa"], kappa_low=kappa["low"],
                         kappa_high=kappa["high"])
        out.append(entry)
    return out


def judge_consistency() -> dict:
    """Both figures from one query of the verdicts either needs."""
    rows = list(_verdicts(_ORDERED | _REPEATED))
    return {"position": position_consistency(rows), "repeats": self_consistency(rows)}
