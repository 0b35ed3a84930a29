"""The task page's curation card and solo review (issue 30): the status, what blocks "curated", and
accept / edit / reject on each open proposal through the same services and audit rows as a verify
project, the task curated when the last one is settled; curators only."""

import re

import pytest
from django.urls import reverse

from benchmark.models import ChecklistItem, Task
from core.models import AuditLog
from tests.annotation_factories import annotator, curator
from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, NuggetFactory, TaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def boss(client):
    user = curator("boss")
    client.force_login(user)
    return user


def _page(client, task) -> str:
    response = client.get(reverse("benchmark:task_detail", args=[task.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _review(client, task, row, decision, **extra):
    kind = "checklist_item" if isinstance(row, ChecklistItem) else "checklist_group" if hasattr(row, "clip_factor") \
        else "nugget"
    url = reverse("annotation:task_proposal_review", args=[task.pk, kind, row.pk])
    return client.post(url, {"decision": decision, "expected_version": row.version, **extra})


def test_the_card_says_what_blocks_curated_and_a_solo_review_curates_the_task(client, boss):
    task = TaskFactory(protocol="deepsynth", status=Task.Status.DRAFT)
    group = ChecklistGroupFactory(task=task, review_status="accepted")
    items = [ChecklistItemFactory(group=group) for _ in range(3)]
    html = _page(client, task)
    blockers = re.search(r'<span id="curation-blockers">(.*?)</span>', html, re.S).group(1)
    assert "3 of 4 proposals are not yet accepted, edited or rejected (3 checklist items)" in blockers
    assert html.count('class="solo-row"') == 3 and 'data-role="decision"' in html
    assert 'id="mark-curated"' not in html

    assert _review(client, task, items[0], "accept").status_code == 302
    response = _review(client, task, items[1], "edit", **{"edit-text": "The report names YOLO."})
    assert response.status_code == 302 and response["Location"].endswith("#curation")
    task.refresh_from_db()
    assert task.status == Task.Status.DRAFT  # one is still open
    _review(client, task, items[2], "reject", note="off topic")
    task.refresh_from_db()
    assert task.status == Task.Status.CURATED
    statuses = {i.pk: (i.review_status, i.text) for i in ChecklistItem.objects.filter(group=group)}
    assert statuses[items[0].pk] == ("accepted", items[0].text)
    assert statuses[items[1].pk] == ("edited", "The report names YOLO.")
    assert statuses[items[2].pk][0] == "rejected"
    # the same audit rows as a verify project's decision, and the task's curation
    actions = list(AuditLog.objects.filter(actor=boss).order_by("pk").values_list("action", flat=True))
    assert actions == ["review.accepted", "review.edited", "review.rejected", "task.curate"]
    note = AuditLog.objects.get(action="review.rejected").note
    assert note == "solo review on the task page: off topic"
    html = _page(client, task)
    assert "Every proposal is settled" in html and 'class="solo-row"' not in html


def test_a_stale_settled_or_empty_decision_changes_nothing(client, boss):
    task = TaskFactory(protocol="deepscholar")
    nugget = NuggetFactory(task=task)
    stale = client.post(reverse("annotation:task_proposal_review", args=[task.pk, "nugget", nugget.pk]),
                        {"decision": "accept", "expected_version": nugget.version + 1}, follow=True)
    assert "was changed by someone else" in stale.content.decode()
    unchanged = _review(client, task, nugget, "edit", **{"edit-text": nugget.text})
    assert unchanged.status_code == 302
    nugget.refresh_from_db()
    assert nugget.review_status == "proposed" and nugget.version == 1
    _review(client, task, nugget, "accept")
    nugget.refresh_from_db()
    twice = client.post(reverse("annotation:task_proposal_review", args=[task.pk, "nugget", nugget.pk]),
                        {"decision": "reject", "expected_version": nugget.version}, follow=True)
    assert "already accepted" in twice.content.decode()
    nugget.refresh_from_db()
    assert nugget.review_status == "accepted"
    assert client.post(reverse("annotation:task_proposal_review", args=[task.pk, "nugget", 10**9]),
                       {"decision": "accept", "expected_version": 1}).status_code == 302
    assert AuditLog.objects.filter(action__startswith="review.").count() == 1


def test_annotators_see_no_card_and_cannot_review(client):
    task = TaskFactory(protocol="deepscholar")
    nugget = NuggetFactory(task=task)
    client.force_login(annotator("ann"))
    assert 'id="curation"' not in _page(client, task)
    response = client.post(reverse("annotation:task_proposal_review", args=[task.pk, "nugget", nugget.pk]),
                           {"decision": "accept", "expected_version": 1})
    assert response.status_code == 403
    assert client.post(reverse("annotation:task_curate", args=[task.pk])).status_code == 403
    nugget.refresh_from_db()
    assert nugget.review_status == "proposed"


def test_mark_curated_when_everything_is_settled(client, boss):
    task = TaskFactory(protocol="deepscholar", status=Task.Status.IN_REVIEW)
    NuggetFactory(task=task, review_status="accepted")
    html = _page(client, task)
    assert 'id="mark-curated"' in html
    client.post(reverse("annotation:task_curate", args=[task.pk]))
    task.refresh_from_db()
    assert task.status == Task.Status.CURATED
