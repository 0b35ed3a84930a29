"""The kinds of background job that a worker claims by writing its hostname on the row, so that
recovery can put a dead worker's jobs back in the queue without knowing the apps that own them.

Each app registers its kinds when it is ready (``job_kind_register``); recovery
(``scoring.services.recovery``) walks ``job_kinds()``. A kind's rows have ``status``, ``worker``
and ``updated_at`` columns; ``task`` is the Celery task that runs one job from its id.
"""

from dataclasses import dataclass
from typing import Any

from django.db import models


@dataclass(frozen=True)
class JobKind:
    model: type[models.Model]
    running: str  # the status of a claimed job
    queued: str  # the status a job waits in, and goes back to when its worker died
    task: Any  # Celery task: task.delay(job_id)


_KINDS: dict[str, JobKind] = {}


def job_kind_register(kind: JobKind) -> None:
    _KINDS[kind.model._meta.label_lower] = kind


def job_kinds() -> list[JobKind]:
    return list(_KINDS.values())
