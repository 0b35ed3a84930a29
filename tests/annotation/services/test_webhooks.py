"""Outgoing webhooks: signed POSTs to a loopback receiver, retries, inactive hooks, and
deliveries that exist exactly when the change they report committed."""

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import transaction

from annotation.models import AnnotationProject, Webhook, WebhookDelivery
from annotation.services import webhooks
from annotation.services.review import task_curate, task_curate_if_settled
from annotation.services.webhooks import MAX_ATTEMPTS, webhook_deliver, webhooks_fire
from annotation.tasks import deliver_webhook
from benchmark.models import ChecklistItem
from scoring.services.runs import job_execute, run_create, run_finalize, run_start
from tests.annotation_factories import checklist_task
from tests.scoring.services.fakes import ScriptedJudge, judge_config, reports_for, systems, two_group_checklist

pytestmark = pytest.mark.django_db
SECRET = "s3cret"


class Receiver:
    """A stdlib HTTP server on 127.0.0.1 recording every POST; answers with scripted statuses (then 200)."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.requests: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.fixture
def enqueued(monkeypatch):
    """Delivery ids the services enqueue (after commit), instead of a broker."""
    sent = []
    monkeypatch.setattr("annotation.tasks.deliver_webhook.delay", sent.append)
    return sent


def project_with(tasks=(), name="p") -> AnnotationProject:
    project = AnnotationProject.objects.create(name=name, kind="pairwise")
    project.tasks.set(tasks)
    return project


def hook(project, url, *, events=("run.finished", "task.curated"), active=True) -> Webhook:
    return Webhook.objects.create(project=project, url=url, secret=SECRET, events=list(events), active=active)


def test_delivery_is_signed_and_carries_the_payload(receiver, enqueued, django_capture_on_commit_callbacks):
    project = project_with()
    webhook = hook(project, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        [delivery] = webhooks_fire(event="task.curated", project_ids=[project.pk], payload={"task": {"id": 7}})
    assert enqueued == [delivery.pk]

    delivery = webhook_deliver(delivery_id=delivery.pk)
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 1, 200)
    assert delivery.delivered_at is not None and delivery.last_error == ""
    [request] = receiver.requests
    headers = {k.lower(): v for k, v in request["headers"].items()}
    expected = hmac.new(SECRET.encode(), request["body"], hashlib.sha256).hexdigest()
    assert headers["x-studio-signature"] == f"sha256={expected}"
    assert headers["x-studio-event"] == "task.curated"
    assert headers["x-studio-delivery"] == str(delivery.pk)
    assert headers["content-type"] == "application/json"
    body = json.loads(request["body"])
    assert body["event"] == "task.curated" and body["data"] == {"task": {"id": 7}}
    assert body["project"] == {"id": project.pk, "name": project.name}
    assert webhook.deliveries.get() == delivery

    # delivered deliveries are not sent again
    webhook_deliver(delivery_id=delivery.pk)
    assert len(receiver.requests) == 1


def test_a_failure_is_recorded_then_the_retry_succeeds(enqueued, django_capture_on_commit_callbacks):
    with Receiver(500) as server:
        project = project_with()
        hook(project, server.url)
        [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
        delivery = webhook_deliver(delivery_id=delivery.pk)
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("pending", 1, 500)
        assert "HTTP 500" in delivery.last_error
        delivery = webhook_deliver(delivery_id=delivery.pk)
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 2, 200)
        assert len(server.requests) == 2
        assert server.requests[0]["body"] == server.requests[1]["body"]  # same body and delivery id on retry


def test_the_celery_task_retries_with_backoff_and_fails_after_the_last_attempt(monkeypatch):
    monkeypatch.setattr("annotation.tasks.webhook_backoff", lambda attempts: 0)
    with Receiver(*([503] * MAX_ATTEMPTS)) as server:
        project = project_with()
        hook(project, server.url)
        [first] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
        deliver_webhook.apply(args=[first.pk])  # eager: each retry runs at once
        first.refresh_from_db()
        assert (first.status, first.attempts, first.response_code) == ("failed", MAX_ATTEMPTS, 503)
        assert len(server.requests) == MAX_ATTEMPTS

    with Receiver(500) as server:
        hook(project, server.url)
        Webhook.objects.exclude(url=server.url).update(active=False)
        [second] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
        deliver_webhook.apply(args=[second.pk])
        second.refresh_from_db()
        assert (second.status, second.attempts, second.response_code) == ("delivered", 2, 200)


def test_backoff_grows_exponentially_with_jitter():
    delays = [webhooks.webhook_backoff(attempts=n) for n in range(1, MAX_ATTEMPTS)]
    for n, delay in enumerate(delays, start=1):
        base = 30 * 2 ** (n - 1)
        assert base <= delay <= base * 1.5


def test_unreachable_receiver_is_an_error_not_a_crash():
    project = project_with()
    with Receiver() as server:
        url = server.url
    hook(project, url)  # the server is closed: connection refused
    [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
    delivery = webhook_deliver(delivery_id=delivery.pk)
    assert delivery.status == "pending" and delivery.attempts == 1 and delivery.response_code is None
    assert delivery.last_error


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


def test_a_webhook_deactivated_before_delivery_is_not_called(receiver):
    project = project_with()
    webhook = hook(project, receiver.url)
    [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
    webhook.active = False
    webhook.save()
    assert webhook_deliver(delivery_id=delivery.pk).status == "failed"
    assert receiver.requests == []


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
    assert webhook_deliver(delivery_id=delivery.pk).status == "delivered"
    assert json.loads(receiver.requests[0]["body"])["data"]["run"]["id"] == run.pk
