"""Agreement figures: inter-annotator agreement per project, judge vs people, imported preferences.

Every figure comes from ``scoring.metrics`` (κ, α, percent agreement) over labels selected here.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from itertools import combinations, islice
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Case, FilteredRelation, OuterRef, Q, Subquery, Sum, TextField, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from annotation.models import (
    AnnotationItem, AnnotationProject, Label, ProjectMembership, ProjectStatistics, ReportPair, Role,
)
from core.accounts import is_global_curator
from annotation.kinds import kind_of, kinds_with
from annotation.services.values import consensus_key, label_numbers
from benchmark.naming import system_label
from scoring import metrics as m
from scoring.models import Verdict

DISAGREEMENT_LIMIT = 200

# --------------------------------------------------------------------------- agreement statistics


def _reading(value: float | None) -> str:
    return "" if value is None else m.landis_koch(max(-1.0, min(1.0, value)))


class Ratings(NamedTuple):
    """One row per label as parallel arrays: what the agreement statistics need and no more."""

    unit: np.ndarray  # integers: the unit (item) rated
    coder: np.ndarray  # integers: who rated it
    code: np.ndarray  # integers: index into ``categories``
    categories: list  # the distinct label keys, in first-seen order


class _IntColumn:
    """An integer array filled chunk by chunk into room reserved up front (no list of chunks to
    join at the end): int32 while the values fit, which halves the memory of a million labels
    in a web process, int64 from the first value that does not."""

    def __init__(self, capacity: int) -> None:
        self.array, self.size = np.empty(max(capacity, 1), dtype=np.int32), 0

    def extend(self, values) -> None:
        chunk = np.array(values, dtype=np.int64)
        if self.array.dtype == np.int32 and chunk.size and not (_INT32.min <= chunk.min() and chunk.max() <= _INT32.max):
            self.array = self.array.astype(np.int64)
        end = self.size + chunk.size
        if end > self.array.size:  # more rows than expected (labels added meanwhile)
            grown = np.empty(max(end, 2 * self.array.size), dtype=self.array.dtype)
            grown[: self.size] = self.array[: self.size]
            self.array = grown
        self.array[self.size:end] = chunk
        self.size = end

    def values(self) -> np.ndarray:
        return self.array[: self.size]


_INT32 = np.iinfo(np.int32)


def _ratings_from_units(units: dict[Any, dict[Any, Any]]) -> tuple[Ratings, list]:
    """``{unit: {annotator: label}}`` as ``Ratings`` (units and annotators numbered 0..n−1),
    and the annotators in the order of their numbers."""
    unit_ids: dict[Any, int] = {}
    coder_ids: dict[Any, int] = {}
    categories: dict[tuple, int] = {}
    rows: list[tuple[int, int, int]] = []
    for unit, labels in units.items():
        for annotator, label in labels.items():
            code = categories.setdefault((type(label), label), len(categories))
            rows.append((unit_ids.setdefault(unit, len(unit_ids)), coder_ids.setdefault(annotator, len(coder_ids)), code))
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return Ratings(arr[:, 0], arr[:, 1], arr[:, 2], [label for _, label in categories]), list(coder_ids)


def numeric_ratings(units: Sequence[int], coders: Sequence[int], values: Sequence[float]) -> Ratings:
    """Numeric scores (one per unit and coder) as ``Ratings``: each distinct value a category,
    ``categories`` the values themselves (what ``ratings_stats`` compares at the interval level)."""
    distinct, code = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    return Ratings(np.asarray(units, dtype=np.int64), np.asarray(coders, dtype=np.int64), code.ravel(),
                   [float(v) for v in distinct])


N_RESAMPLES = 1000
LARGE_SAMPLE = 100_000  # items: above this a bootstrap uses fewer resamples (a worker computes it)


def _resamples(n: int) -> int:
    return N_RESAMPLES if n <= LARGE_SAMPLE else 200


def _observed(unit: np.ndarray, code: np.ndarray) -> float:
    """Share of agreeing ordered label pairs within items, each item weighted 1/(m_u − 1):
    the diagonal share of Krippendorff's coincidence matrix."""
    units, u_index, m_u = np.unique(unit, return_inverse=True, return_counts=True)
    cell, same = np.unique(u_index.ravel() * (int(code.max()) + 1) + code, return_counts=True)
    m_cell = m_u[cell // (int(code.max()) + 1)]
    keep = m_cell >= 2
    pairable = m_u >= 2
    return float((same[keep] * (same[keep] - 1) / (m_cell[keep] - 1)).sum() / m_u[pairable].sum())


def ratings_stats(ratings: Ratings, *, level: str = "nominal", numbers: Sequence[float] | None = None) -> dict:
    """Inter-annotator agreement over ``ratings``: Krippendorff's α always, Fleiss' κ when every
    unit has the same number (≥ 2) of labels, Cohen's κ per annotator pair (``a``/``b`` are coder
    ids here; ``named_stats`` turns them into names and orders the pairs). Beside each
    coefficient: observed agreement, n and a percentile bootstrap 95 % interval over items.

    ``level`` is the project's declared measurement level (never guessed from the values);
    ``numbers`` gives each category's value for an ordinal or interval level (``label_numbers``).
    Works on integer arrays in memory proportional to the number of labels."""
    unit, coder, code = ratings.unit, ratings.coder, ratings.code
    note = ""
    if level != "nominal" and numbers is None:
        note = f"declared {level}, but some labels are outside the label set or not numbers: compared as categories"
        level = "nominal"
    if level == "nominal":
        # Keys that print the same (1 and "1") are one category.
        _, merged = np.unique(np.array([str(v) for v in ratings.categories] or [""], dtype=str), return_inverse=True)
        code = merged.ravel()[code]
    else:
        values = np.asarray(numbers, dtype=float)
        _, merged = np.unique(values, return_inverse=True)
        code = merged.ravel()[code]
        distinct = np.unique(values)
    unit_ids, per_unit = np.unique(unit, return_counts=True)
    n_pairable = int((per_unit >= 2).sum())
    out = {"n_units": int(unit_ids.size), "n_pairable": n_pairable, "n_labels": int(unit.size),
           "n_annotators": int(np.unique(coder).size), "level": level, "level_note": note, "alpha": None,
           "alpha_reading": "", "alpha_low": None, "alpha_high": None, "observed_agreement": None,
           "fleiss": None, "fleiss_reading": "", "fleiss_note": "", "pairs": []}
    if not n_pairable:
        out["note"] = "no item was labelled by two annotators, so agreement cannot be measured"
        return out
    rated = code if level == "nominal" else distinct[code]
    out["observed_agreement"] = _observed(unit, code)
    if int(code.max()) + 1 <= m.MAX_BOOTSTRAP_CATEGORIES:
        alpha = m.krippendorff_alpha_bootstrap(unit, rated, level=level, n_resamples=_resamples(n_pairable), seed=0)
        out.update(alpha=alpha["alpha"], alpha_low=alpha["low"], alpha_high=alpha["high"])
    else:  # every edit its own category: α without an interval
        out["alpha"] = m.krippendorff_alpha_units(unit, rated, level=level)
    out["alpha_reading"] = _reading(out["alpha"])
    if (per_unit == per_unit[0]).all() and per_unit[0] >= 2:
        out["fleiss"] = m.fleiss_kappa_units(unit, code)
        out["fleiss_reading"] = _reading(out["fleiss"])
    else:
        out["fleiss_note"] = "items have different numbers of labels"
    order = np.lexsort((unit, coder))
    coders, starts = np.unique(coder[order], return_index=True)
    bounds = [*starts[1:], order.size]
    by_coder = [(unit[order[a:b]], code[order[a:b]]) for a, b in zip(starts, bounds)]
    for i, j in combinations(range(coders.size), 2):
        (units_a, codes_a), (units_b, codes_b) = by_coder[i], by_coder[j]
        at = np.minimum(np.searchsorted(units_a, units_b), units_a.size - 1)
        shared = units_a[at] == units_b
        n_shared = int(shared.sum())
        if not n_shared:
            continue
        kappa = m.cohen_kappa_bootstrap(codes_a[at[shared]], codes_b[shared], n_resamples=_resamples(n_shared), seed=0)
        pair = {"a": int(coders[i]), "b": int(coders[j]), "n": n_shared, "kappa": kappa["kappa"],
                "observed_agreement": kappa["observed"], "kappa_low": kappa["low"],
                "kappa_high": kappa["high"], "reading": _reading(kappa["kappa"])}
        if level == "ordinal":  # labels numbered by their position on the declared scale
            pair.update(weighted_kappas(distinct[codes_a[at[shared]]], distinct[codes_b[shared]]))
        out["pairs"].append(pair)
    return out


WEIGHTS = ("linear", "quadratic")


def weighted_kappas(a: np.ndarray, b: np.ndarray) -> dict:
    """Linear and quadratic weighted Cohen's κ with bootstrap intervals over items, for labels
    given as their positions on an ordinal scale: ``kappa_linear``, ``kappa_linear_low``, ...
    (unweighted κ counts 1 ↔ 5 as no worse a disagreement than 4 ↔ 5)."""
    out = {}
    for weights in WEIGHTS:
        found = m.cohen_kappa_bootstrap(a, b, weights=weights, n_resamples=_resamples(a.size), seed=0)
        out.update({f"kappa_{weights}": found["kappa"], f"kappa_{weights}_low": found["low"],
                    f"kappa_{weights}_high": found["high"]})
    return out


def named_stats(stats: dict, names: dict[Any, str]) -> dict:
    """``ratings_stats`` with annotator names in its pairs, ordered as the names sort."""
    def name(coder):
        return names.get(coder, coder)

    rank = {c: r for r, c in enumerate(sorted({p[k] for p in stats["pairs"] for k in "ab"},
                                              key=lambda c: (str(name(c)), c)))}
    pairs = []
    for pair in stats["pairs"]:
        a, b = sorted((pair["a"], pair["b"]), key=rank.__getitem__)
        pairs.append((rank[a], rank[b], {**pair, "a": name(a), "b": name(b)}))
    return {**stats, "pairs": [p for *_, p in sorted(pairs, key=lambda p: p[:2])]}


def agreement_stats(units: dict[Any, dict[Any, Any]], names: dict[Any, str] | None = None) -> dict:
    """Nominal inter-annotator agreement over ``{unit: {annotator: label}}`` (``ratings_stats``)."""
    ratings, annotators = _ratings_from_units(units)
    names = names or {}
    return named_stats(ratings_stats(ratings), {i: names.get(a, a) for i, a in enumerate(annotators)})


def _label_key(kind: str, value: dict, order: dict[int, Any] | None = None) -> Any:
    key = consensus_key(kind, value, order=order)
    return key if isinstance(key, (str, int, float)) else json.dumps(key, sort_keys=True)


RATINGS_CHUNK = 20_000
STORED_FIELDS = ("id", "version", "values", "computed_at", "seconds", "requested_at")


def _key_of_parts(kind: str, parts: tuple, order: dict[int, Any]) -> Any:
    """The label key (``_label_key``) from the text parts ``project_ratings`` reads: text is
    enough for verify decisions and agreement labels; a pairwise label's report ids are read
    back as numbers and its pair ordered by ``order`` (report → system)."""
    annotation_kind = kind_of(kind)
    fields = annotation_kind.key_fields
    if annotation_kind.whole_value_when is not None and parts[len(fields)] is not None:
        return _label_key(kind, json.loads(parts[len(fields)]))  # compared whole (a verify edit)
    return _label_key(kind, annotation_kind.key_value(dict(zip(fields, parts))), order)


def project_ratings(project: dict, *, expected: int = 0, without: frozenset[int] = frozenset()) -> Ratings:
    """A project's labels as ``Ratings``: one streamed query of (item, annotator, the value's key
    fields as text), so neither model rows nor decoded JSON values are held in memory; the
    consensus key is computed once per distinct combination of fields. ``expected``: about how
    many labels there are (the items' counters), the room reserved for them. A crowd study's
    attention checks are no items of the study: never counted (``annotation.crowd``);
    ``without``: annotators whose labels are left out (those its checks flag)."""
    kind = project["kind"]
    parts = {f"k_{f}": Cast(KT(f"value__{f}"), TextField()) for f in kind_of(kind).key_fields}
    whole = kind_of(kind).whole_value_when
    if whole is not None:  # the value counts whole only then (verify: an edit's edits): read no others
        parts["k_whole"] = Case(When(**{f"value__{whole[0]}": whole[1]}, then=Cast("value", TextField())),
                                default=Value(None), output_field=TextField())
    order: dict[int, Any] = {}  # pairwise: report → system, so "first" is the same system on every item
    if "report_pair" in kind_of(kind).target_kinds:
        for left, left_system, right, right_system in ReportPair.objects.filter(project_id=project["id"]).values_list(
                "report_left_id", "report_left__system_id", "report_right_id", "report_right__system_id"):
            order[left], order[right] = left_system, right_system
    labels = Label.objects.filter(project_id=project["id"])
    if project.get("has_crowd_study"):
        labels = labels.filter(item__attention_check__isnull=True)
    if without:
        labels = labels.exclude(annotator_id__in=list(without))
    rows = (labels.order_by().annotate(**parts)
            .values_list("item_id", "annotator_id", *parts).iterator(chunk_size=RATINGS_CHUNK))
    codes: dict[tuple, int] = {}  # text parts → category
    categories: dict[tuple, int] = {}  # (type, key) → category: parts that make the same key share it
    keys: list = []
    units, coders, coded = (_IntColumn(expected) for _ in range(3))
    while chunk := list(islice(rows, RATINGS_CHUNK)):
        item_ids, annotator_ids, *columns = zip(*chunk)
        units.extend(item_ids)
        coders.extend(annotator_ids)
        raw = list(zip(*columns))
        found = list(map(codes.get, raw))
        for i in [i for i, code in enumerate(found) if code is None]:
            if raw[i] not in codes:
                key = _key_of_parts(kind, raw[i], order)
                codes[raw[i]] = categories.setdefault((type(key), key), len(keys))
                if len(categories) > len(keys):
                    keys.append(key)
            found[i] = codes[raw[i]]
        coded.extend(found)
    return Ratings(units.values(), coders.values(), coded.values(), keys)


def curated_projects(user, *, with_fingerprint: bool = False, only: int | None = None,
                     everyone: bool = False) -> list[dict]:
    """Projects whose agreement ``user`` may see: all for global curators, else those they curate
    (or just project ``only``, for a worker; or, with ``everyone``, all: a worker's recovery).

    ``with_fingerprint`` adds the stored inter-annotator figures (``stored__version``, ...:
    ``STORED_FIELDS`` of ``ProjectStatistics``, None when there are none), ``n_labels`` (the
    items' label counters, which the label services keep in the same transaction as the
    labels) and ``last_label`` (the newest label id): labels
    are only ever added or deleted, never edited, and ids only grow, so any change to a project's
    labels changes this pair. Both avoid counting the labels themselves (0.7 s at 1M labels):
    the counters are one per item, and the newest id is one step in the (project, id) index,
    asked per project: inside one query the planner cannot see how few labels an old project
    has and walks the primary key back through every label added since."""
    projects = AnnotationProject.objects.order_by("name")
    if only is not None:  # one project, whoever asks (a worker's refresh)
        projects = projects.filter(pk=only)
    elif not everyone and not is_global_curator(user):
        projects = projects.filter(pk__in=ProjectMembership.objects.filter(user=user, role=Role.CURATOR).values("project"))
    fields = ["id", "name", "kind", "judge_config_id", "label_level", "label_set", "has_crowd_study"]
    if not with_fingerprint:
        return list(projects.values(*fields)[:500])
    counters = AnnotationItem.objects.filter(project=OuterRef("pk")).order_by().values("project")
    stored = FilteredRelation("statistics", condition=Q(statistics__kind=ProjectStatistics.Kind.INTER_ANNOTATOR))
    rows = list(projects.annotate(n_labels=Subquery(counters.annotate(n=Sum("labels_done")).values("n")),
                                  stored=stored)
                .values(*fields, "n_labels", *(f"stored__{f}" for f in STORED_FIELDS))[:500])
    for row in rows:
        newest = Label.objects.filter(project_id=row["id"]).order_by("-pk").values_list("pk", flat=True)
        row["last_label"] = newest.first() if row["n_labels"] else 0
    return rows


def judge_agreement(*, user, limit: int = DISAGREEMENT_LIMIT) -> dict:
    """Judge vs people on agreement projects, per judge configuration and step.

    ``per_annotator``: each annotator's every label against the judge's (n, accuracy, κ with
    interval, α; weighted κ on ordinal scales). The consensus figure follows. Reference label of an item: the curator's ``GoldLabel`` when adjudicated, else the
    annotators' label when they all agree; items whose annotators disagree and have no gold
    yet are counted as unresolved and left out. Accuracy (``percent_agreement``), Cohen's κ,
    Krippendorff's α (at the projects' declared ``label_level``), a confusion matrix and the disagreements; and the
    same figures per prompt version of the judged verdicts (``versions``), oldest first, to see
    whether a prompt change moved the judge towards or away from people.

    Computed here, in full: the pages and the API serve the same figures stored
    (``judge_stored.judge_agreement_read``), and a worker computes them with ``judge_agreement_of``."""
    return judge_agreement_of(projects=judge_projects(user), limit=limit)


def judge_projects(user, *, only: list[int] | None = None) -> list[dict]:
    """The agreement projects whose judge figures ``user`` may see (``curated_projects``), or, for
    a worker, those of ``only`` that still exist."""
    found = curated_projects(user) if only is None else list(
        AnnotationProject.objects.filter(pk__in=only).order_by("name").values(
            "id", "name", "kind", "judge_config_id", "label_level", "label_set", "has_crowd_study"))
    return [p for p in found if p["kind"] in kinds_with("judge_agreement")]


def judge_agreement_of(*, projects: list[dict], limit: int = DISAGREEMENT_LIMIT) -> dict:
    """``judge_agreement`` over ``projects`` (rows of ``judge_projects``)."""
    declared = {p["id"]: (p["label_level"], p["label_set"]) for p in projects}
    project_ids = [p["id"] for p in projects]
    items = AnnotationItem.objects.filter(project_id__in=project_ids, target_kind="verdict")
    item_rows = list(items.values_list("id", "project_id", "project__name", "target_id", "gold__value"))
    labels: dict[int, list] = defaultdict(list)
    by_annotator: dict[int, list[tuple[int, Any]]] = defaultdict(list)  # item → (annotator, label)
    for item_id, annotator_id, value in Label.objects.filter(item__in=items).values_list("item_id", "annotator_id", "value"):
        labels[item_id].append(value.get("label"))
        by_annotator[item_id].append((annotator_id, value.get("label")))
    verdicts = {
        row[0]: row for row in Verdict.objects.filter(pk__in=items.values("target_id")).values_list(
            "id", "judge_config_id", "judge_config__name", "step", "label", "report__system__name", "report_id",
            "target_kind", "target_id", "target_key", "prompt_version", "created_at", "report__system__version",
            "report__system__display_name",
        )
    }
    groups: dict[tuple, dict] = {}
    for item_id, project_id, project_name, verdict_id, gold in item_rows:
        verdict = verdicts.get(verdict_id)
        if verdict is None:
            continue
        (_, config_id, config_name, step, judge_label, system, report_id, t_kind, t_id, t_key, version, made,
         system_version, system_display_name) = verdict
        group = groups.setdefault((config_name, step), {"judge": config_name, "judge_id": config_id, "step": step,
                                                         "pairs": [], "unresolved": 0, "unlabelled": 0, "n_labels": 0,
                                                         "declared": set(), "by_annotator": defaultdict(list)})
        group["declared"].add(json.dumps(declared[project_id], sort_keys=True))
        for annotator_id, label in by_annotator.get(item_id, []):
            if label is not None:
                group["by_annotator"][annotator_id].append({"judge": judge_label, "reference": label})
        given = [label for label in labels.get(item_id, []) if label is not None]
        group["n_labels"] += len(given)
        if gold and gold.get("label") is not None:
            reference, source = gold["label"], "gold"
        elif given and len(set(given)) == 1:
            reference, source = given[0], "annotators" if len(given) > 1 else "annotator"
        elif given:
            group["unresolved"] += 1
            continue
        else:
            group["unlabelled"] += 1
            continue
        group["pairs"].append({"item_id": item_id, "project_id": project_id, "project": project_name,
                               "judge": judge_label, "reference": reference, "source": source,
                               "system": system_label(system, system_version, system_display_name),
                               "report_id": report_id, "target": f"{t_kind} #{t_id}{' ' + t_key if t_key else ''}",
                               "prompt_version": version, "made": made})
    out = []
    annotator_ids = {a for group in groups.values() for a in group["by_annotator"]}
    usernames = dict(get_user_model().objects.filter(pk__in=annotator_ids).values_list("pk", "username")) \
        if annotator_ids else {}
    for key in sorted(groups):
        group = groups[key]
        pairs = group.pop("pairs")
        group["n"] = len(pairs)
        group["versions"] = []
        scale = [json.loads(d) for d in group.pop("declared")]
        level, label_set = scale[0] if len(scale) == 1 else ("nominal", {})
        group["level_note"] = "" if len(scale) == 1 else "the projects declare different label levels: compared as categories"
        # Every human label, each annotator against the judge (not only items with a consensus or gold).
        group["per_annotator"] = sorted(
            ({"annotator": usernames.get(a, str(a)), "n": len(given),
              **_judge_vs_reference(given, level=level, label_set=label_set)}
             for a, given in group.pop("by_annotator").items()), key=lambda row: row["annotator"])
        if pairs:
            group.update(_judge_vs_reference(pairs, level=level, label_set=label_set))
            by_version: dict[str, list[dict]] = defaultdict(list)
            for pair in pairs:
                by_version[pair["prompt_version"]].append(pair)
            # oldest first: the order in which the prompt versions were used
            for version, version_pairs in sorted(by_version.items(), key=lambda kv: (min(p["made"] for p in kv[1]), kv[0])):
                group["versions"].append({"prompt_version": version, "n": len(version_pairs),
                                          **_judge_vs_reference(version_pairs, level=level, label_set=label_set)})
            categories = sorted({str(p["judge"]) for p in pairs} | {str(p["reference"]) for p in pairs})
            cells = Counter((str(p["judge"]), str(p["reference"])) for p in pairs)
            group["confusion"] = {"labels": categories,
                                  "rows": [{"label": j, "counts": [cells[(j, r)] for r in categories]} for j in categories]}
            disagreements = [p for p in pairs if str(p["judge"]) != str(p["reference"])]
            group["n_disagreements"] = len(disagreements)
            group["disagreements"] = [{k: v for k, v in p.items() if k != "made"} for p in disagreements[:limit]]
        out.append(group)
    return {"groups": out, "n_projects": len(projects)}


def _judge_vs_reference(pairs: list[dict], *, level: str, label_set: dict) -> dict:
    """Accuracy, Cohen's κ and Krippendorff's α of judge labels against reference labels, α at
    the declared ``level`` (nominal when a label has no number at that level)."""
    labels = [p["judge"] for p in pairs] + [p["reference"] for p in pairs]
    numbers = label_numbers(level=level, label_set=label_set, labels=labels)
    note = ""
    if level != "nominal" and numbers is None:
        level, note = "nominal", f"declared {level}, but some labels are outside the label set: compared as categories"
    values = [str(v) for v in labels] if numbers is None else numbers
    judged, reference = values[: len(pairs)], values[len(pairs):]
    kappa = m.cohen_kappa_bootstrap([str(v) for v in judged], [str(v) for v in reference],
                                    n_resamples=_resamples(len(pairs)), seed=0)
    matrix = np.array([judged, reference], dtype=object if level == "nominal" else float)
    alpha = m.krippendorff_alpha(matrix, level=level)
    out = {"level": level, "level_note": note, "accuracy": m.percent_agreement(judged, reference),
           "kappa": kappa["kappa"], "kappa_low": kappa["low"], "kappa_high": kappa["high"],
           "kappa_reading": _reading(kappa["kappa"]), "alpha": alpha, "alpha_reading": _reading(alpha)}
    if level == "ordinal":
        out.update(weighted_kappas(np.asarray(judged, dtype=float), np.asarray(reference, dtype=float)))
    return out
