"""The annotator loop's query budget (issue #20): label and next claim in one request, and
batches of 10, on verify items completed by the label (the agreed decision is applied), on a
blind pairwise project and on an agreement project that shows the judge's verdict. The suite
runs on PostgreSQL; ``test_the_budget_holds_on_sqlite`` runs this module again on SQLite in a
subprocess (a second database alias would not do: the services use the default connection,
and the SQL differs per backend only there)."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from core.models import AuditLog
from annotation.models import AnnotationItem, Label
from tests.annotation_factories import agreement_project, checklist_task, label_all, pairwise_project, verify_project

ACCEPT = {"decision": "accept", "reason": "", "note": "", "edits": {}}
# Counted as Django counts them in the test, whose transaction turns each of ours into a
# savepoint (2 queries, as BEGIN and COMMIT are in production). The user's global role comes
# with the user (``core.authentication``), so the API's viewer check costs none. Single item:
# the locked item with its project, the user's role and its target row (a verify item's
# benchmark row, a pairwise item's pair), its labels and claims, the label, the ended claim,
# (pairwise: the preference), (verify: the decision's UPDATE and the task's curation check), the
# next candidate with its target row (verify), its claim (slots counted again inside the
# INSERT), one audit INSERT for all, one UPDATE of the item, (pairwise: the next item's pair
# with its reports; agreement: the next item's verdict with its report and judge, what the judge
# was shown and the item's labels). See docs/performance.md.
LABEL_AND_NEXT_MAX_QUERIES = {"verify": 12, "pairwise": 12, "agreement": 12}
BATCH_OF_10_MAX_QUERIES_PER_ITEM = {"verify": 4, "pairwise": 4, "agreement": 4}


def _verify(owner, alice, bob, n):
    task, _ = checklist_task(n)
    project = verify_project(owner, [alice, bob], tasks=[task])
    for item in project.items.all():  # one label short: alice's label completes each item
        label_all(item, [bob], ACCEPT)
    return project, {"decision": "accept"}


def _pairwise(owner, alice, bob, n):
    return pairwise_project(owner, [alice], n_tasks=n // 6 + 1, n_systems=3, blind=True), {"choice": "left"}


def _agreement(owner, alice, bob, n):
    project = agreement_project(owner, [alice, bob], labels=["correct"] * n, overlap=2)
    for item in project.items.all():  # not blind: the next item shows the judge's verdict and bob's label
        label_all(item, [bob], {"label": "correct"})
    return project, {"label": "correct"}


PROJECTS = {"verify": _verify, "pairwise": _pairwise, "agreement": _agreement}


def _client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("kind", list(PROJECTS))
def test_label_and_next_in_one_request_stays_within_the_budget(owner, alice, bob, kind):
    project, value = PROJECTS[kind](owner, alice, bob, 6)
    client = _client(alice)
    answer = client.post(f"/api/projects/{project.pk}/next/").json()
    for loop in range(4):  # the first warms the process's caches (content types), as a server's are
        item = answer["assignment"]["item"]
        with CaptureQueriesContext(connection) as queries:
            response = client.post("/api/labels/", {"item": item, "value": value, "client_token": str(uuid.uuid4()),
                                                    "next": True}, format="json")
        assert response.status_code == 201, response.content
        assert loop == 0 or len(queries) <= LABEL_AND_NEXT_MAX_QUERIES[kind], (
            "\n".join(q["sql"][:120] for q in queries))
        answer = response.json()["next"]
        assert response.json()["label"]["item"] == item
        done = AnnotationItem.objects.get(pk=item)
        assert done.status == "complete" and done.labels_done == done.labels_needed  # the label completed it
        assert answer["assignment"]["item"] != item and answer["assignment"]["status"] == "active"
        assert answer["item"]["revealed"] is (not project.blind)
        if project.blind:  # nothing hidden rides along with the next item
            assert answer["item"]["other_labels"] is None and answer["item"]["judge"] is None
    assert AuditLog.objects.filter(action="label.submit", actor=alice).count() == 4


@pytest.mark.parametrize("kind", list(PROJECTS))
def test_a_batch_of_ten_stays_within_the_budget_per_item(owner, alice, bob, kind):
    project, value = PROJECTS[kind](owner, alice, bob, 12)
    client = _client(alice)
    with CaptureQueriesContext(connection) as claiming:
        claims = client.post(f"/api/projects/{project.pk}/next/?count=10").json()["claims"]
    items = [claim["assignment"]["item"] for claim in claims]
    assert len(set(items)) == 10
    body = [{"item": item, "value": value, "client_token": str(uuid.uuid4())} for item in items]
    with CaptureQueriesContext(connection) as submitting:
        response = client.post("/api/labels/batch/", body, format="json")
    assert [row["status"] for row in response.json()["results"]] == [201] * 10
    assert (len(claiming) + len(submitting)) / 10 <= BATCH_OF_10_MAX_QUERIES_PER_ITEM[kind], (
        len(claiming), len(submitting))
    assert sorted(Label.objects.filter(annotator=alice).values_list("item", flat=True)) == sorted(items)
    assert AuditLog.objects.filter(action="label.submit", actor=alice).count() == 10
    assert AuditLog.objects.filter(action="assignment.claim", actor=alice).count() == 10


@pytest.mark.skipif(os.environ.get("DATABASE_URL", "").startswith("sqlite"), reason="this is the SQLite run")
def test_the_budget_holds_on_sqlite(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'budget.sqlite3'}")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "not sqlite"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    assert f"{2 * len(PROJECTS)} passed" in done.stdout
