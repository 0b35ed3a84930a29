"""The workspace POST (label, then the item after the one the client shows) makes the same
statements whatever the size of the item's task (issue #39): nothing on the page is read per
sibling proposal. Counted, not timed: its speed is ``make bench``'s."""

import re

import pytest
from django.db import connection
from django.urls import reverse
from django.test.utils import CaptureQueriesContext

from tests.annotation_factories import checklist_task, label_all, verify_project

from .test_workspace import body, form_token, held_ready, shown_part, url

pytestmark = pytest.mark.django_db

# a held item's POST: user, project and role, the item with its reach, its target; BEGIN, the
# locked items, labels and claims, the label with its claim ended, the held item, the next claim
# (read and insert), the decision applied with its audit rows, the task's lock and settlement,
# the counters, COMMIT; the progress line and the next item's task and group
POST_QUERIES = 21
ITEM_SHOWN = re.compile(r'data-item="(\d+)"')


def label_url(project, item_id) -> str:
    return reverse("annotation:label", args=[project.pk, item_id])


def _post_statements(client, project, *, posts: int) -> list[int]:
    """Open the workspace, then label ``posts`` items as workspace.js does (the item held ready
    is shown at once, the POST names it); the statements of each POST."""
    panel = body(client.get(url("workspace", project)))
    shown, after = shown_part(panel), held_ready(panel)
    counts = []
    for _ in range(posts):
        item_id, showing = ITEM_SHOWN.search(shown)[1], ITEM_SHOWN.search(after)[1]
        with CaptureQueriesContext(connection) as queries:
            response = client.post(label_url(project, item_id),
                                   {"client_token": form_token(shown), "decision": "accept"}, HTTP_X_WS_SHOWN=showing)
        answer = body(response)
        assert response.status_code == 200 and "Saved your label" in answer
        counts.append(len(queries))
        shown, after = after, held_ready(answer)
    return counts


def _task_project(owner, alice, bob, n_items: int):
    task, _ = checklist_task(n_items)
    project = verify_project(owner, [alice, bob], tasks=[task], name=f"verify of {n_items}")
    for item in project.items.all():  # one label short: alice's label settles each item
        label_all(item, [bob], {"decision": "accept", "reason": "", "note": "", "edits": {}})
    return project


def test_a_workspace_post_makes_the_same_statements_for_a_task_of_200_items_as_of_10(as_user, owner, alice, bob):
    client = as_user(alice)
    # the first POST of a process also reads the audit rows' content type into Django's cache
    small = _post_statements(client, _task_project(owner, alice, bob, 10), posts=4)[1:]
    large = _post_statements(client, _task_project(owner, alice, bob, 200), posts=3)
    assert small == large
    assert max(large) <= POST_QUERIES


def test_a_blind_workspace_post_reads_its_item_and_reach_in_one_statement(as_user, owner, alice, bob):
    project = _task_project(owner, alice, bob, 10)
    assert project.blind  # the default: the item is reached through the annotator's claim
    client = as_user(alice)
    panel = body(client.get(url("workspace", project)))
    item_id = ITEM_SHOWN.search(shown_part(panel))[1]
    with CaptureQueriesContext(connection) as queries:
        client.post(label_url(project, item_id),
                    {"client_token": form_token(panel), "decision": "accept"},
                    HTTP_X_WS_SHOWN=ITEM_SHOWN.search(held_ready(panel))[1])
    item_reads = [q["sql"] for q in queries.captured_queries
                  if q["sql"].startswith('SELECT "annotation_annotationitem"') and f'= {item_id}' in q["sql"]]
    assert len(item_reads) == 1 and "annotation_assignment" in item_reads[0] and "annotation_label" in item_reads[0]
