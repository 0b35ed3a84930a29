"""Delivering outgoing webhooks: signed POSTs to a loopback receiver, retries with backoff, a
receiver that is unreachable or a subscription deactivated meanwhile. The deliveries are
annotation's (a project's webhooks), the only app that subscribes receivers."""

import hashlib
import hmac
import json

import pytest

from annotation.models import Webhook, WebhookDelivery
from annotation.services.webhooks import webhooks_fire
from core.tasks import deliver_webhook
from core.webhooks import MAX_ATTEMPTS, webhook_backoff, webhook_deliver
from tests.annotation.services.test_webhooks import SECRET, enqueued, hook, project_with, receiver  # noqa: F401 (fixtures)
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.django_db
LABEL = "annotation.webhookdelivery"


def test_delivery_is_signed_and_carries_the_payload(receiver, enqueued, django_capture_on_commit_callbacks):
    project = project_with()
    webhook = hook(project, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        [delivery] = webhooks_fire(event="task.curated", project_ids=[project.pk], payload={"task": {"id": 7}})
    assert enqueued == [delivery.pk]

    delivery = webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk)
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
    webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk)
    assert len(receiver.requests) == 1


def test_a_failure_is_recorded_then_the_retry_succeeds(enqueued, django_capture_on_commit_callbacks):
    with Receiver(500) as server:
        project = project_with()
        hook(project, server.url)
        [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
        delivery = webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk)
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("pending", 1, 500)
        assert "HTTP 500" in delivery.last_error
        delivery = webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk)
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 2, 200)
        assert len(server.requests) == 2
        assert server.requests[0]["body"] == server.requests[1]["body"]  # same body and delivery id on retry


def test_the_celery_task_retries_with_backoff_and_fails_after_the_last_attempt(monkeypatch):
    monkeypatch.setattr("core.tasks.webhook_backoff", lambda attempts: 0)
    with Receiver(*([503] * MAX_ATTEMPTS)) as server:
        project = project_with()
        hook(project, server.url)
        [first] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
        deliver_webhook.apply(args=[LABEL, first.pk])  # eager: each retry runs at once
        first.refresh_from_db()
        assert (first.status, first.attempts, first.response_code) == ("failed", MAX_ATTEMPTS, 503)
        assert len(server.requests) == MAX_ATTEMPTS

    with Receiver(500) as server:
        hook(project, server.url)
        Webhook.objects.exclude(url=server.url).update(active=False)
        [second] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
        deliver_webhook.apply(args=[LABEL, second.pk])
        second.refresh_from_db()
        assert (second.status, second.attempts, second.response_code) == ("delivered", 2, 200)


def test_backoff_grows_exponentially_with_jitter():
    delays = [webhook_backoff(attempts=n) for n in range(1, MAX_ATTEMPTS)]
    for n, delay in enumerate(delays, start=1):
        base = 30 * 2 ** (n - 1)
        assert base <= delay <= base * 1.5


def test_unreachable_receiver_is_an_error_not_a_crash(settings):
    project = project_with()
    with Receiver() as server:
        url = server.url
    settings.OUTBOUND_ALLOWED_NETWORKS, settings.OUTBOUND_ALLOWED_PORTS = ["127.0.0.1/32"], [server.server.server_address[1]]
    hook(project, url)  # the server is closed: connection refused
    [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
    delivery = webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk)
    assert delivery.status == "pending" and delivery.attempts == 1 and delivery.response_code is None
    assert delivery.last_error


def test_a_webhook_deactivated_before_delivery_is_not_called(receiver):
    project = project_with()
    webhook = hook(project, receiver.url)
    [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
    webhook.active = False
    webhook.save()
    assert webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk).status == "failed"
    assert receiver.requests == []
