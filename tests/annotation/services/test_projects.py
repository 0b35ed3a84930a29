from collections import Counter
from datetime import timedelta
from itertools import combinations

import pytest

from core.models import AuditLog

from annotation.models import AnnotationItem, Label, ProjectMembership
from annotation.selectors.workspace import adjudication_queue
from annotation.services.preference_projects import project_from_preferences
from annotation.services.projects import membership_remove, project_create, project_populate, project_update
from annotation.services.schedule import double_round_robin, round_robin_rounds
from benchmark.models import TaskSet
from tests.annotation_factories import (
    JudgeConfigFactory,
    PreferenceFactory,
    VerdictFactory,
    checklist_task,
    pairwise_project,
    verify_project,
)
from tests.factories import (
    NuggetFactory,
    ReportFactory,
    RubricCriterionFactory,
    SurveyFactory,
    TaskFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


# --- Schedules (pure) -----------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_round_robin_rounds_meet_every_pair_once_and_nobody_twice_per_round(n):
    rounds = round_robin_rounds(list(range(n)))
    pairs = [frozenset(match) for matches in rounds for match in matches]
    assert sorted(map(sorted, pairs)) == sorted(map(list, combinations(range(n), 2)))
    for matches in rounds:
        players = [p for match in matches for p in match]
        assert len(players) == len(set(players))


def test_double_round_robin_swaps_positions_in_the_second_leg():
    schedule = double_round_robin(["a", "b", "c", "d"], seed=7)
    ordered = [(left, right) for _, _, left, right in schedule]
    assert len(ordered) == 12 and len(set(ordered)) == 12
    assert {(r, l) for l, r in ordered} == set(ordered)
    first = [(left, right) for leg, _, left, right in schedule if leg == 1]
    second = [(left, right) for leg, _, left, right in schedule if leg == 2]
    assert second == [(right, left) for left, right in first]
    assert double_round_robin(["a", "b", "c", "d"], seed=7) == schedule
    lefts = Counter(left for left, _ in first)
    assert len(lefts) > 1  # sides are randomized, not "first entrant always left"


# --- Creation -------------------------------------------------------------------------------


def test_only_curators_create_projects(alice):
    task, _ = checklist_task(1)
    with pytest.raises(PermissionError, match="only curators create annotation projects"):
        project_create(name="x", kind="verify", created_by=alice, tasks=[task])


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"kind": "verify", "overlap": 1}, "overlap"),
        ({"kind": "nonsense"}, "kind"),
        ({"kind": "verify", "item_kinds": ["essay"]}, "item_kinds"),
        ({"kind": "agreement"}, "judge_config"),
        ({"kind": "pairwise", "label_set": {"choice": ["left", "maybe"]}}, "label_set.choice"),
        ({"kind": "verify", "tasks": []}, "tasks"),
    ],
)
def test_project_settings_are_validated(owner, options, field):
    task, _ = checklist_task(1)
    with pytest.raises(ValueError, match=field):
        project_create(name="x", created_by=owner, **{"tasks": [task], **options})


def test_verify_project_has_one_item_per_proposed_row_with_its_version(owner, alice):
    task, checklist_items = checklist_task(3)
    NuggetFactory(task=task)  # not a chosen kind
    settled = checklist_items[0]
    settled.review_status = "accepted"
    settled.save()
    project = verify_project(owner, [alice], tasks=[task])
    items = list(project.items.order_by("position"))
    assert [(i.target_kind, i.target_id, i.target_version, i.labels_needed, i.task_id) for i in items] == [
        ("checklist_item", c.pk, 1, 2, task.pk) for c in checklist_items[1:]
    ]
    assert [i.position for i in items] == [1, 2]
    assert ProjectMembership.objects.get(project=project, user=owner).role == "curator"
    assert AuditLog.objects.get(action="project.create").after["items"] == 2


def test_verify_project_from_a_task_set_includes_discipline_criteria(owner):
    survey = SurveyFactory()
    criterion = RubricCriterionFactory(discipline__code="BIO")
    survey.discipline = criterion.discipline
    survey.save()
    task = TaskFactory(survey=survey)
    task_set = TaskSet.objects.create(name="set")
    task_set.tasks.add(task)
    project = project_create(
        name="rubrics", kind="verify", created_by=owner, task_set=task_set, item_kinds=["rubric_criterion"]
    )
    item = project.items.get()
    assert (item.target_id, item.task_id) == (criterion.pk, None)


def test_pairwise_project_stores_a_double_round_robin_per_task(owner, alice):
    project = pairwise_project(owner, [alice], n_tasks=2, n_systems=3)
    pairs = list(project.pairs.all())
    assert len(pairs) == 2 * 6 and project.items.count() == 12
    for task_id in {pair.task_id for pair in pairs}:
        ordered = {(p.report_left_id, p.report_right_id) for p in pairs if p.task_id == task_id}
        assert len(ordered) == 6 and {(r, l) for l, r in ordered} == ordered
    legs = [project.pairs.get(pk=item.target_id).leg for item in project.items.order_by("position")]
    assert legs == sorted(legs)  # every first leg before any second leg
    assert project.label_set == {"choice": ["left", "right", "tie"]}
    assert project.dimensions == ["organization", "coverage", "synthesis", "citations"]


def test_populate_adds_only_new_targets(owner, alice):
    project = pairwise_project(owner, [alice], n_systems=2)
    assert project.items.count() == 2
    task = project.tasks.get()
    ReportFactory(task=task)
    assert project_populate(project=project, actor=owner) == 4  # 3 systems: 6 ordered pairs
    assert project_populate(project=project, actor=owner) == 0
    assert project.items.count() == 6 and project.pairs.count() == 6
    with pytest.raises(PermissionError, match="only curators populate projects"):
        project_populate(project=project, actor=alice)


def test_agreement_project_labels_verdicts_of_the_chosen_steps(owner):
    judge = JudgeConfigFactory()
    task = TaskFactory()
    report = ReportFactory(task=task)
    kept = [VerdictFactory(report=report, judge_config=judge, label=label) for label in ("correct", "omitted")]
    VerdictFactory(report=report, judge_config=judge, step="nuggets", label="vital")
    VerdictFactory(report=report, judge_config=judge, label="")  # a failed call
    VerdictFactory(report=report, judge_config=judge, label="correct", repeat=1)
    VerdictFactory(report=report, label="correct")  # another judge
    project = project_create(
        name="agree", kind="agreement", created_by=owner, tasks=[task], judge_config=judge, steps=["checklist"]
    )
    assert sorted(project.items.values_list("target_id", flat=True)) == sorted(v.pk for v in kept)
    assert project.label_set == {"label": ["correct", "omitted"]}


def test_agreement_label_set_must_offer_a_choice(owner):
    judge = JudgeConfigFactory()
    report = ReportFactory()
    VerdictFactory(report=report, judge_config=judge, label="correct")
    with pytest.raises(ValueError, match="only correct"):
        project_create(name="agree", kind="agreement", created_by=owner, tasks=[report.task], judge_config=judge)


def test_removing_a_member_releases_their_claims(owner, alice):
    from annotation.loop.claims import claim_next_item

    project = pairwise_project(owner, [alice])
    claim = claim_next_item(project=project, user=alice)
    membership_remove(project=project, user=alice, actor=owner)
    claim.refresh_from_db()
    assert claim.status == "released"
    with pytest.raises(PermissionError, match=r"alice may not label items of project 'pairwise' \(role: not a member\)"):
        claim_next_item(project=project, user=alice)


# --- Editing ---------------------------------------------------------------------------------


def test_project_update_changes_the_given_fields_with_one_audit_row(owner, alice):
    task, _ = checklist_task(2)
    project = verify_project(owner, [alice], tasks=[task], name="Before")
    project_update(project=project, actor=owner, name="  After  ", hold_duration=timedelta(minutes=5),
                   status="closed", description=project.description)
    project.refresh_from_db()
    assert (project.name, project.hold_duration, project.status) == ("After", timedelta(minutes=5), "closed")
    event = AuditLog.objects.get(action="project.update")
    assert event.before == {"name": "Before", "hold_duration": 900.0, "status": "open"}
    assert event.after == {"name": "After", "hold_duration": 300.0, "status": "closed"}
    project_update(project=project, actor=owner, name="After")  # no change, no audit row
    assert AuditLog.objects.filter(action="project.update").count() == 1


def test_project_update_refuses_annotators_and_bad_values_and_stores_nothing(owner, alice):
    task, _ = checklist_task(2)
    project = verify_project(owner, [alice], tasks=[task], name="Kept")
    verify_project(owner, [], tasks=[task], name="Taken")
    with pytest.raises(PermissionError, match="only curators edit projects"):
        project_update(project=project, actor=alice, name="Mine")
    with pytest.raises(ValueError, match="name: a project called 'Taken' already exists"):
        project_update(project=project, actor=owner, name="Taken", status="closed")
    with pytest.raises(ValueError, match="hold_duration: must be positive"):
        project_update(project=project, actor=owner, hold_duration=timedelta(0))
    with pytest.raises(ValueError, match="status: 'archived' is not one of"):
        project_update(project=project, actor=owner, status="archived")
    project.refresh_from_db()
    assert (project.name, project.status) == ("Kept", "open")
    assert not AuditLog.objects.filter(action="project.update").exists()


# --- SurveyLens human preferences -----------------------------------------------------------


def test_project_from_preferences_mirrors_imported_preferences(owner):
    first, second, third = (UserFactory(username=f"Annotator_0{n}") for n in (1, 2, 3))
    pref = PreferenceFactory(annotator=first, choice="left")
    task, a, b = pref.task, pref.report_left, pref.report_right
    # Another annotator saw the same pair the other way round and agreed (b is on the left now).
    PreferenceFactory(task=task, report_left=b, report_right=a, annotator=second, choice="right")
    c = ReportFactory(task=task)
    PreferenceFactory(task=task, report_left=a, report_right=c, annotator=first, choice="left")
    PreferenceFactory(task=task, report_left=a, report_right=c, annotator=second, choice="right")
    PreferenceFactory(task=task, report_left=c, report_right=b, annotator=third, choice="tie")
    PreferenceFactory(task=task, report_left=b, report_right=c, annotator=third, choice="left")  # same pair again
    PreferenceFactory(task=task, report_left=a, report_right=b, annotator=first, source="other")

    project = project_from_preferences(name="SurveyLens human", curator=owner)
    assert (project.kind, project.status, project.overlap, project.component) == ("pairwise", "closed", 2, "outline")
    pairs = {pair.pk: frozenset((pair.report_left_id, pair.report_right_id)) for pair in project.pairs.all()}
    items = {pairs[item.target_id]: item for item in project.items.all()}
    ab, ac, bc = items[frozenset((a.pk, b.pk))], items[frozenset((a.pk, c.pk))], items[frozenset((b.pk, c.pk))]
    assert (ab.status, ab.labels_done, ab.disagreement) == ("complete", 2, False)
    assert (ac.status, ac.labels_done, ac.disagreement) == ("complete", 2, True)
    assert (bc.status, bc.labels_done) == ("open", 1)
    shown = Label.objects.get(item=ab, annotator=second).value
    assert (shown["left_report_id"], shown["right_report_id"], shown["choice"]) == (b.pk, a.pk, "right")
    assert Label.objects.filter(project=project).count() == 5
    assert [row["item_id"] for row in adjudication_queue(project=project)] == [ac.pk]
    assert set(project.memberships.values_list("user__username", "role")) == {
        ("curator", "curator"),
        ("Annotator_01", "annotator"),
        ("Annotator_02", "annotator"),
        ("Annotator_03", "annotator"),
    }
    assert AuditLog.objects.get(action="project.import_preferences").after["duplicates_skipped"] == 1
    assert AnnotationItem.objects.filter(project=project).count() == 3


def test_project_from_preferences_needs_preferences(owner):
    with pytest.raises(ValueError, match="no imported preferences"):
        project_from_preferences(name="empty", curator=owner)
