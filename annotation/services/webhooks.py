"""Outgoing webhooks for ``run.finished`` and ``task.curated``.

``webhooks_fire`` runs inside the caller's transaction: it creates one ``WebhookDelivery`` per
active webhook of the given projects subscribed to the event and enqueues
``annotation.deliver_webhook`` per delivery with ``transaction.on_commit``. A change that rolls
back therefore leaves neither a delivery nor a message, and a worker never sees an
uncommitted row.

``webhook_deliver`` makes one attempt: it POSTs the delivery's payload as JSON with

* ``X-Studio-Event``: the event name,
* ``X-Studio-Delivery``: the delivery id (the same on every retry: receivers dedupe on it),
* ``X-Studio-Signature``: ``sha256=<hex HMAC-SHA256 of the raw body, keyed with the secret>``,

and marks the delivery delivered on a 2xx answer. Otherwise it records the error and the
response code; the Celery task retries with exponential backoff and jitter
(``webhook_backoff``) until ``MAX_ATTEMPTS`` attempts, after which the delivery is failed.
Delivery is at least once (``acks_late``: a worker killed after the POST sends it again).

Which projects hear about an event (a run or a task is not tied to one project):

* ``task.curated``: every project whose tasks include the task, directly (``project.tasks``,
  which ``project_create`` fills with the task set's tasks too) or through its task set.
* ``run.finished``: every project whose tasks (same rule) overlap the run's tasks (the run's
  task set, or its explicit task list). Sent when ``run_finalize`` settles a run, whether it
  finished or failed: the payload carries the status.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import urllib.error
import urllib.request
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from benchmark.models import Task, TaskSet

from ..models import AnnotationProject, Webhook, WebhookDelivery, WebhookEvent

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
TIMEOUT_SECONDS = 10
BACKOFF_BASE_SECONDS = 30
BACKOFF_MAX_SECONDS = 3600
Status = WebhookDelivery.Status


# --- firing (inside the caller's transaction) ---------------------------------------------


@transaction.atomic
def webhooks_fire(*, event: str, project_ids: Iterable[int] | QuerySet, payload: dict) -> list[WebhookDelivery]:
    """One pending delivery per active webhook of these projects subscribed to ``event``,
    each enqueued once the transaction commits. ``payload`` must be JSON-serialisable."""
    if event not in WebhookEvent.values:
        raise ValueError(f"event: {event!r} is not one of {', '.join(WebhookEvent.values)}")
    hooks = [
        hook for hook in Webhook.objects.filter(active=True, project_id__in=project_ids)
        .select_related("project").order_by("pk")
        if event in (hook.events or [])
    ]
    if not hooks:
        return []
    fired_at = timezone.now().isoformat()
    deliveries = WebhookDelivery.objects.bulk_create([
        WebhookDelivery(
            webhook=hook, event=event,
            payload={"event": event, "fired_at": fired_at,
                     "project": {"id": hook.project_id, "name": hook.project.name}, "data": payload},
        )
        for hook in hooks
    ])
    ids = [delivery.pk for delivery in deliveries]

    def enqueue() -> None:
        from annotation.tasks import deliver_webhook

        for delivery_id in ids:
            deliver_webhook.delay(delivery_id)

    # robust: the change being reported is committed; a broker error is logged and the rows
    # stay pending (visible in the admin) rather than failing the curator's or worker's call.
    transaction.on_commit(enqueue, robust=True)
    return deliveries


def projects_with_tasks(*, tasks: Iterable[int] | QuerySet) -> QuerySet:
    """Ids of the projects whose tasks, directly or through their task set, include any of ``tasks``."""
    task_set_ids = TaskSet.tasks.through.objects.filter(task_id__in=tasks).values("taskset_id")
    return (
        AnnotationProject.objects.filter(Q(tasks__in=tasks) | Q(task_set_id__in=task_set_ids))
        .values_list("pk", flat=True).distinct()
    )


def webhooks_fire_task_curated(*, task: Task, actor=None) -> list[WebhookDelivery]:
    return webhooks_fire(
        event=WebhookEvent.TASK_CURATED, project_ids=projects_with_tasks(tasks=[task.pk]),
        payload={"task": {"id": task.pk, "key": task.key, "status": task.status},
                 "actor": actor.get_username() if getattr(actor, "is_authenticated", False) else None},
    )


def webhooks_fire_run_finished(*, run) -> list[WebhookDelivery]:
    """``run`` is a ``scoring.models.EvaluationRun`` (not imported: scoring imports this module)."""
    tasks = Task.objects.filter(task_sets=run.task_set_id) if run.task_set_id else run.tasks.all()
    return webhooks_fire(
        event=WebhookEvent.RUN_FINISHED, project_ids=projects_with_tasks(tasks=tasks.values("pk")),
        payload={"run": {
            "id": run.pk, "name": run.name, "protocol": run.protocol, "status": run.status, "error": run.error,
            "task_set_id": run.task_set_id, "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        }},
    )


# --- delivering (in a Celery worker, outside any transaction) -----------------------------


def webhook_signature(*, secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def webhook_backoff(*, attempts: int) -> float:
    """Seconds before the next attempt after ``attempts`` failed ones: exponential, capped, plus up to 50 % jitter."""
    base = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0))
    return base + random.uniform(0, base / 2)


def webhook_deliver(*, delivery_id: int) -> WebhookDelivery:
    """One attempt to POST a pending delivery (no transaction is held during the request).

    Returns the delivery: ``delivered`` after a 2xx answer; still ``pending`` after a failure
    with attempts left (the caller retries later); ``failed`` after the last attempt, or when
    the webhook was deactivated meanwhile. Delivered and failed deliveries are left alone."""
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    if delivery.status != Status.PENDING:
        return delivery
    webhook = delivery.webhook
    if not webhook.active:
        return _record(delivery, status=Status.FAILED, error="the webhook was deactivated", code=None, count=False)
    body = json.dumps(delivery.payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    request = urllib.request.Request(webhook.url, data=body, method="POST", headers={
        "Content-Type": "application/json",
        "User-Agent": "survey-eval-studio-webhooks",
        "X-Studio-Event": delivery.event,
        "X-Studio-Delivery": str(delivery.pk),
        "X-Studio-Signature": webhook_signature(secret=webhook.secret, body=body),
    })
    code, error = None, ""
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            code = response.status
    except urllib.error.HTTPError as exc:  # a non-2xx answer (urllib follows redirects itself)
        code, error = exc.code, f"HTTP {exc.code}: {exc.read(500).decode('utf-8', 'replace')}"
    except (urllib.error.URLError, OSError, ValueError) as exc:  # refused, timeout, DNS, bad URL
        error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
    if code is not None and 200 <= code < 300:
        return _record(delivery, status=Status.DELIVERED, error="", code=code)
    error = error or f"HTTP {code}"
    final = delivery.attempts + 1 >= MAX_ATTEMPTS
    logger.warning("webhook delivery %s to %s failed (attempt %s): %s", delivery.pk, webhook.url,
                   delivery.attempts + 1, error)
    return _record(delivery, status=Status.FAILED if final else Status.PENDING, error=error, code=code)


@transaction.atomic
def _record(delivery: WebhookDelivery, *, status: str, error: str, code: int | None, count: bool = True):
    locked = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
    if locked.status == Status.DELIVERED:  # another worker's attempt already succeeded
        return locked
    locked.attempts += 1 if count else 0
    locked.status, locked.last_error, locked.response_code = status, error[:2000], code
    if status == Status.DELIVERED:
        locked.delivered_at = timezone.now()
    locked.save(update_fields=["attempts", "status", "last_error", "response_code", "delivered_at"])
    return locked
