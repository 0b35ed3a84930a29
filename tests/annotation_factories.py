"""Factories and builders for the annotation workspace tests.

Projects are built through ``project_create`` (as the app does), on top of benchmark rows
made with ``tests.factories``.
"""

import uuid

import factory
from django.utils import timezone

from annotation.models import AnnotatorProfile, PairwisePreference, Role
from annotation.services.projects import membership_add, project_create
from benchmark.models import Task
from scoring.models import JudgeConfig, Verdict
from tests.factories import (
    ChecklistGroupFactory,
    ChecklistItemFactory,
    ReportFactory,
    SystemFactory,
    TaskFactory,
    UserFactory,
)


class ProfileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AnnotatorProfile
        django_get_or_create = ("user",)

    user = factory.SubFactory(UserFactory)
    role = Role.ANNOTATOR


class JudgeConfigFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = JudgeConfig
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"judge-{n}")
    backend = JudgeConfig.Backend.OFFLINE


class VerdictFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Verdict

    report = factory.SubFactory(ReportFactory)
    judge_config = factory.SubFactory(JudgeConfigFactory)
    prompt_version = "v1"
    step = "checklist"
    target_kind = "checklist_item"
    target_id = factory.Sequence(lambda n: n + 1)
    label = "correct"
    rationale = "The report states it in section 2."


class PreferenceFactory(factory.django.DjangoModelFactory):
    """An imported preference (what the SurveyLens importer writes)."""

    class Meta:
        model = PairwisePreference

    task = factory.SubFactory(TaskFactory, protocol="surveylens")
    report_left = factory.SubFactory(ReportFactory, task=factory.SelfAttribute("..task"))
    report_right = factory.SubFactory(ReportFactory, task=factory.SelfAttribute("..task"))
    annotator = factory.SubFactory(UserFactory)
    component = "outline"
    choice = PairwisePreference.Choice.LEFT
    labeled_at = factory.LazyFunction(timezone.now)
    source = "surveylens"
    external_id = factory.Sequence(lambda n: f"pref-{n}")


JUDGE_LABELS = ("correct", "omitted", "incorrect")


def curator(username: str = "curator"):
    return ProfileFactory(user=UserFactory(username=username), role=Role.CURATOR).user


def annotator(username: str):
    return ProfileFactory(user=UserFactory(username=username), role=Role.ANNOTATOR).user


def token() -> str:
    return str(uuid.uuid4())


def hold(item, user):
    """``user`` holds a live claim on ``item``, as the loop hands it out (a blind project takes
    labels only on items held: ``annotation.blind.reach_restricted``)."""
    from annotation.models import Assignment

    now = timezone.now()
    return Assignment.objects.create(project_id=item.project_id, item=item, user=user, claimed_at=now,
                                     expires_at=now + timezone.timedelta(hours=1))


def label_all(item, users, *values):
    """Each user labels ``item`` (one value for all, or one per user); returns the refreshed item.
    In a blind project each holds the item first (``hold``), as the workspace's claim does."""
    from annotation.loop.labels import label_submit

    for n, user in enumerate(users):
        if item.project.blind:
            hold(item, user)
        label_submit(item=item, annotator=user, value=values[min(n, len(values) - 1)], client_token=token())
    item.refresh_from_db()
    return item


def members_add(project, owner, users, role=Role.ANNOTATOR) -> None:
    for user in users:
        membership_add(project=project, user=user, role=role, actor=owner)


def checklist_task(n_items: int = 3, **task_fields) -> tuple[Task, list]:
    """A task whose only proposable rows are one accepted group and ``n_items`` proposed items."""
    task = TaskFactory(**task_fields)
    group = ChecklistGroupFactory(task=task, review_status="accepted")
    return task, [ChecklistItemFactory(group=group) for _ in range(n_items)]


def verify_project(owner, users, *, tasks, name: str = "verify", **options):
    project = project_create(
        name=name, kind="verify", created_by=owner, tasks=tasks, item_kinds=["checklist_item"], **options
    )
    members_add(project, owner, users)
    return project


def pairwise_project(owner, users, *, n_tasks: int = 1, n_systems: int = 3, name: str = "pairwise", **options):
    systems = [SystemFactory() for _ in range(n_systems)]
    tasks = []
    for _ in range(n_tasks):
        task = TaskFactory(protocol="surveylens")
        for system in systems:
            ReportFactory(task=task, system=system)
        tasks.append(task)
    project = project_create(name=name, kind="pairwise", created_by=owner, tasks=tasks, **options)
    members_add(project, owner, users)
    return project


def agreement_project(owner, users, *, labels=("correct", "omitted", "correct"), name: str = "agreement", **options):
    judge = JudgeConfigFactory()
    task = TaskFactory()
    report = ReportFactory(task=task)
    for label in labels:
        VerdictFactory(report=report, judge_config=judge, label=label)
    options.setdefault("label_set", {"label": list(JUDGE_LABELS)})
    project = project_create(name=name, kind="agreement", created_by=owner, tasks=[task], judge_config=judge, **options)
    members_add(project, owner, users)
    return project


def deepscholar_agreement_project(owner, users, *, name: str = "judged", **options):
    """A blind agreement project over real DeepScholar verdicts: the hand-built case of
    ``tests.scoring.pipelines.test_deepscholar`` run with its scripted judge, every step."""
    from tests.scoring.pipelines import test_deepscholar as ds

    task, report = ds.make_case()
    config = JudgeConfigFactory()
    ds.run_all(ds.make_run(config), report, ds.StepJudge(config))
    project = project_create(name=name, kind="agreement", created_by=owner, tasks=[task], judge_config=config,
                             **options)
    members_add(project, owner, users)
    return project


def submit_held(*, item, annotator, **kwargs):
    """``label_submit`` as the workspace makes it: in a blind project on an item the annotator
    holds (``hold``, when they hold no live claim there), as ``annotation.loop.labels`` requires."""
    from annotation.loop.labels import label_submit
    from annotation.models import Assignment, Label

    if item.project.blind and not Assignment.objects.filter(
            item_id=item.pk, user=annotator, status__in=(Assignment.Status.ACTIVE, Assignment.Status.EXPIRED)).exists() \
            and not Label.objects.filter(item_id=item.pk, annotator=annotator).exists():
        hold(item, annotator)  # as the loop would have handed it out; one they hold, or held, is theirs already
    return label_submit(item=item, annotator=annotator, **kwargs)
