"""Task sets: named, versioned selections of tasks, frozen into an immutable native-JSONL snapshot.

Rules (``docs/formats.md`` § Task sets):

* a set is created unfrozen (version 1 of its name); while unfrozen its tasks and
  description may change, and its export is the live tasks;
* freezing stores ``snapshot`` (the native JSONL of its tasks, without history) and
  ``content_hash`` (sha256 of the snapshot); from then on the set refuses every change.
  Only curated tasks may be frozen; ``allow_uncurated=True`` also admits draft and
  in-review tasks (a pilot version, marked ``pilot``); retired tasks are never frozen;
* the next version starts from the latest frozen one (same tasks, ``previous`` link);
  ``taskset_changelog`` compares a version with its previous one line by line.

Every change writes its revision row in the same transaction.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from hashlib import sha256

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from core.audit import audit_log_record
from core.audit_actions import AuditAction

from ..exporters.native import export_tasks_jsonl, task_lines
from ..models import Task, TaskSet


class TaskSetError(Exception):
    """A task-set operation that the rules above forbid; the message says why and what to do."""


class TaskSetFrozenError(TaskSetError):
    def __init__(self, task_set: TaskSet) -> None:
        super().__init__(
            f"task set {task_set} was frozen at {task_set.frozen_at:%Y-%m-%d %H:%M} and cannot change; "
            "make a new version with taskset_new_version"
        )


def _keys(tasks: Iterable[Task]) -> list[str]:
    return sorted(f"{t.protocol}/{t.key}" for t in tasks)


def _hash(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()


def _state(task_set: TaskSet) -> dict:
    return {"name": task_set.name, "version": task_set.version, "description": task_set.description,
            "tasks": _keys(task_set.tasks.all())}


@transaction.atomic
def taskset_create(*, name: str, description: str = "", tasks: Iterable[Task], actor=None) -> TaskSet:
    """Version 1 of a new task set; a name already in use needs ``taskset_new_version`` instead."""
    name = name.strip()
    if not name:
        raise TaskSetError("name: a task set needs a name")
    if TaskSet.objects.filter(name=name).exists():
        raise TaskSetError(f"name: a task set named {name!r} already exists; make a new version of it instead")
    task_set = TaskSet.objects.create(name=name, version=1, description=description)
    task_set.tasks.set(list(tasks))
    audit_log_record(target=task_set, action=AuditAction.TASKSET_CREATE, actor=actor, after=_state(task_set))
    return task_set


@transaction.atomic
def taskset_update(
    *, task_set: TaskSet, actor=None, description: str | None = None, tasks: Iterable[Task] | None = None
) -> TaskSet:
    """Change an unfrozen set's description and/or tasks; a frozen set raises ``TaskSetFrozenError``."""
    task_set = TaskSet.objects.select_for_update().get(pk=task_set.pk)
    if task_set.is_frozen:
        raise TaskSetFrozenError(task_set)
    before = _state(task_set)
    if description is not None:
        task_set.description = description
        task_set.save(update_fields=["description", "updated_at"])
    if tasks is not None:
        task_set.tasks.set(list(tasks))
    after = _state(task_set)
    if after != before:
        audit_log_record(target=task_set, action=AuditAction.TASKSET_UPDATE, actor=actor, before=before, after=after)
    return task_set


@transaction.atomic
def taskset_freeze(*, task_set: TaskSet, actor=None, allow_uncurated: bool = False) -> TaskSet:
    """Store the set's snapshot and its sha256, and mark it frozen (by ``actor``, now)."""
    task_set = TaskSet.objects.select_for_update().get(pk=task_set.pk)
    if task_set.is_frozen:
        raise TaskSetFrozenError(task_set)
    tasks = list(task_set.tasks.all())
    if not tasks:
        raise TaskSetError(f"task set {task_set} has no tasks; add some before freezing it")
    allowed = {Task.Status.CURATED} | ({Task.Status.DRAFT, Task.Status.IN_REVIEW} if allow_uncurated else set())
    refused = [t for t in tasks if t.status not in allowed]
    if refused:
        listed = ", ".join(sorted(f"{t.protocol}/{t.key} ({t.status})" for t in refused))
        hint = ("retired tasks are never frozen: make a version without them" if allow_uncurated else
                "curate them first (each task's page says what is left), or freeze the set as a pilot "
                "(allow_uncurated)")
        raise TaskSetError(f"task set {task_set} has tasks that may not be frozen: {listed}; {hint}")
    task_set.snapshot = export_tasks_jsonl(tasks)
    task_set.content_hash = _hash(task_set.snapshot)
    task_set.frozen_at = timezone.now()
    task_set.frozen_by = actor
    task_set.pilot = any(t.status != Task.Status.CURATED for t in tasks)
    task_set.save(update_fields=["snapshot", "content_hash", "frozen_at", "frozen_by", "pilot", "updated_at"])
    audit_log_record(
        target=task_set, action=AuditAction.TASKSET_FREEZE, actor=actor,
        after={"content_hash": task_set.content_hash, "tasks": _keys(tasks), "allow_uncurated": allow_uncurated,
               "pilot": task_set.pilot},
    )
    return task_set


@transaction.atomic
def taskset_new_version(*, task_set: TaskSet, actor=None) -> TaskSet:
    """The next, unfrozen version of a frozen set: same name, description and tasks, ``previous`` = it."""
    versions = TaskSet.objects.select_for_update().filter(name=task_set.name)
    latest = versions.aggregate(latest=Max("version"))["latest"]
    task_set = versions.get(pk=task_set.pk)
    if not task_set.is_frozen:
        raise TaskSetError(f"task set {task_set} is not frozen; change it directly instead of making a new version")
    if task_set.version != latest:
        raise TaskSetError(f"task set {task_set} is not the latest version (v{latest} is); start from that one")
    successor = TaskSet.objects.create(
        name=task_set.name, version=latest + 1, description=task_set.description, previous=task_set
    )
    successor.tasks.set(task_set.tasks.all())
    audit_log_record(target=successor, action=AuditAction.TASKSET_NEW_VERSION, actor=actor,
                     before={"previous": str(task_set)}, after=_state(successor))
    return successor


def taskset_get(*, name: str, version: int | None = None) -> TaskSet:
    """A set by name and version (default: the latest); ``TaskSetError`` names the versions there are."""
    versions = TaskSet.objects.filter(name=name).order_by("-version")
    task_set = versions.filter(version=version).first() if version is not None else versions.first()
    if task_set is None:
        known = ", ".join(f"v{v}" for v in versions.values_list("version", flat=True)) or "none"
        raise TaskSetError(f"no task set {name!r}" + (f" version {version}" if version is not None else "")
                           + f" (versions: {known})")
    return task_set


def taskset_export(*, task_set: TaskSet, include_history: bool = False) -> str:
    """The set as native JSONL: a frozen set's snapshot, an unfrozen set's live tasks.

    A frozen set's snapshot holds no history; with ``include_history`` the live tasks are
    exported with their history, and only if their content still equals the snapshot.
    """
    if not task_set.is_frozen:
        return export_tasks_jsonl(task_set.tasks.all(), include_history=include_history)
    if not include_history:
        return task_set.snapshot
    if _hash(export_tasks_jsonl(task_set.tasks.all())) != task_set.content_hash:
        raise TaskSetError(
            f"the tasks of {task_set} changed since it was frozen, so their history would not describe the "
            "frozen snapshot; export without history to get the snapshot"
        )
    return export_tasks_jsonl(task_set.tasks.all(), include_history=True)


def taskset_history_exportable(*, task_set: TaskSet) -> bool:
    """Whether an export "with history" would succeed now: an open set always (its live tasks);
    a frozen one while its tasks still equal the snapshot (``taskset_export``)."""
    return not task_set.is_frozen or _hash(export_tasks_jsonl(task_set.tasks.all())) == task_set.content_hash


def taskset_readiness(*, task_set: TaskSet) -> dict:
    """What freezing an open set needs: its tasks by status, and the first ``shown`` that are not
    curated (``blocking``), retired ones first since no freeze admits them."""
    tasks = list(task_set.tasks.only("pk", "protocol", "key", "title", "status").order_by("protocol", "key"))
    counts = {status: 0 for status in Task.Status.values}
    for task in tasks:
        counts[task.status] += 1
    blocking = sorted((t for t in tasks if t.status != Task.Status.CURATED),
                      key=lambda t: (t.status != Task.Status.RETIRED, t.protocol, t.key))
    return {"total": len(tasks), "counts": counts, "blocking": blocking[:10], "n_blocking": len(blocking),
            "all_curated": bool(tasks) and not blocking, "retired": counts[Task.Status.RETIRED]}


@dataclass(frozen=True)
class TaskSetChangelog:
    """What a version changed against its previous one; tasks as ``protocol/key``."""

    previous: TaskSet | None
    added: list[str]
    removed: list[str]
    changed: list[str]
    unchanged: int


def _line_hashes(task_set: TaskSet) -> dict[str, str]:
    lines = task_set.snapshot.splitlines() if task_set.is_frozen else task_lines(task_set.tasks.all())
    hashes = {}
    for line in lines:
        data = json.loads(line)
        hashes[f"{data['protocol']}/{data['key']}"] = _hash(line)
    return hashes


def taskset_changelog(*, task_set: TaskSet, against: TaskSet | None = None) -> TaskSetChangelog:
    """Added, removed and changed tasks against ``against`` (default ``previous``: any two versions
    can be compared), comparing the hash of each task's line."""
    base = against or task_set.previous
    current = _line_hashes(task_set)
    previous = _line_hashes(base) if base else {}
    return TaskSetChangelog(
        previous=base,
        added=sorted(current.keys() - previous.keys()),
        removed=sorted(previous.keys() - current.keys()),
        changed=sorted(k for k in current.keys() & previous.keys() if current[k] != previous[k]),
        unchanged=sum(1 for k in current.keys() & previous.keys() if current[k] == previous[k]),
    )
