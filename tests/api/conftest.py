"""A small world for the API tests: two projects, one user of every kind, one of every row."""

from dataclasses import dataclass

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import AnnotationItem, Assignment, Role
from annotation.services.projects import membership_add
from benchmark.models import ConstraintQuestion, TaskSet
from scoring.models import EvaluationRun, ScoreCard
from tests.annotation_factories import (
    ProfileFactory,
    agreement_project,
    annotator,
    checklist_task,
    curator,
    verify_project,
)
from tests.factories import (
    BibEntryFactory,
    GoldReferenceFactory,
    NuggetFactory,
    RubricCriterionFactory,
    SurveyFactory,
    TaskPromptFactory,
    UserFactory,
)

USER_KINDS = ("anon", "ann_a", "ann_b", "viewer", "curator", "admin")


@dataclass
class World:
    users: dict
    project_a: object
    project_b: object
    item_a: object
    item_b: object
    assignment_a: object
    task: object
    report: object
    verdict: object
    task_set: object
    run_finished: object
    run_pending: object
    objs: dict


@pytest.fixture
def world(db) -> World:
    owner = curator("curator")
    admin = UserFactory(username="admin", is_superuser=True, is_staff=True)
    ann_a, ann_b = annotator("ann_a"), annotator("ann_b")
    viewer = ProfileFactory(user=UserFactory(username="viewer"), role=Role.VIEWER).user
    project_a = agreement_project(owner, [ann_a], name="Project A", overlap=2)
    membership_add(project=project_a, user=viewer, role=Role.VIEWER, actor=owner)
    task_b, _ = checklist_task(2)
    project_b = verify_project(owner, [ann_b], tasks=[task_b], name="Project B")
    item_a = AnnotationItem.objects.filter(project=project_a).order_by("position").first()
    item_b = AnnotationItem.objects.filter(project=project_b).order_by("position").first()
    now = timezone.now()
    assignment_a = Assignment.objects.create(
        project=project_a, item=AnnotationItem.objects.filter(project=project_a).order_by("position").last(),
        user=ann_a, claimed_at=now, expires_at=now + project_a.hold_duration,
    )
    verdict = project_a.judge_config.verdicts.first()
    report = verdict.report
    task = report.task
    task_set = TaskSet.objects.create(name="pilot")
    task_set.tasks.set([task])
    run_finished = EvaluationRun.objects.create(
        protocol=task.protocol, judge_config=project_a.judge_config, status=EvaluationRun.Status.FINISHED
    )
    run_finished.systems.set([report.system])
    ScoreCard.objects.create(run=run_finished, system=report.system, metrics={"score": 0.5})
    run_pending = EvaluationRun.objects.create(protocol=task.protocol, judge_config=project_a.judge_config)
    prompt = TaskPromptFactory(task=task)
    objs = {
        "survey": SurveyFactory(), "bibentry": BibEntryFactory(), "prompt": prompt,
        "constraint-question": ConstraintQuestion.objects.create(task=task, text="Which methods?"),
        "checklist-group": task_b.checklist_groups.first(),
        "checklist-item": task_b.checklist_groups.first().items.first(),
        "gold-reference": GoldReferenceFactory(task=task), "nugget": NuggetFactory(task=task),
        "rubric-criterion": RubricCriterionFactory(),
    }
    users = {"anon": None, "ann_a": ann_a, "ann_b": ann_b, "viewer": viewer, "curator": owner, "admin": admin}
    return World(users, project_a, project_b, item_a, item_b, assignment_a, task, report, verdict, task_set,
                 run_finished, run_pending, objs)


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client
