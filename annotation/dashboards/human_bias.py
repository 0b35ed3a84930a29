"""Human position bias in pairwise preferences: does the side shown first win more often than
the side shown second? ``PairwisePreference.report_left`` is the report shown first (left);
its ``choice`` is recorded in those positional terms, so this is read straight off the rows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from scipy.special import bdtr  # binomial CDF; scipy.stats would add ~50 MiB to every web worker


def binomial_two_sided_p(k: int, n: int) -> float | None:
    """Two-sided exact binomial test of k successes in n trials against p = ½: the probability
    of an outcome at most as likely as k, which for p = ½ is min(1, 2·P(X ≤ min(k, n − k)))
    (``scipy.stats.binomtest(k, n).pvalue``). ``None`` when n = 0."""
    if n == 0:
        return None
    return float(min(1.0, 2.0 * bdtr(min(k, n - k), n, 0.5)))


def _counts(choices: Iterable[str]) -> dict[str, Any]:
    first = second = ties = 0
    for choice in choices:
        if choice == "left":
            first += 1
        elif choice == "right":
            second += 1
        else:
            ties += 1
    decided = first + second
    return {"n": decided + ties, "first_shown_wins": first, "second_shown_wins": second, "ties": ties,
            "share": first / decided if decided else None, "p_value": binomial_two_sided_p(first, decided)}


def position_bias(rows) -> dict:
    """Wins of the first-shown (left) and second-shown (right) side and ties, over the rows in
    scope and per project (imported preferences: per source); ``share`` = first-shown wins /
    decided comparisons (ties left out), ``p_value`` the two-sided binomial test of share = ½
    over the decided comparisons. Rows whose two sides are one system's reports count too:
    the position, not the system, is what is tested."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for r in rows:
        key = ("project", r.project_id, r.project_name) if r.project_id else ("source", r.source, r.source or "(none)")
        groups[key].append(r.choice)
    return {**_counts(r.choice for r in rows),
            "by_project": [{"kind": kind, "id": ident, "name": name, **_counts(choices)}
                           for (kind, ident, name), choices in sorted(groups.items(), key=lambda kv: str(kv[0]))]}
