"""The review queue (issue 38): every open proposal reachable page after page, filters, one decision
per request answered with its row, a rejection's reason kept in its revision, bulk decisions where
one stale row is reported and never stalls the others; curators only."""

import pytest
from django.urls import reverse

from benchmark.models import ChecklistItem, Nugget
from core.models import AuditLog
from tests.annotation_factories import annotator, curator
from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, NuggetFactory, TaskFactory

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def boss(client):
    user = curator("boss")
    client.force_login(user)
    return user


@pytest.fixture
def task():
    task = TaskFactory(protocol="deepsynth")
    group = ChecklistGroupFactory(task=task, review_status="accepted")
    for n in range(60):
        ChecklistItemFactory(group=group, text=f"item {n:02d} about {'SLAM' if n % 2 else 'mapping'}",
                             proposed_by="gpt-4o" if n < 30 else "qwen", origin="llm")
    NuggetFactory(task=task, text="a nugget")
    return task


def _queue(client, **query):
    return client.get(reverse("annotation:review_queue"), query)


def _decide(client, row, kind="checklist_item", **data):
    return client.post(reverse("annotation:review_decide", args=[kind, row.pk]),
                       {"expected_version": row.version, **data}, **HX)


def test_the_queue_lists_every_open_proposal_page_after_page(client, boss, task, django_assert_max_num_queries):
    with django_assert_max_num_queries(30):
        page = _queue(client, task=task.pk)
    html = page.content.decode()
    assert page.status_code == 200 and "<strong>61</strong> proposals open" in html
    assert html.count('data-role="proposal"') == 50 and 'data-role="load-more"' in html
    items = list(ChecklistItem.objects.filter(group__task=task).order_by("pk"))
    # a decision meanwhile does not shift the next page: it continues after the last row shown
    _decide(client, items[0], decision="accept")
    more = client.get(reverse("annotation:review_queue"), {"task": task.pk, "after": f"checklist_item:{items[49].pk}"}, **HX)
    rest = more.content.decode()
    assert rest.count('data-role="proposal"') == 11 and f'data-id="{items[50].pk}"' in rest
    assert 'data-kind="nugget"' in rest and 'data-role="load-more"' not in rest


def test_filters_by_kind_source_text_and_status(client, boss, task):
    assert "<strong>1</strong> proposal open" in _queue(client, task=task.pk, kind="nugget").content.decode()
    assert "<strong>30</strong>" in _queue(client, task=task.pk, source="qwen").content.decode()
    assert "<strong>30</strong>" in _queue(client, task=task.pk, q="slam").content.decode()
    assert "<strong>1</strong> proposal accepted" in _queue(client, task=task.pk, status="accepted").content.decode()
    across = _queue(client, kind="checklist_item", source="gpt").content.decode()  # across tasks
    assert "<strong>30</strong>" in across


def test_a_decision_answers_its_row_and_a_rejection_keeps_its_reason(client, boss, task):
    item = ChecklistItem.objects.filter(group__task=task).order_by("pk").first()
    refused = _decide(client, item, decision="reject")
    assert refused.status_code == 422 and "pick a reason" in refused.content.decode()
    other = _decide(client, item, decision="reject", reason="other")
    assert other.status_code == 422 and "“other”" in other.content.decode()
    item.refresh_from_db()
    assert item.review_status == "proposed" and item.version == 1  # nothing written
    done = _decide(client, item, decision="reject", reason="unverifiable", reason_text="no source says so")
    html = done.content.decode()
    assert done.status_code == 200 and 'data-status="rejected"' in html
    assert "Rejected — Unverifiable from the source: no source says so." in html
    revision = AuditLog.objects.filter(object_id=item.pk, action="review.rejected").get()
    assert revision.after["review_reason"] == {"code": "unverifiable", "text": "no source says so"}
    assert revision.after["review_status"] == "rejected" and "review queue" in revision.note
    # the same row again: settled, 409 with the row as it is
    again = _decide(client, item, decision="accept")
    assert again.status_code == 409 and "already rejected" in again.content.decode()


def test_an_edit_stores_exactly_the_typed_text_and_a_stale_one_is_refused_keeping_it(client, boss, task):
    item = ChecklistItem.objects.filter(group__task=task).order_by("pk").first()
    typed = item.text + " (clarified)"
    stale = client.post(reverse("annotation:review_decide", args=["checklist_item", item.pk]),
                        {"expected_version": 7, "decision": "edit", "edit-text": typed}, **HX)
    assert stale.status_code == 409 and typed in stale.content.decode()  # the expert's text is kept
    done = _decide(client, item, decision="edit", **{"edit-text": typed})
    assert done.status_code == 200
    item.refresh_from_db()
    assert (item.review_status, item.text) == ("edited", typed)


def test_bulk_reject_applies_each_row_and_reports_the_stale_one(client, boss, task):
    items = list(ChecklistItem.objects.filter(group__task=task).order_by("pk")[:4])
    nugget = Nugget.objects.get(task=task)
    selected = [f"checklist_item:{i.pk}:{i.version}" for i in items] + [f"nugget:{nugget.pk}:9"]
    url = reverse("annotation:review_bulk")
    no_reason = client.post(url, {"selected": selected, "decision": "reject"}, **HX)
    assert no_reason.status_code == 422 and not ChecklistItem.objects.filter(review_status="rejected").exists()
    response = client.post(url, {"selected": selected, "decision": "reject", "reason": "duplicate"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200 and "4 rejected; 1 not applied" in html
    assert html.count('hx-swap-oob="true"') == 5 and "version 1, your edit was based on version 9" in html
    assert ChecklistItem.objects.filter(pk__in=[i.pk for i in items], review_status="rejected").count() == 4
    assert AuditLog.objects.filter(action="review.rejected", after__review_reason__code="duplicate").count() == 4
    nugget.refresh_from_db()
    assert nugget.review_status == "proposed"
    accepted = client.post(url, {"selected": [f"nugget:{nugget.pk}:1"], "decision": "accept"}, **HX)
    assert "1 accepted" in accepted.content.decode()


def test_only_curators_reach_the_queue(client, task):
    client.force_login(annotator("ann"))
    item = ChecklistItem.objects.filter(group__task=task).first()
    assert _queue(client, task=task.pk).status_code == 403
    assert _decide(client, item, decision="accept").status_code == 403
    assert client.post(reverse("annotation:review_bulk"), {"selected": [f"checklist_item:{item.pk}:1"],
                                                          "decision": "accept"}).status_code == 403
    item.refresh_from_db()
    assert item.review_status == "proposed"


def test_the_task_page_links_to_the_queue(client, boss, task):
    html = client.get(reverse("benchmark:task_detail", args=[task.pk])).content.decode()
    assert f'href="{reverse("annotation:review_queue")}?task={task.pk}" data-role="review-queue"' in html
