"""Adaptive pairwise assignment (``annotation.services.adaptive_pairs``): the choice, the sides,
the budget, the hook after each commit, and the blind rule."""

import random
import uuid
from collections import Counter

import numpy as np
import pytest
from django.urls import reverse

from annotation.loop.claims import claim_next_item
from annotation.models import AnnotationItem, AnnotationProject, Label, ReportPair
from annotation.services.adaptive_pairs import AHEAD_MIN, is_uniform_turn, pairs_ahead, pairs_choose
from annotation.loop.labels import label_submit
from annotation.services.projects import project_create
from core.models import AuditLog
from scoring.metrics.preference_design import bradley_terry_laplace
from tests.annotation_factories import annotator, curator, pairwise_project, token
from tests.api.conftest import client_for
from tests.api.test_blind_handles import _item_answers, _leaks, blind_project
from tests.factories import ReportFactory, SystemFactory, TaskFactory

ADAPTIVE = AnnotationProject.PairChoice.ADAPTIVE


def _label_until_done(project, user, capture, choose=lambda pair: "left") -> int:
    """``user`` claims and labels until nothing is offered; each label commits (its on-commit
    refill runs). Returns how many labels they gave."""
    given = 0
    while True:
        claim = claim_next_item(project=project, user=user)
        if claim is None:
            return given
        pair = ReportPair.objects.get(pk=claim.item.target_id)
        with capture(execute=True):
            label_submit(item=claim.item, annotator=user, value={"choice": choose(pair)}, client_token=token())
        given += 1
        assert given <= 500


def _sides(project) -> tuple[Counter, Counter]:
    """(system pair, system on the left) → times; unordered report pair → orientations shown."""
    left, shown = Counter(), Counter()
    for pair in ReportPair.objects.filter(project=project).select_related("report_left", "report_right"):
        systems = frozenset((pair.report_left.system_id, pair.report_right.system_id))
        left[(systems, pair.report_left.system_id)] += 1
        shown[frozenset((pair.report_left_id, pair.report_right_id))] += 1
    return left, shown


# --- the choice (pure) -------------------------------------------------------------------------


@pytest.mark.parametrize(("share", "first"), [(0.0, 0), (0.25, 25), (1 / 3, 33), (0.5, 50), (1.0, 100)])
def test_the_uniform_turns_are_the_stated_share_spread_evenly(share, first):
    turns = [m for m in range(100) if is_uniform_turn(m, share)]
    assert len(turns) == first
    if 0 < share < 1:
        assert max(np.diff(turns)) <= int(np.ceil(1 / share))


def test_each_informed_choice_is_the_open_neighbour_that_most_narrows_the_doubtful_orders():
    """Each informed pick is the pair adjacent in the ranking by θ̂, open, whose comparison most
    lowers D = Σ_{k<l} Φ(−|d̂_kl|/√v_kl)² · v'_kl / v_kl (computed here with SciPy, the
    covariance after the comparison by inverting the Hessian that gained the pair's Fisher weight);
    a pending pair counts as asked before the choice."""
    from scipy.special import expit
    from scipy.stats import norm

    comparisons = [(0, 1, 1), (1, 0, 1), (0, 1, 1), (1, 2, 1), (2, 3, 0), (3, 2, 0), (0, 3, 1), (1, 2, 0.5)]
    fit = bradley_terry_laplace(np.asarray(comparisons, dtype=float), n_items=4)
    theta = fit["theta"]
    order = list(np.argsort(-theta))
    adjacent = [tuple(sorted((int(a), int(b)))) for a, b in zip(order, order[1:])]
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]

    def asked(cov, a, b):
        x = np.zeros(4)
        x[a], x[b] = 1, -1
        p = expit(theta[a] - theta[b])
        return np.linalg.inv(np.linalg.inv(cov) + p * (1 - p) * np.outer(x, x))

    def variance(cov, a, b):
        return cov[a, a] + cov[b, b] - 2 * cov[a, b]

    def drops(cov):
        weight = {(a, b): norm.sf(abs(theta[a] - theta[b]) / np.sqrt(variance(cov, a, b))) ** 2
                  / variance(cov, a, b) for a, b in pairs}
        return {pair: sum(w * (variance(cov, a, b) - variance(asked(cov, *pair), a, b))
                          for (a, b), w in weight.items()) for pair in adjacent}

    every = {pair: 5 for pair in pairs}
    without = {**every, adjacent[-1]: 0}  # the least certain neighbour pair used up
    best_of = []
    for pending, capacity in [((), every), ((), without), ((adjacent[1],), without)]:
        cov = fit["covariance"]
        for pair in pending:
            cov = asked(cov, *pair)
        found = drops(cov)
        best = max((pair for pair in adjacent if capacity[pair] > 0), key=found.get)
        assert len(set(found.values())) == len(found)  # no tie: one right answer
        chosen = {pairs_choose(comparisons=comparisons, n_systems=4, capacity=capacity, count=1, start=0,
                               uniform_share=0.0, rng=random.Random(seed), pending=pending)[0] for seed in range(20)}
        assert chosen == {best}, (pending, capacity, found)
        best_of.append(best)
    assert len(set(best_of)) == 3  # the capacity and the pending pair each changed the answer
    capacity = {(0, 1): 5, (0, 2): 5, (0, 3): 0, (1, 2): 5, (1, 3): 5, (2, 3): 1}
    chosen = pairs_choose(comparisons=comparisons, n_systems=4, capacity=capacity, count=8, start=0,
                          uniform_share=0.0, rng=random.Random(1))
    assert (0, 3) not in chosen and chosen.count((2, 3)) <= 1  # no pair past its capacity


def test_a_uniform_turn_draws_among_open_pairs_and_the_capacity_bounds_the_round():
    capacity = {(0, 1): 1, (1, 2): 2}
    chosen = pairs_choose(comparisons=[], n_systems=3, capacity=capacity, count=10, start=0, uniform_share=1.0,
                          rng=random.Random(0))
    assert sorted(chosen) == [(0, 1), (1, 2), (1, 2)]


# --- projects ----------------------------------------------------------------------------------


def test_round_robin_stays_the_default(db):
    owner = curator()
    project = pairwise_project(owner, [annotator("ann")], n_systems=3)
    assert project.pair_choice == AnnotationProject.PairChoice.ROUND_ROBIN
    assert AnnotationItem.objects.filter(project=project).count() == 6  # 3 pairs × 2 sides


def test_an_adaptive_project_starts_with_a_few_pairs_ahead(db):
    owner = curator()
    project = pairwise_project(owner, [], n_tasks=2, n_systems=4, pair_choice=ADAPTIVE)
    assert AnnotationItem.objects.filter(project=project).count() == AHEAD_MIN == pairs_ahead(annotators=0)
    created = AuditLog.objects.get(action="project.create", object_id=project.pk)
    assert created.after["items"] == AHEAD_MIN and created.after["pair_choice"] == ADAPTIVE
    assert AuditLog.objects.get(action="project.pairs_add").after["labels_used"] == 0


def test_an_adaptive_project_keeps_offering_items_until_its_budget(db, django_capture_on_commit_callbacks):
    owner, ann = curator(), annotator("ann")
    project = pairwise_project(owner, [ann], n_tasks=3, n_systems=4, pair_choice=ADAPTIVE, pairs_budget=17)
    given = _label_until_done(project, ann, django_capture_on_commit_callbacks)
    assert given == 17
    assert ReportPair.objects.filter(project=project).count() == 17
    assert set(AnnotationItem.objects.filter(project=project).values_list("status", flat=True)) == {"complete"}
    rounds = AuditLog.objects.filter(action="project.pairs_add").order_by("pk")
    assert rounds.last().after["pairs_total"] == 17
    # Each round was chosen from the labels committed before it, never more.
    assert [row.after["labels_used"] for row in rounds][:3] == [0, 1, 2]


def test_the_whole_pool_shows_every_report_pair_once_each_way(db, django_capture_on_commit_callbacks):
    owner, ann = curator(), annotator("ann")
    project = pairwise_project(owner, [ann], n_tasks=2, n_systems=3, pair_choice=ADAPTIVE)
    assert _label_until_done(project, ann, django_capture_on_commit_callbacks) == 12  # 2 tasks × 3 pairs × 2 sides
    left, shown = _sides(project)
    assert set(shown.values()) == {2} and len(shown) == 6
    assert set(left.values()) == {2}


def test_sides_stay_balanced_under_a_budget(db, django_capture_on_commit_callbacks):
    owner, ann = curator(), annotator("ann")
    project = pairwise_project(owner, [ann], n_tasks=5, n_systems=3, pair_choice=ADAPTIVE, pairs_budget=21,
                               uniform_share=0.2)
    _label_until_done(project, ann, django_capture_on_commit_callbacks,
                      choose=lambda pair: "left" if pair.report_left.system_id < pair.report_right.system_id else "right")
    left, shown = _sides(project)
    by_pair: dict[frozenset, list[int]] = {}
    for (systems, _), times in left.items():
        by_pair.setdefault(systems, []).append(times)
    for systems, times in by_pair.items():
        times += [0] * (2 - len(times))
        assert abs(times[0] - times[1]) <= 1, systems
    # at most one report pair per system pair waits for its other side
    half = Counter(frozenset(ReportFactory._meta.model.objects.filter(pk__in=pair).values_list("system", flat=True))
                   for pair, n in shown.items() if n == 1)
    assert all(n <= 1 for n in half.values())


def test_a_closed_or_paused_adaptive_project_adds_nothing(db, django_capture_on_commit_callbacks):
    from annotation.services.adaptive_pairs import adaptive_pairs_refill

    owner = curator()
    project = pairwise_project(owner, [annotator("ann")], n_systems=4, pair_choice=ADAPTIVE)
    AnnotationProject.objects.filter(pk=project.pk).update(status="paused")
    AnnotationItem.objects.filter(project=project).update(status="complete")
    assert adaptive_pairs_refill(project_ids=[project.pk]) == 0
    AnnotationProject.objects.filter(pk=project.pk).update(status="open")
    assert adaptive_pairs_refill(project_ids=[project.pk]) == pairs_ahead(annotators=1)


@pytest.mark.parametrize(("options", "field"), [
    ({"pairs_budget": 1000}, "pairs_budget"),
    ({"pairs_budget": 0}, "pairs_budget"),
    ({"uniform_share": 1.5}, "uniform_share"),
    ({"pair_choice": "greedy"}, "pair_choice"),
])
def test_bad_adaptive_settings_name_their_field(db, options, field):
    owner = curator()
    task = TaskFactory(protocol="surveylens")
    for system in [SystemFactory(), SystemFactory()]:
        ReportFactory(task=task, system=system)
    with pytest.raises(ValueError, match=f"^{field}: "):
        project_create(name="p", kind="pairwise", created_by=owner, tasks=[task],
                       **{"pair_choice": ADAPTIVE, **options})
    assert not AnnotationProject.objects.exists()


def test_only_pairwise_projects_choose_pairs_and_round_robin_has_no_budget(db):
    owner = curator()
    task = TaskFactory(protocol="surveylens")
    ReportFactory(task=task)
    ReportFactory(task=task)
    with pytest.raises(ValueError, match="^pair_choice: only pairwise"):
        project_create(name="v", kind="verify", created_by=owner, tasks=[task], pair_choice=ADAPTIVE)
    with pytest.raises(ValueError, match="^pairs_budget: only an adaptive"):
        project_create(name="p", kind="pairwise", created_by=owner, tasks=[task], pairs_budget=3)


def test_the_api_creates_an_adaptive_project(db):
    owner = curator()
    task = TaskFactory(protocol="surveylens")
    for _ in range(3):
        ReportFactory(task=task)
    answer = client_for(owner).post(reverse("api:project-list"), {
        "name": "adaptive", "kind": "pairwise", "tasks": [task.pk], "pair_choice": "adaptive",
        "uniform_share": 0.5, "pairs_budget": 5}, format="json")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["pair_choice"], body["uniform_share"], body["pairs_budget"]) == ("adaptive", 0.5, 5)
    assert body["n_items"] == AHEAD_MIN
    refused = client_for(owner).post(reverse("api:project-list"), {
        "name": "too many", "kind": "pairwise", "tasks": [task.pk], "pair_choice": "adaptive", "pairs_budget": 7},
        format="json")
    assert refused.status_code == 400 and "pairs_budget" in refused.content.decode()


# --- blind -------------------------------------------------------------------------------------


def test_adaptive_items_name_no_report_or_system_before_the_study_closes(db, django_capture_on_commit_callbacks):
    owner, ann, other = curator("owner"), annotator("ann"), annotator("other")
    project = blind_project("pairwise", owner, [ann, other], pair_choice=ADAPTIVE)
    api = client_for(ann)
    seen = 0
    for _ in range(4):  # items chosen at creation, then chosen from the committed labels
        claimed = api.post(reverse("api:project-next", kwargs={"pk": project.pk}))
        assert claimed.status_code == 200
        if claimed.json()["item"] is None:
            break
        item = AnnotationItem.objects.get(pk=claimed.json()["item"]["item"]["id"])
        assert _leaks({"api next": claimed.content.decode(), **_item_answers(ann, project, item)}) == {}
        with django_capture_on_commit_callbacks(execute=True):
            given = api.post(reverse("api:label-list"), {"item": item.pk, "value": {"choice": "left"}, "next": True,
                                                         "client_token": str(uuid.uuid4())}, format="json")
        assert given.status_code == 201, given.content
        assert _leaks({"api label + next": given.content.decode()}) == {}
        seen += 1
    assert seen == 4
    assert AuditLog.objects.filter(action="project.pairs_add").count() > 1  # later items came from the refill
    assert Label.objects.filter(item__project=project).count() == 4


@pytest.mark.parametrize(("pair_choice", "callbacks"), [("round_robin", 0), ("adaptive", 1)])
def test_only_an_adaptive_projects_label_schedules_a_refill(db, django_capture_on_commit_callbacks, pair_choice,
                                                           callbacks):
    owner, ann = curator(), annotator("ann")
    project = pairwise_project(owner, [ann], n_systems=3, pair_choice=pair_choice)
    claim = claim_next_item(project=project, user=ann)
    with django_capture_on_commit_callbacks() as scheduled:
        label_submit(item=claim.item, annotator=ann, value={"choice": "tie"}, client_token=token())
    assert len(scheduled) == callbacks


def test_with_two_labels_per_item_each_annotator_is_offered_every_pair_up_to_the_budget(
        db, django_capture_on_commit_callbacks):
    owner, ann, other = curator(), annotator("ann"), annotator("other")
    project = pairwise_project(owner, [ann, other], n_tasks=2, n_systems=4, pair_choice=ADAPTIVE, pairs_budget=9,
                               overlap=2)
    assert _label_until_done(project, ann, django_capture_on_commit_callbacks) == 9
    assert _label_until_done(project, other, django_capture_on_commit_callbacks) == 9
    assert ReportPair.objects.filter(project=project).count() == 9
    assert set(AnnotationItem.objects.filter(project=project).values_list("labels_done", flat=True)) == {2}


def test_nothing_left_to_compare_chooses_nothing():
    assert pairs_choose(comparisons=[], n_systems=0, capacity={}, count=3, start=0, uniform_share=0.25,
                        rng=random.Random(0)) == []
    assert pairs_choose(comparisons=[], n_systems=2, capacity={(0, 1): 0}, count=3, start=0, uniform_share=0.25,
                        rng=random.Random(0)) == []


def test_the_progress_page_and_the_human_ranking_show_the_budget_and_the_unbalanced_design(
        db, client, django_capture_on_commit_callbacks):
    from annotation.dashboards.human import Scope, human_ranking

    owner, ann = curator(), annotator("ann")
    project = pairwise_project(owner, [ann], n_tasks=2, n_systems=4, pair_choice=ADAPTIVE, pairs_budget=9)
    for _ in range(3):
        claim = claim_next_item(project=project, user=ann)
        with django_capture_on_commit_callbacks(execute=True):
            label_submit(item=claim.item, annotator=ann, value={"choice": "left"}, client_token=token())
    created = ReportPair.objects.filter(project=project).count()
    client.force_login(ann)
    page = client.get(reverse("annotation:progress", args=[project.pk])).content.decode()
    assert 'id="adaptive-design"' in page and f"{created} / 9" in page and "unbalanced" in page
    design = human_ranking(scope=Scope(project=project.pk), n_resamples=20)["design"]
    assert design["pairs_budget"] == 9 and design["pairs_created"] == created and design["balanced"] is False
    other = pairwise_project(owner, [ann], n_systems=3, name="round-robin")
    assert human_ranking(scope=Scope(project=other.pk), n_resamples=20)["design"] is None
