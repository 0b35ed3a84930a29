"""Task sets in the browser's pages: create from picked or filtered tasks, freeze, next version, compare."""

import pytest
from django.urls import reverse

from benchmark.models import Task, TaskSet
from benchmark.services.tasksets import taskset_create, taskset_freeze, taskset_new_version, taskset_update
from tests.annotation_factories import annotator, curator
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client):
    user = curator()
    client.force_login(user)
    return user


def test_annotators_are_refused(client):
    client.force_login(annotator("alice"))
    assert client.get(reverse("benchmark:taskset_new")).status_code == 403
    task_set = taskset_create(name="core", tasks=[TaskFactory(status="curated")])
    assert client.post(reverse("benchmark:taskset_freeze", args=[task_set.pk])).status_code == 403
    assert not TaskSet.objects.get(pk=task_set.pk).is_frozen


def test_a_set_from_ticked_tasks_and_one_from_every_filtered_task(client, owner):
    kept, other = TaskFactory(key="graph-1"), TaskFactory(key="vision-1")
    response = client.post(reverse("benchmark:taskset_new"), {"name": "ticked", "tasks": [kept.pk]})
    ticked = TaskSet.objects.get(name="ticked")
    assert response["Location"] == reverse("benchmark:taskset_detail", args=[ticked.pk])
    assert list(ticked.tasks.all()) == [kept]
    filtered_url = reverse("benchmark:taskset_new") + "?search=vision"
    assert "1 task matches the filters" in client.get(filtered_url).content.decode()
    assert client.post(filtered_url, {"name": "filtered"}).status_code == 302
    assert list(TaskSet.objects.get(name="filtered").tasks.all()) == [other]


def test_refusals_name_the_field_and_create_nothing(client, owner):
    task = TaskFactory()
    taskset_create(name="taken", tasks=[task])
    taken = client.post(reverse("benchmark:taskset_new"), {"name": "taken", "tasks": [task.pk]})
    assert taken.status_code == 400 and 'id="errors-name"><li>a task set named' in taken.content.decode()
    empty = client.post(reverse("benchmark:taskset_new"), {"name": "empty"})
    assert empty.status_code == 400 and 'id="errors-tasks"' in empty.content.decode()
    assert list(TaskSet.objects.values_list("name", flat=True)) == ["taken"]


def test_freeze_refuses_uncurated_tasks_unless_asked_then_a_new_version_starts(client, owner):
    task_set = taskset_create(name="core", tasks=[TaskFactory(key="draft-1", status="draft")])
    url = reverse("benchmark:taskset_freeze", args=[task_set.pk])
    refused = client.post(url, follow=True).content.decode()
    assert "Not frozen: task set core v1 has tasks that may not be frozen: deepsynth/draft-1 (draft)" in refused
    assert not TaskSet.objects.get(pk=task_set.pk).is_frozen
    page = client.get(reverse("benchmark:taskset_detail", args=[task_set.pk])).content.decode()
    assert "1 of 1</strong> is not" in page and 'id="freeze-pilot-button"' in page and 'id="freeze-button"' not in page
    assert "export it with history right away" in page
    client.post(url, {"allow_uncurated": "1"})
    task_set.refresh_from_db()
    assert task_set.is_frozen and task_set.frozen_by == owner and task_set.pilot
    page = client.get(reverse("benchmark:taskset_detail", args=[task_set.pk])).content.decode()
    assert 'id="pilot-mark"' in page and "With history: available" in page
    Task.objects.filter(key="draft-1").update(title="changed after the freeze")
    page = client.get(reverse("benchmark:taskset_detail", args=[task_set.pk])).content.decode()
    assert "With history: not available" in page and 'name="include_history" value="1" aria-describedby="history-note" disabled' in page
    response = client.post(reverse("benchmark:taskset_new_version", args=[task_set.pk]))
    successor = TaskSet.objects.get(name="core", version=2)
    assert response["Location"] == reverse("benchmark:taskset_detail", args=[successor.pk])


def test_detail_compares_with_the_chosen_version(client, owner):
    a, b, c = (TaskFactory(key=key, status="curated") for key in ("a", "b", "c"))
    first = taskset_freeze(task_set=taskset_create(name="core", tasks=[a]))
    second = taskset_freeze(task_set=taskset_update(task_set=taskset_new_version(task_set=first), tasks=[a, b]))
    third = taskset_update(task_set=taskset_new_version(task_set=second), tasks=[b, c])
    url = reverse("benchmark:taskset_detail", args=[third.pk])
    default = client.get(url).content.decode()
    assert "Changes since v2" in default and "Added: deepsynth/c" in default
    compared = client.get(url, {"against": first.pk}).content.decode()
    assert "Changes from v1 to v3" in compared and "Added: deepsynth/b, deepsynth/c" in compared
    assert "Removed: deepsynth/a" in compared
    assert 'id="freeze-button"' in compared
