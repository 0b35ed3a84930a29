"""50 clients at once against PostgreSQL: labels, pairwise preferences and edits of one checklist item.

Every client must get a definite answer (its label, a conflict or a validation error); nothing may
be lost (each successful edit is in the revision chain) or duplicated (one label per item and
annotator, one label per form token, one preference per pairwise label).
"""

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection, connections
from django.db.models import Count

from annotation.models import AnnotationItem, Label, PairwisePreference
from annotation.services.errors import AlreadyLabelledError, ClaimLostError, ItemNotOpenError
from tests.annotation_factories import submit_held as label_submit  # blind: on an item held (#37)
from benchmark.models import ChecklistItem
from benchmark.services.history import StaleEditError, proposable_update
from core.models import AuditLog
from tests.annotation_factories import annotator, checklist_task, curator, pairwise_project

CLIENTS = 50
ANNOTATORS = CLIENTS // 2  # each annotator's form is submitted twice at once (double click, two tabs)
DEFINITE = (StaleEditError, ValueError, AlreadyLabelledError, ItemNotOpenError, ClaimLostError)

pytestmark = pytest.mark.django_db(transaction=True)


def run_clients(work, n: int) -> list:
    """Run ``work(i)`` in ``n`` threads released together; returns each result or exception."""
    barrier = threading.Barrier(n)

    def client(i):
        try:
            barrier.wait(timeout=30)
            return work(i)
        except Exception as exc:  # noqa: BLE001 — the test classifies every outcome
            return exc
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(client, range(n)))


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs DATABASE_URL=postgres://… (row locks and real concurrency)")


def test_fifty_concurrent_clients_lose_and_duplicate_nothing(postgres):
    owner = curator("owner")
    users = [annotator(f"ann{n:02}") for n in range(ANNOTATORS)]
    project = pairwise_project(owner, users, n_tasks=1, n_systems=3, overlap=3)
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    assert len(items) == 6  # 25 annotators over 6 items needing 3 labels each: most items are contested
    _, (checklist_item, *_) = checklist_task(1)
    start_version = checklist_item.version
    forms = [uuid.uuid4() for _ in range(ANNOTATORS)]

    def work(i):
        # Every client edits the same checklist item, based on the version it just read …
        seen = ChecklistItem.objects.get(pk=checklist_item.pk)
        try:
            proposable_update(obj=seen, changes={"text": f"edit by client {i}"}, expected_version=seen.version,
                              actor=owner)
            edit = "ok"
        except StaleEditError as exc:
            edit = exc
        # … then submits its annotator's form (two clients share each annotator and form token).
        who = i % ANNOTATORS
        item = items[who % len(items)]
        value = {"choice": ["left", "right", "tie"][i % 3], "reason": f"client {i}", "seconds_taken": 3.0}
        try:
            label = label_submit(item=item, annotator=users[who], value=value, client_token=forms[who])
        except DEFINITE as exc:
            label = exc
        return edit, label

    results = run_clients(work, CLIENTS)

    crashed = [r for r in results if isinstance(r, Exception)]
    assert crashed == [], f"clients without a definite answer: {crashed!r}"

    # Edits: no lost update — the version moved once per success and the revisions form one chain.
    winners = [f"edit by client {i}" for i, (edit, _) in enumerate(results) if edit == "ok"]
    assert len(winners) >= 1
    checklist_item.refresh_from_db()
    assert checklist_item.version == start_version + len(winners)
    revisions = list(AuditLog.objects.filter(
        content_type=ContentType.objects.get_for_model(ChecklistItem), object_id=checklist_item.pk, action="proposable.edit",
    ).order_by("pk"))
    assert sorted(r.after["text"] for r in revisions) == sorted(winners)
    for earlier, later in zip(revisions, revisions[1:]):
        assert later.before["text"] == earlier.after["text"], "an edit was based on a lost state"
    assert checklist_item.text == revisions[-1].after["text"]

    # Labels: one per item and annotator, the same label for both submissions of a form.
    labels = list(Label.objects.filter(project=project))
    assert len(labels) == sum(item.labels_needed for item in items)  # every slot filled, the rest refused
    assert not Label.objects.filter(project=project).values("item", "annotator").annotate(n=Count("pk")).filter(n__gt=1)
    assert len({label.client_token for label in labels}) == len(labels)
    for who in range(ANNOTATORS):
        answers = [results[i][1] for i in (who, who + ANNOTATORS)]
        saved = [a for a in answers if isinstance(a, Label)]
        if saved:
            assert len(saved) == 2 and saved[0].pk == saved[1].pk, f"form {who} answered {answers!r}"
    for item in items:
        item.refresh_from_db()
        done = Label.objects.filter(item=item).count()
        assert done == item.labels_done <= item.labels_needed
        if done == item.labels_needed:
            assert item.status != AnnotationItem.Status.OPEN
    assert Counter(type(label).__name__ for _, label in results)["Label"] == 2 * len(labels)

    # Preferences: exactly one row per pairwise label.
    preferences = PairwisePreference.objects.filter(project=project)
    assert preferences.count() == len(labels)
    assert set(preferences.values_list("label_id", flat=True)) == {label.pk for label in labels}
