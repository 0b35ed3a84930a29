"""Which webhooks hear about an event: inactive and unsubscribed hooks, other projects, and
deliveries that exist exactly when the change they report committed. Delivering them is
tested in tests/core/test_webhooks.py."""

import json

import pytest
from django.db import transaction

from annotation.models import AnnotationProject, Webhook, WebhookDelivery
from annotation.loop.settle import task_curate, task_curate_if_settled
from annotation.services.webhooks import webhooks_fire
from benchmark.models import ChecklistItem
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_create, run_start
from tests.annotation_factories import checklist_task
from core.webhooks import webhook_deliver
from tests.scoring.services.fakes import ScriptedJudge, judge_config, reports_for, systems, two_group_checklist
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.django_db
SECRET = "s3cret"


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.fixture
def enqueued(monkeypatch):
    """Delivery ids the services enqueue (after commit), instead of a broker."""
    sent = []

    def delay(model_label: str, delivery_id: int) -> None:
        assert model_label == "annotation.webhookdelivery"
        sent.append(delivery_id)

    monkeypatch.setattr("core.tasks.deliver_webhook.delay", delay)
    return sent


def project_with(tasks=(), name="p") -> AnnotationProject:
    project = AnnotationProject.objects.create(name=name, kind="pairwise")
    project.tasks.set(tasks)
    return project


def hook(project, url, *, events=("run.finished", "task.curated"), active=True) -> Webhook:
    return Webhook.objects.create(project=project, url=url, secret=SECRET, events=list(events), active=active)


def test_no_delivery_for_inactive_or_unsubscribed_webhooks_or_other_projects(receiver, enqueued,
                                                                           django_capture_on_commit_callbacks):
    project, other = project_with(name="p"), project_with(name="other")
    hook(project, receiver.url, active=False)
    hook(project, receiver.url, events=["run.finished"])
    hook(other, receiver.url)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert webhooks_fire(event="task.curated", project_ids=[project.pk], payload={}) == []
    assert callbacks == [] and enqueued == [] and not WebhookDelivery.objects.exists()
    with pytest.raises(ValueError, match="not one of"):
        webhooks_fire(event="task.deleted", project_ids=[project.pk], payload={})


def test_deliveries_are_created_in_the_callers_transaction_and_vanish_with_its_rollback(
    receiver, enqueued, django_capture_on_commit_callbacks
):
    project = project_with()
    hook(project, receiver.url)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(RuntimeError, match="the change is rolled back"), transaction.atomic():
            [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
            assert WebhookDelivery.objects.filter(pk=delivery.pk).exists()
            assert enqueued == []  # nothing is sent before the commit
            raise RuntimeError("the change is rolled back")
    assert callbacks == [] and enqueued == []
    assert not WebhookDelivery.objects.exists()

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
    assert enqueued == [delivery.pk]


def test_task_curate_fires_task_curated_for_projects_holding_the_task(
    owner, receiver, enqueued, django_capture_on_commit_callbacks
):
    task, items = checklist_task(1)
    other_task, _ = checklist_task(1)
    holding, unrelated = project_with([task], name="holding"), project_with([other_task], name="unrelated")
    hook(holding, receiver.url)
    hook(unrelated, receiver.url)
    ChecklistItem.objects.filter(pk__in=[i.pk for i in items]).update(review_status="accepted")
    with django_capture_on_commit_callbacks(execute=True):
        task_curate(task=task, actor=owner)
    [delivery] = WebhookDelivery.objects.all()
    assert enqueued == [delivery.pk] and delivery.webhook.project == holding
    assert delivery.payload["data"]["task"] == {"id": task.pk, "key": task.key, "status": "curated"}
    assert delivery.payload["data"]["actor"] == owner.username
    with django_capture_on_commit_callbacks(execute=True):
        task_curate(task=task, actor=owner)  # already curated: no second event
    assert WebhookDelivery.objects.count() == 1


def test_automatic_curation_when_the_last_item_settles_fires_task_curated_too(
    owner, receiver, enqueued, django_capture_on_commit_callbacks
):
    task, items = checklist_task(2)
    holding = project_with([task], name="holding")
    hook(holding, receiver.url)
    ChecklistItem.objects.filter(pk=items[0].pk).update(review_status="accepted")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert task_curate_if_settled(task_id=task.pk, actor=owner) is False
    assert WebhookDelivery.objects.count() == 0
    ChecklistItem.objects.filter(pk=items[1].pk).update(review_status="rejected")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert task_curate_if_settled(task_id=task.pk, actor=owner) is True
    [delivery] = WebhookDelivery.objects.all()
    assert enqueued == [delivery.pk] and delivery.payload["data"]["task"]["status"] == "curated"


def test_run_finalize_fires_run_finished_for_projects_overlapping_the_run(
    receiver, enqueued, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr("scoring.tasks.finalize_run.delay", lambda run_id: None)
    checklist, elsewhere = two_group_checklist(), two_group_checklist()
    a, b = systems(2)
    reports_for(checklist.task, [a, b])
    config = judge_config()
    overlapping = project_with([checklist.task, elsewhere.task], name="overlapping")
    unrelated = project_with([elsewhere.task], name="unrelated")
    hook(overlapping, receiver.url)
    hook(unrelated, receiver.url)
    run = run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=[a, b],
                                   tasks=[checklist.task]), enqueue=False)
    judge = ScriptedJudge(config)
    for job_id in run.jobs.values_list("pk", flat=True):
        job_execute(job_id=job_id, judge=judge)
    assert not WebhookDelivery.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        run = run_finalize(run=run)
    assert run.status == "finished"
    [delivery] = WebhookDelivery.objects.all()
    assert enqueued == [delivery.pk] and delivery.webhook.project == overlapping
    assert delivery.event == "run.finished"
    assert delivery.payload["data"]["run"]["id"] == run.pk
    assert delivery.payload["data"]["run"]["status"] == "finished"
    assert webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk).status == "delivered"
    assert json.loads(receiver.requests[0]["body"])["data"]["run"]["id"] == run.pk


def test_a_delivery_message_queued_under_the_old_task_name_is_handed_to_core(enqueued):
    from annotation.tasks import deliver_webhook_queued_before_core

    deliver_webhook_queued_before_core.apply(args=[41])
    assert enqueued == [41]
