"""The review queue's query budget (issue 38, docs/performance.md "The curator at real volume"):
a page costs the same statements whatever its number of rows (one COUNT query for every kind, one
SELECT per kind it reaches, the source suggestions in one), a decision is the row under its lock,
its UPDATE, its audit row and the task's curated check — nothing read back for the answer — and a
bulk decision costs the same per row, its answer included. Counts, never timings."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmark.models import ChecklistItem, GoldReference
from tests.annotation_factories import curator
from tests.factories import (ChecklistGroupFactory, ChecklistItemFactory, GoldReferenceFactory, NuggetFactory,
                             RubricCriterionFactory, TaskFactory, TaskPromptFactory)

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
PAGE_QUERIES = 9  # user, task, counts, 4 kinds' rows, source suggestions, the layout's worker status
DECISION_QUERIES = 8  # user; savepoint, locked row, UPDATE, audit row, task lock, curated check, release
BULK_QUERIES_PER_ROW = 7  # savepoint, locked row, UPDATE, audit row, task lock, curated check, release
ROW_READ = 'SELECT "benchmark_checklistitem"."id"'  # the ORM reading checklist items (rows, not counts)


@pytest.fixture
def boss(client):
    user = curator("boss")
    client.force_login(user)
    return user


def _task(items: int):
    """A task whose open proposals are ``items`` checklist items, a gold reference, a nugget and a
    criterion: a page of them reaches the same four kinds whatever ``items``."""
    task = TaskFactory(protocol="deepsynth")
    group = ChecklistGroupFactory(task=task, review_status="accepted")
    for n in range(items):
        ChecklistItemFactory(group=group, text=f"item {n} of the topic", proposed_by=f"model-{n % 3}", origin="llm")
    GoldReferenceFactory(task=task)
    NuggetFactory(task=task)
    RubricCriterionFactory(task=task, discipline=None, description="covers the field")
    return task


def _statements(client, method: str, url: str, data=None) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = getattr(client, method)(url, data, **HX)
    assert response.status_code == 200, response.content[:300]
    return [query["sql"] for query in captured.captured_queries]


def test_a_page_of_fifty_rows_makes_the_queries_of_a_page_of_ten(client, boss):
    large, small = _task(47), _task(7)
    url = reverse("annotation:review_queue")
    client.get(url, {"task": small.pk})  # the content types and templates, as in a running server
    fifty = _statements(client, "get", f"{url}?task={large.pk}")
    ten = _statements(client, "get", f"{url}?task={small.pk}")
    page = client.get(url, {"task": large.pk}).content.decode()
    assert page.count('data-role="proposal"') == 50 and "<strong>50</strong> proposals open" in page
    assert len(fifty) == len(ten) == PAGE_QUERIES, "\n".join(fifty)


def test_load_more_makes_the_same_queries_for_fifty_rows_and_for_ten(client, boss):
    large, small = _task(48), _task(7)  # after the first row: fifty rows of four kinds, and nine
    url = reverse("annotation:review_queue")

    def after_first(task):
        first = ChecklistItem.objects.filter(group__task=task).order_by("pk").first()
        return _statements(client, "get", f"{url}?task={task.pk}&after=checklist_item:{first.pk}")

    assert len(after_first(large)) == len(after_first(small))


def test_a_decision_reads_its_row_once_under_its_lock_and_answers_it_without_reading_it_again(client, boss):
    task = _task(4)
    first, item, last = ChecklistItem.objects.filter(group__task=task).order_by("pk")[:3]
    client.post(reverse("annotation:review_decide", args=["checklist_item", first.pk]),
                {"expected_version": first.version, "decision": "accept"}, **HX)  # the content types' cache
    url = reverse("annotation:review_decide", args=["checklist_item", item.pk])
    statements = _statements(client, "post", url, {"expected_version": item.version, "decision": "accept"})
    assert len(statements) == DECISION_QUERIES, "\n".join(statements)
    reads = [sql for sql in statements if sql.startswith(ROW_READ)]
    assert len(reads) == 1 and "FOR UPDATE" in reads[0]
    writes = [n for n, sql in enumerate(statements) if sql.startswith('UPDATE "benchmark_checklistitem"')]
    assert len(writes) == 1 and statements.index(reads[0]) < writes[0]
    # a rejection with its reason costs the same, and its answer names the group as the page does
    url = reverse("annotation:review_decide", args=["checklist_item", last.pk])
    rejected = _statements(client, "post", url, {"expected_version": last.version, "decision": "reject",
                                                 "reason": "duplicate"})
    assert len(rejected) == DECISION_QUERIES
    answer = client.get(reverse("annotation:review_queue"), {"task": task.pk, "status": "rejected"}).content.decode()
    assert f'data-id="{last.pk}"' in answer and f"{last.group.name}:</span>" in answer


def test_a_bulk_decision_costs_the_same_per_row_with_its_answer(client, boss):
    task = _task(10)  # two items stay open: settling a kind's last one asks about the other kinds once
    items = list(ChecklistItem.objects.filter(group__task=task).order_by("pk"))
    url = reverse("annotation:review_bulk")

    def bulk(rows):
        return _statements(client, "post", url, {"decision": "reject", "reason": "duplicate",
                                                 "selected": [f"checklist_item:{i.pk}:{i.version}" for i in rows]})

    two, six = bulk(items[:2]), bulk(items[2:8])
    assert (len(six) - len(two)) == 4 * BULK_QUERIES_PER_ROW, "\n".join(six)
    assert ChecklistItem.objects.filter(group__task=task, review_status="rejected").count() == 8


def test_a_refused_row_of_a_bulk_decision_is_read_with_the_others_of_its_kind(client, boss):
    task = _task(4)
    items = list(ChecklistItem.objects.filter(group__task=task).order_by("pk"))
    url = reverse("annotation:review_bulk")
    stale = [f"checklist_item:{i.pk}:9" for i in items]  # every version wrong: nothing applied
    statements = _statements(client, "post", url, {"decision": "accept", "selected": stale})
    unlocked = [sql for sql in statements if sql.startswith(ROW_READ) and "FOR UPDATE" not in sql]
    assert len(unlocked) == 1  # the four refused rows, for the answer, in one read
    answer = client.post(url, {"decision": "accept", "selected": stale}, **HX).content.decode()
    assert answer.count('hx-swap-oob="true"') == 4 and "0 accepted; 4 not applied" in answer


def test_each_kind_of_row_says_what_it_is_and_where_it_is_from(client, boss):
    task = TaskFactory(protocol="deepsynth", key="task-rows")
    TaskPromptFactory(task=task, text="Write about \\$ caching\nin two lines.")
    group = ChecklistGroupFactory(task=task, name="Methods")
    ChecklistItemFactory(group=group, text="names <b>the</b> method")
    GoldReferenceFactory(task=task, bib_entry__title="A Study of Caches", bib_entry__year=2021)
    RubricCriterionFactory(task=task, discipline=None, name="Depth", description="goes beyond a list")
    discipline_rubric = RubricCriterionFactory(name="Breadth", description="")
    html = client.get(reverse("annotation:review_queue"), {"task": task.pk}).content.decode()
    assert "Write about $ caching<br>in two lines." in html  # source text: LaTeX unescaped, lines kept
    assert '<span class="muted">Methods:</span> names &lt;b&gt;the&lt;/b&gt; method' in html
    assert "A Study of Caches (2021)" in html and "<strong>Depth</strong> goes beyond a list" in html
    assert "<strong>Methods</strong>" in html  # the group itself, by its name
    assert html.count("task-rows · ") == 5
    across = client.get(reverse("annotation:review_queue"), {"kind": "rubric_criterion", "q": "Breadth"})
    row = across.content.decode()
    assert "discipline rubric · " in row and f'data-id="{discipline_rubric.pk}"' in row
    # a decision's answer says the same: a criterion of no task (its task an outer join of the
    # locked read) and a gold reference (its entry and task joined)
    accepted = client.post(reverse("annotation:review_decide", args=["rubric_criterion", discipline_rubric.pk]),
                           {"expected_version": 1, "decision": "accept"}, **HX).content.decode()
    assert 'data-status="accepted"' in accepted and "discipline rubric · " in accepted
    gold = GoldReference.objects.get(task=task)
    accepted = client.post(reverse("annotation:review_decide", args=["gold_reference", gold.pk]),
                           {"expected_version": 1, "decision": "accept"}, **HX).content.decode()
    assert "A Study of Caches (2021)" in accepted and "task-rows · " in accepted
