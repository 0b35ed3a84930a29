"""Outgoing webhooks for ``run.finished`` and ``task.curated``: which projects' subscriptions hear
about an event. Delivering them (signature, POST, retries) is ``core.webhooks``'.

``webhooks_fire`` runs inside the caller's transaction: it creates one ``WebhookDelivery`` per
active webhook of the given projects subscribed to the event and enqueues ``core.deliver_webhook``
per delivery with ``transaction.on_commit``. A change that rolls back therefore leaves neither a
delivery nor a message, and a worker never sees an uncommitted row.

Which projects hear about an event (a run or a task is not tied to one project):

* ``task.curated``: every project whose tasks include the task, directly (``project.tasks``,
  which ``project_create`` fills with the task set's tasks too) or through its task set.
* ``run.finished``: every project whose tasks (same rule) overlap the run's tasks (the run's
  task set, or its explicit task list). Sent when ``run_finalize`` settles a run, whether it
  finished or failed: the payload carries the status.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from benchmark.models import Task, TaskSet
from core.webhooks import webhook_deliveries_enqueue

from ..models import AnnotationProject, Webhook, WebhookDelivery, WebhookEvent


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
    webhook_deliveries_enqueue(deliveries)
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
