import hashlib

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management import CommandError, call_command

from benchmark.exporters.native import export_tasks_jsonl
from benchmark.models import Task, TaskSet
from benchmark.services.history import proposable_update
from benchmark.services.tasksets import (
    TaskSetError,
    TaskSetFrozenError,
    taskset_changelog,
    taskset_create,
    taskset_export,
    taskset_freeze,
    taskset_get,
    taskset_new_version,
    taskset_update,
)
from core.models import AuditLog
from tests import factories
from tests.benchmark.exporters.sample import discipline_with_criteria, rich_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def curated():
    discipline = discipline_with_criteria()
    return [rich_task(f"t{n}", discipline=discipline) for n in range(3)]


@pytest.fixture
def expert():
    return factories.UserFactory(username="curator")


def actions(task_set) -> list[str]:
    content_type = ContentType.objects.get_for_model(TaskSet)
    rows = AuditLog.objects.filter(content_type=content_type, object_id=task_set.pk)
    return list(rows.values_list("action", flat=True))


def test_create_makes_version_one_with_a_revision(curated, expert):
    task_set = taskset_create(name="  core ", description="Pilot", tasks=curated[:2], actor=expert)
    assert (task_set.name, task_set.version, task_set.is_frozen) == ("core", 1, False)
    assert set(task_set.tasks.all()) == set(curated[:2])
    assert actions(task_set) == ["taskset.create"]
    with pytest.raises(TaskSetError, match="already exists"):
        taskset_create(name="core", tasks=[], actor=expert)


def test_freeze_stores_snapshot_hash_and_who(curated, expert):
    task_set = taskset_create(name="core", tasks=curated, actor=expert)
    frozen = taskset_freeze(task_set=task_set, actor=expert)

    assert frozen.snapshot == export_tasks_jsonl(curated)
    assert frozen.snapshot.count("\n") == 3 and '"history"' not in frozen.snapshot
    assert frozen.content_hash == hashlib.sha256(frozen.snapshot.encode("utf-8")).hexdigest()
    assert frozen.frozen_by == expert and frozen.frozen_at is not None
    assert actions(task_set) == ["taskset.create", "taskset.freeze"]
    stored = TaskSet.objects.get(pk=task_set.pk)
    assert (stored.snapshot, stored.content_hash) == (frozen.snapshot, frozen.content_hash)


def test_a_frozen_set_refuses_changes_and_keeps_its_snapshot(curated, expert):
    task_set = taskset_freeze(task_set=taskset_create(name="core", tasks=curated[:2], actor=expert), actor=expert)
    snapshot = task_set.snapshot

    with pytest.raises(TaskSetFrozenError, match="cannot change"):
        taskset_update(task_set=task_set, tasks=curated, actor=expert)
    with pytest.raises(TaskSetFrozenError, match="task set core v1 was frozen at .* and cannot change"):
        taskset_update(task_set=task_set, description="new", actor=expert)
    with pytest.raises(TaskSetFrozenError, match="task set core v1 was frozen at .* and cannot change"):
        taskset_freeze(task_set=task_set, actor=expert)

    # Later curation of its tasks does not reach the frozen snapshot.
    item = curated[0].checklist_groups.first().items.first()
    proposable_update(obj=item, changes={"text": "Edited after the freeze"}, expected_version=item.version)
    task_set.refresh_from_db()
    assert task_set.snapshot == snapshot and task_set.tasks.count() == 2
    assert taskset_export(task_set=task_set) == snapshot
    with pytest.raises(TaskSetError, match="changed since it was frozen"):
        taskset_export(task_set=task_set, include_history=True)
    assert actions(task_set) == ["taskset.create", "taskset.freeze"]


def test_history_export_of_an_untouched_frozen_set(curated, expert):
    task_set = taskset_freeze(task_set=taskset_create(name="core", tasks=curated, actor=expert), actor=expert)
    with_history = taskset_export(task_set=task_set, include_history=True)
    assert '"history":[]' in with_history and with_history != task_set.snapshot


def test_only_curated_tasks_may_be_frozen(curated, expert):
    draft = rich_task("draft", status=Task.Status.DRAFT, discipline=curated[0].survey.discipline)
    retired = rich_task("old", status=Task.Status.RETIRED, discipline=curated[0].survey.discipline)
    task_set = taskset_create(name="core", tasks=[*curated, draft], actor=expert)

    with pytest.raises(TaskSetError, match=r"deepsynth/draft \(draft\).*curate them first.*freeze the set as a pilot"):
        taskset_freeze(task_set=task_set, actor=expert)
    assert not TaskSet.objects.get(pk=task_set.pk).is_frozen

    taskset_update(task_set=task_set, tasks=[*curated, draft, retired], actor=expert)
    with pytest.raises(TaskSetError, match=r"deepsynth/old \(retired\).*retired tasks are never frozen"):
        taskset_freeze(task_set=task_set, actor=expert, allow_uncurated=True)

    taskset_update(task_set=task_set, tasks=[*curated, draft], actor=expert)
    pilot = taskset_freeze(task_set=task_set, actor=expert, allow_uncurated=True)
    assert pilot.is_frozen and pilot.pilot  # a draft went in: a pilot version
    assert actions(task_set) == ["taskset.create", "taskset.update", "taskset.update", "taskset.freeze"]


def test_an_empty_set_cannot_be_frozen(expert):
    with pytest.raises(TaskSetError, match="has no tasks"):
        taskset_freeze(task_set=taskset_create(name="empty", tasks=[], actor=expert), actor=expert)


def test_new_version_links_previous_and_copies_tasks(curated, expert):
    first = taskset_create(name="core", description="d", tasks=curated, actor=expert)
    with pytest.raises(TaskSetError, match="not frozen"):
        taskset_new_version(task_set=first, actor=expert)
    taskset_freeze(task_set=first, actor=expert)

    second = taskset_new_version(task_set=first, actor=expert)

    assert (second.name, second.version, second.previous, second.description) == ("core", 2, first, "d")
    assert set(second.tasks.all()) == set(curated) and not second.is_frozen
    assert actions(second) == ["taskset.new_version"]
    assert taskset_get(name="core") == second and taskset_get(name="core", version=1) == first
    taskset_freeze(task_set=second, actor=expert)
    with pytest.raises(TaskSetError, match=r"not the latest version \(v2 is\)"):
        taskset_new_version(task_set=first, actor=expert)
    with pytest.raises(TaskSetError, match=r"versions: v2, v1"):
        taskset_get(name="core", version=7)


def test_changelog_compares_line_hashes_with_the_previous_version(curated, expert):
    a, b, c = curated
    first = taskset_freeze(task_set=taskset_create(name="core", tasks=[a, b], actor=expert), actor=expert)
    assert taskset_changelog(task_set=first).added == ["deepsynth/t0", "deepsynth/t1"]

    second = taskset_new_version(task_set=first, actor=expert)
    taskset_update(task_set=second, tasks=[b, c], actor=expert)
    nugget = b.nuggets.first()
    proposable_update(obj=nugget, changes={"text": "Changed nugget"}, expected_version=nugget.version)

    live = taskset_changelog(task_set=second)  # unfrozen: compares the live tasks
    taskset_freeze(task_set=second, actor=expert)
    frozen = taskset_changelog(task_set=second)

    for changes in (live, frozen):
        assert (changes.previous, changes.added, changes.removed, changes.changed, changes.unchanged) == (
            first, ["deepsynth/t2"], ["deepsynth/t0"], ["deepsynth/t1"], 0
        )


def test_commands_freeze_and_export(curated, expert, tmp_path, capsys):
    taskset_create(name="core", tasks=curated, actor=expert)
    call_command("freeze_taskset", "core", "--user", "curator")
    out = capsys.readouterr().out
    task_set = taskset_get(name="core")
    assert f"froze core v1: 3 tasks, sha256 {task_set.content_hash}" in out
    assert "(first version): 3 added, 0 removed, 0 changed, 0 unchanged" in out
    assert task_set.frozen_by == expert

    target = tmp_path / "core.jsonl"
    call_command("export_taskset", "core", "--version", "1", "-o", str(target))
    assert target.read_text(encoding="utf-8") == task_set.snapshot
    call_command("export_taskset", "core", "--include-history")
    assert '"history":[]' in capsys.readouterr().out

    with pytest.raises(CommandError, match="cannot change"):
        call_command("freeze_taskset", "core")
    with pytest.raises(CommandError, match="no task set 'other'"):
        call_command("export_taskset", "other")
    with pytest.raises(CommandError, match="no user"):
        call_command("freeze_taskset", "core", "--user", "nobody")


def test_changelog_compares_any_two_versions(curated, expert):
    first = taskset_freeze(task_set=taskset_create(name="core", tasks=curated[:1], actor=expert), actor=expert)
    second = taskset_new_version(task_set=first, actor=expert)
    taskset_update(task_set=second, tasks=curated[:2], actor=expert)
    second = taskset_freeze(task_set=second, actor=expert)
    third = taskset_new_version(task_set=second, actor=expert)
    taskset_update(task_set=third, tasks=curated[1:], actor=expert)
    against_previous = taskset_changelog(task_set=third)
    assert (against_previous.previous, against_previous.added, against_previous.removed) == (
        second, ["deepsynth/t2"], ["deepsynth/t0"])
    against_first = taskset_changelog(task_set=third, against=first)
    assert (against_first.previous, against_first.added, against_first.removed, against_first.unchanged) == (
        first, ["deepsynth/t1", "deepsynth/t2"], ["deepsynth/t0"], 0)
