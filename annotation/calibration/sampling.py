"""Which verdicts an agreement project made for calibration holds, and with what inclusion
probability (``AnnotationItem.inclusion_probability``); the designs are
``scoring.metrics.sampling``'s.

* uniform: n of the N verdicts in scope, π = n/N;
* stratified: the same within each (system, step), n allocated in proportion to the strata;
* adaptive: each verdict drawn independently with π ∝ the judge's uncertainty on it
  (:func:`verdict_uncertainty`), a fifth of the budget spread uniformly (``FLOOR_SHARE``:
  π ≥ 0.2 · n/N, so no label weighs more than 5 N/n), capped at 1 — active statistical
  inference (Zrnic & Candès 2024). The expected sample size is n.

Items are stored in a random order (the project's ``seed``): labels come in position order,
so the items labelled so far are a random subsample of the sample, and any prefix keeps the
design (the weights are normalised, so the common factor "share labelled" cancels).

Sampling by unit (``AnnotationProject.sampling_unit`` group or sentence, ``unit_groups``): the
same designs draw units (a DeepSynth checklist group, a DeepScholar claim sentence) instead of
verdicts, n being the number of units; the project holds every verdict of a drawn unit (those
its value reads, ``unit_groups.sampling_units``), each with its unit's π. Units are offered in a random order with a unit's verdicts together: a unit counts
once all its verdicts are labelled, so together the labelled units stay a random prefix of the
drawn ones with few units part-labelled at a time (shuffled, a prefix would hold many
part-labelled units that count for nothing), and an expert reads a group's items together, as the judge did.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from scoring.metrics.sampling import poisson_sample, stratified_sample, uncertainty_probabilities, uniform_sample
from scoring.models import Verdict

from ..models import AnnotationProject
from .unit_groups import GROUP_METRICS, sampling_units

if TYPE_CHECKING:  # the agreement kind imports this module (``calibration_sample``)
    from ..kinds.base import AnnotationKind

Sampling = AnnotationProject.Sampling
SamplingUnit = AnnotationProject.SamplingUnit
RANDOM_DESIGNS = (Sampling.UNIFORM, Sampling.STRATIFIED, Sampling.ADAPTIVE)
FLOOR_SHARE = 0.2


BATCH = 2000  # verdict ids per query: a scope may hold more than a query's parameters allow


def verdict_uncertainty(verdict_ids: list[int]) -> dict[int, float]:
    """How unsure the judge is about each verdict (:func:`_uncertainty_batch`), a batch of ids at a time."""
    out: dict[int, float] = {}
    for start in range(0, len(verdict_ids), BATCH):
        out.update(_uncertainty_batch(verdict_ids[start:start + BATCH]))
    return out


def _uncertainty_batch(verdict_ids: list[int]) -> dict[int, float]:
    """How unsure the judge is about each verdict, in [0, 1]: the largest of the share of its
    other repeats that gave another label, the share of other judge configurations' first
    verdicts on the same target that did, and 1 − its stated confidence (when it gave one).
    0 when there is no such evidence (the verdict then gets the uniform floor only)."""
    rows = list(Verdict.objects.filter(pk__in=verdict_ids).values_list(
        "pk", "report_id", "judge_config_id", "prompt_version", "target_kind", "target_id", "target_key", "label",
        "confidence"))
    if not rows:
        return {}
    target = {pk: (report, kind, tid, key) for pk, report, _, _, kind, tid, key, _, _ in rows}
    others = Verdict.objects.filter(
        report__in={r[1] for r in rows}, target_kind__in={r[4] for r in rows}, target_id__in={r[5] for r in rows},
    ).exclude(pk__in=verdict_ids).exclude(label="").values_list(
        "report_id", "judge_config_id", "prompt_version", "target_kind", "target_id", "target_key", "repeat", "label")
    repeats: dict[tuple, list[str]] = defaultdict(list)
    judges: dict[tuple, list[str]] = defaultdict(list)
    for report, config, version, kind, tid, key, repeat, label in others:
        if repeat > 0:
            repeats[(report, config, version, kind, tid, key)].append(label)
        else:
            judges[(report, kind, tid, key)].append((config, label))
    out = {}
    for pk, report, config, version, kind, tid, key, label, confidence in rows:
        signals = [0.0]
        same_config = repeats.get((report, config, version, kind, tid, key), [])
        if same_config:
            signals.append(sum(other != label for other in same_config) / len(same_config))
        other_judges = [lab for cfg, lab in judges.get(target[pk], []) if cfg != config]
        if other_judges:
            signals.append(sum(other != label for other in other_judges) / len(other_judges))
        if confidence is not None and 0.0 <= confidence <= 1.0:
            signals.append(1.0 - confidence)
        out[pk] = max(signals)
    return out


def sample_targets(targets: list[tuple], *, design: str, size: int, seed: int, stream: int = 0,
                   strata: list | None = None, units: list | None = None) -> list[tuple[tuple, float]]:
    """(target, π) of the chosen targets, in the random order they are to be offered.
    ``targets``: the agreement targets in scope, ``(kind, verdict id, task id, version)``;
    ``strata``: each target's (system, step) for the stratified design; ``seed`` and ``stream``
    (the project's seed and id: two projects of seed 0 draw different samples) fix the draw.
    ``units``: each target's unit (sampling by unit): the design draws ``size`` units (a unit's
    stratum is its first verdict's, its uncertainty the largest of its verdicts'), and every
    target of a drawn unit is chosen with the unit's π, the units in a random order and a unit's
    targets together, in their given order; ``None``: each target is its own unit."""
    if design not in RANDOM_DESIGNS:
        raise ValueError(f"sampling: {design!r} is not one of {', '.join(RANDOM_DESIGNS)}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError("sample_size: give the number of verdicts (or units) to label (at least 1)")
    rng = np.random.default_rng([abs(seed), abs(stream), 31])
    if not targets:
        return []
    members: dict = {}
    for index, key in enumerate(units if units is not None else range(len(targets))):
        members.setdefault(key, []).append(index)
    drawn = list(members.values())
    if design == Sampling.UNIFORM:
        chosen, pi = uniform_sample(len(drawn), size, rng)
    elif design == Sampling.STRATIFIED:
        per_target = strata or [None] * len(targets)
        chosen, pi = stratified_sample([per_target[unit[0]] for unit in drawn], size, rng)
    else:
        uncertainty = verdict_uncertainty([t[1] for t in targets])
        probabilities = uncertainty_probabilities(
            [max(uncertainty.get(targets[i][1], 0.0) for i in unit) for unit in drawn], size, floor_share=FLOOR_SHARE)
        chosen = poisson_sample(probabilities, rng)
        pi = probabilities[chosen]
    return [(targets[i], float(p)) for u, p in zip(chosen.tolist(), pi.tolist()) for i in drawn[u]]


def verdict_strata(verdict_ids: list[int]) -> dict[int, tuple]:
    """(system id, step) of each verdict: the strata of the stratified design."""
    out = {}
    for start in range(0, len(verdict_ids), BATCH):
        rows = Verdict.objects.filter(pk__in=verdict_ids[start:start + BATCH]).values_list(
            "pk", "report__system_id", "step")
        out.update({pk: (system, step) for pk, system, step in rows})
    return out


def sampling_check(*, kind: AnnotationKind, sampling: str, sample_size: int | None,
                   sampling_unit: str = SamplingUnit.VERDICT, steps: Sequence[str] = ()) -> list[str]:
    """A project's sampling arguments, each refusal naming its field: only a kind that samples
    (``sampling`` among its ``create_fields``: agreement) takes a random design, and only a
    sampled project draws units of several verdicts, of their one step. Returns the steps to
    store (a project sampled by unit: its unit's step)."""
    if sampling not in Sampling.values or sampling == Sampling.CHOSEN:
        allowed = [s for s in Sampling.values if s != Sampling.CHOSEN]
        raise ValueError(f"sampling: {sampling!r} is not one of {', '.join(allowed)}")
    if sampling_unit not in SamplingUnit.values:
        raise ValueError(f"sampling_unit: {sampling_unit!r} is not one of {', '.join(SamplingUnit.values)}")
    if sampling == Sampling.ALL:
        if sample_size is not None:
            raise ValueError("sample_size: only a sampled project (uniform, stratified, adaptive) takes a size")
        if sampling_unit != SamplingUnit.VERDICT:
            raise ValueError(f"sampling_unit: {sampling_unit!r} needs a sampled project (uniform, stratified, "
                             "adaptive); sampling 'all' holds every verdict, so every unit")
        return list(steps)
    if "sampling" not in kind.create_fields:
        raise ValueError("sampling: only agreement projects sample verdicts")
    if not isinstance(sample_size, int) or isinstance(sample_size, bool) or sample_size < 1:
        raise ValueError("sample_size: give the number of verdicts (or units) to label (at least 1)")
    if sampling_unit == SamplingUnit.VERDICT:
        return list(steps)
    step = GROUP_METRICS[sampling_unit].step
    if list(steps) not in ([], [step]):
        raise ValueError(f"steps: sampling_unit {sampling_unit!r} draws the units of judge step {step!r} only; "
                         f"give steps [{step!r}] or none (got {list(steps)!r})")
    return [step]


def calibration_sample(project: AnnotationProject, targets: list[tuple], *,
                       sample_size: int | None) -> tuple[list[tuple], dict[int, float]]:
    """The agreement targets a project holds and each one's inclusion probability by verdict
    id: every target with π = 1, or the project's random sample of verdicts or of units (in its
    random order)."""
    if project.sampling not in RANDOM_DESIGNS:
        return targets, {target[1]: 1.0 for target in targets} if project.sampling == Sampling.ALL else {}
    units = None
    if project.sampling_unit != SamplingUnit.VERDICT:
        unit_of = sampling_units([t[1] for t in targets], project.sampling_unit, project.judge_config)
        targets = [t for t in targets if t[1] in unit_of]
        units = [unit_of[t[1]] for t in targets]
    strata = None
    if project.sampling == Sampling.STRATIFIED:
        by_verdict = verdict_strata([t[1] for t in targets])
        strata = [by_verdict.get(t[1]) for t in targets]
    chosen = sample_targets(targets, design=project.sampling, size=sample_size or 0, seed=project.seed,
                            stream=project.pk, strata=strata, units=units)
    return [target for target, _ in chosen], {target[1]: pi for target, pi in chosen}
