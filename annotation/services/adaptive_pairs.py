"""Adaptive pairwise assignment: the next pairs are neighbours in the current Bradley–Terry
ranking whose order is in doubt, with a stated share chosen uniformly, sides balanced.

A pairwise project with ``pair_choice = adaptive`` does not schedule the double round-robin at
once. Its pool is the same — every ordered pair of two systems' reports on a task, each ordered
pair at most once — but it materialises only a few items ahead of its annotators
(:func:`pairs_ahead` open items that nobody labelled yet) and chooses each new one from the Bradley–Terry fit over the labels
committed so far (``scoring.metrics.preference_design.choose_pairs_batch``: the pair adjacent
in the ranking whose comparison most lowers the variances of the orders in doubt, each weighted
by the squared posterior probability that it is wrong), until ``pairs_budget`` pairs exist. Items already open and not yet labelled count as
asked (the covariance is updated for them before choosing).

* **Uniform share.** Pair number m (0-based, in the project's sequence) is drawn uniformly from
  the system pairs that still have an unused report pair when ⌊(m + 1)s⌋ > ⌊ms⌋ (s =
  ``uniform_share``): exactly ⌊Ms⌋ of the first M pairs, spread evenly. They keep every pair
  of systems in the fit (the design leans on the model; a misspecified model misleads it less
  when all pairs keep being seen).
* **Rounds.** The pairs added at once are drawn one after another, the covariance updated after
  each as one more comparison of the pair would (``covariance_after_batch``), so a round spreads
  over the doubtful pairs rather than asking the same question many times.
* **Sides.** A system pair's next comparison completes a report pair already shown on one side
  when there is one (its other side), else opens a new report pair (the task where the two
  systems met least) with the system that sat on the left less often (within this pair) on the
  left, a seeded coin when even: each unordered report pair is shown once each way, and each
  system pair's left counts differ by at most one.
* **Blind.** Nothing here reaches an annotator but the items themselves, which are ordinary
  ``ReportPair`` items (``annotation.blind`` hides their reports, systems, ids and legs). The
  choice reads only committed labels of the project (``PairwisePreference`` rows written with
  them), never a judge's verdict, gold label or another project.

When: at creation (``project_create`` → ``_populate``), at ``project_populate``, and after each
commit that recorded preferences of the project (``annotation.hooks``: the
``preferences_recorded`` signal → ``transaction.on_commit`` → :func:`adaptive_pairs_refill`).
:func:`pairs_choose` is the one choice function; ``annotation.simulation.pairwise`` replays
labelling with it.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from django.db import transaction
from django.db.models import Q

from benchmark.models import Report
from core.audit_actions import AuditAction
from scoring.metrics.preference_design import bradley_terry_laplace, choose_pairs_batch, covariance_after_batch

from ..models import AnnotationItem, AnnotationProject, PairwisePreference, ProjectMembership, ReportPair, Role
from ..models import TargetKind
from .audit import audit_record

if TYPE_CHECKING:  # the kinds import this module (pairwise's adaptive fill); it only reads what they say
    from ..kinds.base import AnnotationKind

PairChoice = AnnotationProject.PairChoice
# Open items kept ahead of the annotators: two per annotator (the item held and the one the
# workspace prefetches) and two more, at least four.
AHEAD_MIN = 4
OUTCOME = {PairwisePreference.Choice.LEFT: 1.0, PairwisePreference.Choice.RIGHT: 0.0,
           PairwisePreference.Choice.TIE: 0.5}


def is_uniform_turn(number: int, share: float) -> bool:
    """Whether pair ``number`` (0-based) of a sequence is a uniform one: ⌊(m + 1)s⌋ > ⌊ms⌋."""
    return int((number + 1) * share + 1e-9) > int(number * share + 1e-9)


def pairs_choose(
    *, comparisons: Sequence[tuple[int, int, float]], n_systems: int, capacity: dict[tuple[int, int], int],
    count: int, start: int, uniform_share: float, rng: random.Random,
    pending: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int]]:
    """The next ``count`` system pairs (i < j) to compare, in order.

    ``comparisons``: the committed (i, j, outcome) triples (1: i won, 0: j won, 0.5: tie);
    ``capacity``: how many more comparisons each pair (i < j) may get (pairs absent: none);
    ``start``: how many pairs the sequence had before (the uniform turns follow it, see the
    module docstring); ``pending``: the system pairs of open items nobody labelled yet (they
    count as asked: Σ is updated for them first); ``rng`` seeds the draws. The choice is
    ``scoring.metrics.preference_design.choose_pairs_batch`` with one fit (the function the
    simulation replays). Fewer than ``count`` when the capacity runs out.
    """
    if count < 1 or n_systems < 2 or not any(slots > 0 for slots in capacity.values()):
        return []
    fit = bradley_terry_laplace(np.asarray(comparisons, dtype=float).reshape(-1, 3), n_items=n_systems)
    theta, cov = fit["theta"][None, :], fit["covariance"][None, :, :]
    for i, j in pending:
        if i != j and max(i, j) < n_systems:
            cov = covariance_after_batch(theta, cov, np.array([i]), np.array([j]))
    slots = np.zeros((1, n_systems, n_systems))
    for (i, j), left in capacity.items():
        if left > 0:
            slots[0, min(i, j), max(i, j)] = left
    first, second = choose_pairs_batch(
        theta, cov, uniform=[is_uniform_turn(m, uniform_share) for m in range(start, start + count)],
        rng=np.random.default_rng(rng.getrandbits(64)), capacity=slots)
    return [(int(i), int(j)) for i, j in zip(first[0], second[0]) if i >= 0]


def pairs_ahead(*, annotators: int) -> int:
    return max(AHEAD_MIN, 2 * annotators + 2)


class _Pool:
    """The project's reports by system, the report pairs it may still show, and those shown."""

    def __init__(self, project: AnnotationProject) -> None:
        reports = Report.objects.filter(task__in=project.tasks.all())
        system_ids = list(project.systems.values_list("pk", flat=True))
        if system_ids:
            reports = reports.filter(system__in=system_ids)
        rows = list(reports.order_by("task", "system", "pk").values_list("pk", "task_id", "system_id"))
        self.system_of = {pk: system for pk, _, system in rows}
        self.task_of = {pk: task for pk, task, _ in rows}
        self.systems = sorted(set(self.system_of.values()))
        self.index = {system: n for n, system in enumerate(self.systems)}
        by_task: dict[int, list[int]] = defaultdict(list)
        for pk, task, _ in rows:
            by_task[task].append(pk)
        self.shown = set(ReportPair.objects.filter(project=project).values_list("report_left", "report_right"))
        # system pair (i < j) → the unordered report pairs (a < b by report id) of its systems
        self.report_pairs: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for task, reports_of_task in sorted(by_task.items()):
            for n, a in enumerate(reports_of_task):
                for b in reports_of_task[n + 1:]:
                    i, j = self.index[self.system_of[a]], self.index[self.system_of[b]]
                    if i != j:
                        self.report_pairs[(min(i, j), max(i, j))].append((a, b))
        self.left_count: Counter = Counter()  # (system pair, system index on the left) → times
        for left, right in self.shown:
            if left in self.system_of and right in self.system_of:
                i, j = self.index[self.system_of[left]], self.index[self.system_of[right]]
                if i != j:
                    self.left_count[((min(i, j), max(i, j)), i)] += 1

    def size(self) -> int:
        return 2 * sum(len(pairs) for pairs in self.report_pairs.values())

    def capacity(self) -> dict[tuple[int, int], int]:
        return {pair: sum((a, b) not in self.shown for a, b in reports) + sum((b, a) not in self.shown
                                                                                for a, b in reports)
                for pair, reports in self.report_pairs.items()}

    def place(self, pair: tuple[int, int], rng: random.Random) -> tuple[int, int]:
        """The (left, right) reports for the system pair's next comparison (see the module
        docstring: complete a half-shown report pair, else open one in the task where the two
        systems met least, the side that sat left less often on the left)."""
        reports = self.report_pairs[pair]
        half = [(a, b) for a, b in reports if ((a, b) in self.shown) != ((b, a) in self.shown)]
        if half:
            a, b = half[0]
            placed = (b, a) if (a, b) in self.shown else (a, b)
        else:
            met = Counter(self.task_of[a] for a, b in reports if (a, b) in self.shown or (b, a) in self.shown)
            fresh = [(a, b) for a, b in reports if (a, b) not in self.shown and (b, a) not in self.shown]
            fewest = min(met[self.task_of[a]] for a, _ in fresh)
            a, b = rng.choice([(a, b) for a, b in fresh if met[self.task_of[a]] == fewest])
            i = self.index[self.system_of[a]]
            j = self.index[self.system_of[b]]
            left_i, left_j = self.left_count[(pair, i)], self.left_count[(pair, j)]
            a_left = left_i < left_j if left_i != left_j else rng.random() < 0.5
            placed = (a, b) if a_left else (b, a)
        self.shown.add(placed)
        self.left_count[(pair, self.index[self.system_of[placed[0]]])] += 1
        return placed


def _comparisons(project: AnnotationProject, pool: _Pool) -> list[tuple[int, int, float]]:
    """The project's committed preferences as (left system index, right system index, outcome)."""
    rows = PairwisePreference.objects.filter(project=project).values_list("report_left", "report_right", "choice")
    found = []
    for left, right, choice in rows:
        if left in pool.system_of and right in pool.system_of and choice in OUTCOME:
            i, j = pool.index[pool.system_of[left]], pool.index[pool.system_of[right]]
            if i != j:
                found.append((i, j, OUTCOME[choice]))
    return found


def _pending(project: AnnotationProject, pool: _Pool) -> list[tuple[int, int]]:
    """The system pairs (i < j) of the project's open items nobody labelled yet."""
    open_pairs = ReportPair.objects.filter(
        project=project, pk__in=AnnotationItem.objects.filter(
            project=project, target_kind=TargetKind.REPORT_PAIR, status=AnnotationItem.Status.OPEN,
            labels_done=0).values("target_id"))
    found = []
    for left, right in open_pairs.values_list("report_left", "report_right"):
        if left in pool.system_of and right in pool.system_of:
            i, j = pool.index[pool.system_of[left]], pool.index[pool.system_of[right]]
            if i != j:
                found.append((min(i, j), max(i, j)))
    return found


def pair_design_clean(*, kind: AnnotationKind, pair_choice: str | None, uniform_share, pairs_budget) -> dict:
    """How a project of a kind that chooses pairs (``pair_choice`` among its ``create_fields``:
    pairwise) chooses them, checked; other kinds keep the defaults, so only such a project is
    ever adaptive."""
    chooses_pairs = "pair_choice" in kind.create_fields
    pair_choice = pair_choice or PairChoice.ROUND_ROBIN
    if pair_choice not in PairChoice.values:
        raise ValueError(f"pair_choice: {pair_choice!r} is not one of {', '.join(PairChoice.values)}")
    if pair_choice == PairChoice.ROUND_ROBIN:
        if chooses_pairs and pairs_budget is not None:
            raise ValueError("pairs_budget: only an adaptive project stops at a budget; the round-robin labels every"
                             " pair")
        return {}
    if not chooses_pairs:
        raise ValueError("pair_choice: only pairwise projects choose pairs")
    if isinstance(uniform_share, bool) or not isinstance(uniform_share, (int, float)) \
            or not 0 <= uniform_share <= 1:
        raise ValueError(f"uniform_share: a share from 0 to 1, not {uniform_share!r}")
    if pairs_budget is not None and (isinstance(pairs_budget, bool) or not isinstance(pairs_budget, int)
                                     or pairs_budget < 1):
        raise ValueError(f"pairs_budget: a whole number of pairs ≥ 1, not {pairs_budget!r}")
    return {"pair_choice": pair_choice, "uniform_share": float(uniform_share), "pairs_budget": pairs_budget}


def adaptive_design(*, project: AnnotationProject) -> dict | None:
    """Where an adaptive pairwise project stands, for its progress page and its human ranking
    (``None`` for any other project): the budget, the pairs chosen so far, the uniform share and
    the sentence that says the design is unbalanced. Nothing in it depends on a label's content
    (the count of pairs is the count of items everyone sees)."""
    if project.pair_choice != PairChoice.ADAPTIVE:  # only pairwise projects are (``pair_design_clean``)
        return None
    pool = _Pool(project)
    budget = project.pairs_budget if project.pairs_budget is not None else pool.size()
    created = len(pool.shown)
    return {
        "pairs_budget": budget, "pairs_created": created, "pairs_left": max(0, budget - created),
        "uniform_share": project.uniform_share, "balanced": False,
        "sentence": (f"Adaptive pairs: {created} of a budget of {budget} chosen so far, {project.uniform_share:.0%}"
                     " uniformly, the rest neighbours in the current ranking whose order is in doubt. The design is"
                     " unbalanced on purpose: system pairs are compared unequally often, so Bradley–Terry strengths"
                     " and their intervals are the numbers to read, not raw win shares."),
    }


def adaptive_pairs_budget_clean(*, project: AnnotationProject) -> int:
    """The project's pairs budget (default and upper bound: every ordered report pair of its pool);
    ``ValueError`` naming ``pairs_budget`` when there is nothing to compare or it is out of range."""
    size = _Pool(project).size()
    if size == 0:
        raise ValueError("pairs_budget: the tasks have no two reports of different systems to compare")
    budget = project.pairs_budget if project.pairs_budget is not None else size
    if not 1 <= budget <= size:
        raise ValueError(f"pairs_budget: between 1 and {size} (every ordered pair of reports), not {budget}")
    return budget


def adaptive_pairs_fill(*, project: AnnotationProject, actor=None) -> int:
    """In the caller's transaction, with the project's row locked by the caller: add items until
    ``pairs_ahead`` are open with no label yet or ``pairs_budget`` pairs exist, each pair chosen by
    :func:`pairs_choose` from the committed preferences. Returns how many were added; one audit
    row (``project.pairs_add``) names them and how many labels the fit used."""
    pool = _Pool(project)
    created = len(pool.shown)
    budget = project.pairs_budget if project.pairs_budget is not None else pool.size()
    # Items nobody labelled yet: with k > 1 an item one annotator labelled waits for others, and
    # must not keep that annotator from new ones.
    fresh = AnnotationItem.objects.filter(project=project, status=AnnotationItem.Status.OPEN, labels_done=0).count()
    annotators = ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR).count()
    wanted = min(pairs_ahead(annotators=annotators) - fresh, budget - created)
    if wanted <= 0:
        return 0
    comparisons = _comparisons(project, pool)
    rng = random.Random(f"{project.seed}:adaptive:{created}")
    chosen = pairs_choose(comparisons=comparisons, n_systems=len(pool.systems), capacity=pool.capacity(),
                          count=wanted, start=created, uniform_share=project.uniform_share, rng=rng,
                          pending=_pending(project, pool))
    if not chosen:
        return 0
    pairs = []
    for pair in chosen:
        left, right = pool.place(pair, rng)
        leg = 2 if (right, left) in pool.shown else 1
        pairs.append(ReportPair(project=project, task_id=pool.task_of[left], report_left_id=left,
                                report_right_id=right, leg=leg, round=0))
    rng.shuffle(pairs)  # the two sides of a report pair chosen in one round are not labelled back to back by order
    pairs = ReportPair.objects.bulk_create(pairs)
    last = AnnotationItem.objects.filter(project=project).order_by("-position").values_list("position", flat=True)
    start = (last.first() or 0) + 1
    AnnotationItem.objects.bulk_create([
        AnnotationItem(project=project, target_kind=TargetKind.REPORT_PAIR, target_id=pair.pk, task_id=pair.task_id,
                       position=start + offset, labels_needed=project.overlap)
        for offset, pair in enumerate(pairs)
    ])
    audit_record(
        actor=actor, action=AuditAction.PROJECT_PAIRS_ADD, target_kind="annotation_project", target_id=project.pk,
        project=project,
        after={"pairs": [pair.pk for pair in pairs], "labels_used": len(comparisons),
               "uniform": sum(is_uniform_turn(n, project.uniform_share) for n in range(created, created + len(pairs))),
               "pairs_total": created + len(pairs), "pairs_budget": budget},
    )
    return len(pairs)


def adaptive_pairs_refill(*, project_ids: Iterable[int]) -> int:
    """After a commit that recorded preferences: top up each of these projects that is an open,
    adaptive pairwise project (each in its own transaction, its row locked so two commits never
    add the same round twice). Returns how many items were added in all."""
    added = 0
    adaptive = Q(pair_choice=PairChoice.ADAPTIVE, status=AnnotationProject.Status.OPEN)  # pairwise only
    for project_id in sorted(AnnotationProject.objects.filter(adaptive, pk__in=set(project_ids))
                             .values_list("pk", flat=True)):
        with transaction.atomic():
            project = AnnotationProject.objects.select_for_update(no_key=True).filter(adaptive, pk=project_id).first()
            if project is not None:
                added += adaptive_pairs_fill(project=project)
    return added
