"""Twenty annotators asking for items and submitting at once, each on its own PostgreSQL connection."""

import random
import threading
import uuid

import pytest
from django.db import connection
from django.db.models import Count, F, Q
from django.utils import timezone

from annotation.loop.claims import claim_next_item, claim_next_items
from core.models import AuditLog
from annotation.models import AnnotationItem, Assignment, Label, PairwisePreference
from annotation.services.errors import ClaimLostError
from annotation.loop.labels import Submission, label_submit, label_submit_many
from tests.annotation_factories import annotator, curator, pairwise_project

ANNOTATORS = 20
K = 3


def over_committed_items() -> list[int]:
    """Items whose labels plus unexpired claims exceed k, seen in one snapshot."""
    active = Q(assignments__status=Assignment.Status.ACTIVE, assignments__expires_at__gt=timezone.now())
    return list(
        AnnotationItem.objects.annotate(claims=Count("assignments", filter=active))
        .filter(Q(labels_done__gt=F("labels_needed")) | Q(claims__gt=F("labels_needed") - F("labels_done")))
        .values_list("pk", flat=True)
    )


def _single(project, user, rng) -> list[int] | None:
    """One item: claim, label, send the same form again (same label, no new row)."""
    claim = claim_next_item(project=project, user=user)
    if claim is None:
        return None
    form = uuid.uuid4()
    value = {"choice": rng.choice(["left", "right", "tie"]), "seconds_taken": rng.random() * 60}
    try:
        label = label_submit(item=claim.item, annotator=user, value=value, client_token=form)
    except ClaimLostError:
        return []
    again = label_submit(item=claim.item, annotator=user, value=value, client_token=form)
    assert again.pk == label.pk
    return [label.pk]


def _batch(project, user, rng) -> list[int] | None:
    """Up to 3 items: claim them at once, submit them at once, then the same batch again."""
    claims = claim_next_items(project=project, user=user, count=3)
    if not claims:
        return None
    answers = [
        Submission(item_id=claim.item_id, client_token=uuid.uuid4(),
                   value={"choice": rng.choice(["left", "right", "tie"]), "seconds_taken": rng.random() * 60})
        for claim in claims
    ]
    results = label_submit_many(annotator=user, submissions=answers)
    for result in results:
        assert result.error is None or isinstance(result.error, ClaimLostError), result.error
    again = label_submit_many(annotator=user, submissions=answers)
    stored = [r.label.pk for r in results if r.error is None]
    assert [r.label.pk for r in again if r.error is None] == stored and not any(r.created for r in again)
    return stored


@pytest.mark.parametrize("work_on", [_single, _batch], ids=["one item at a time", "batches of 3"])
@pytest.mark.django_db(transaction=True)
def test_twenty_annotators_at_once_never_exceed_the_overlap(work_on):
    owner = curator()
    users = [annotator(f"annotator{n:02d}") for n in range(ANNOTATORS)]
    # 5 tasks × 3 systems → 6 ordered pairs each: 30 items, k = 3.
    project = pairwise_project(owner, users, n_tasks=5, n_systems=3, overlap=K)
    assert project.items.count() == 30

    start = threading.Barrier(ANNOTATORS + 1)
    done = threading.Event()
    lock = threading.Lock()
    submitted: list[int] = []
    errors: list[BaseException] = []
    violations: list[list[int]] = []

    def work(user) -> None:
        rng = random.Random(user.pk)
        try:
            start.wait()
            for _ in range(100):
                stored = work_on(project, user, rng)
                if stored is None:
                    break
                with lock:
                    submitted.extend(stored)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            with lock:
                errors.append(exc)
        finally:
            connection.close()

    def watch() -> None:
        try:
            while not done.is_set():
                found = over_committed_items()
                if found:
                    violations.append(found)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(user,)) for user in users]
    watcher = threading.Thread(target=watch)
    for thread in threads:
        thread.start()
    watcher.start()
    start.wait()
    for thread in threads:
        thread.join(timeout=120)
    done.set()
    watcher.join(timeout=30)

    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert violations == []
    assert len(submitted) == len(set(submitted)) == 30 * K
    assert Label.objects.count() == 30 * K
    assert sorted(submitted) == sorted(Label.objects.values_list("pk", flat=True))
    per_item = dict(Label.objects.values_list("item").annotate(n=Count("pk")).order_by())
    for item in AnnotationItem.objects.all():
        assert item.labels_done == per_item.get(item.pk, 0) == K
        assert item.status == "complete"
    assert PairwisePreference.objects.filter(project=project).count() == 30 * K
    assert AuditLog.objects.filter(action="label.submit").count() == 30 * K
    assert not Assignment.objects.filter(status=Assignment.Status.ACTIVE).exists()
    assert len({user_id for user_id in Label.objects.values_list("annotator", flat=True)}) > 1


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_settling_a_tasks_last_two_items_at_once_curate_it(monkeypatch):
    """Reviewer 1 settles item A and checks the task while holding its lock; reviewer 2 settles
    item B meanwhile and waits for that lock. Once reviewer 1 commits, reviewer 2 must count A as
    settled: the count may not come from before the wait."""
    from annotation.loop import settle as review
    from tests.annotation_factories import checklist_task, label_all, verify_project

    owner, first, second, third = curator(), annotator("first"), annotator("second"), annotator("third")
    task, _ = checklist_task(2)
    project = verify_project(owner, [first, second, third], tasks=[task])
    item_a, item_b = project.items.order_by("position")
    accept = {"decision": "accept"}
    for item in (item_a, item_b):
        label_all(item, [first], accept)

    checked, release = threading.Event(), threading.Event()
    check = review.task_curate_if_settled

    def holding_the_lock(**kwargs):
        curated = check(**kwargs)
        if threading.current_thread().name == "reviewer-1":
            checked.set()
            release.wait(10)  # reviewer 2 is waiting for the task's lock now
        return curated

    monkeypatch.setattr(review, "task_curate_if_settled", holding_the_lock)
    errors = []

    def review_item(item, user):
        try:
            label_submit(item=item, annotator=user, value=accept, client_token=uuid.uuid4())
        except Exception as exc:  # reported below: a thread's exception would be lost
            errors.append(exc)
        finally:
            connection.close()

    one = threading.Thread(target=review_item, args=(item_a, second), name="reviewer-1")
    two = threading.Thread(target=review_item, args=(item_b, third), name="reviewer-2")
    one.start()
    assert checked.wait(10)
    two.start()
    two.join(0.5)
    assert two.is_alive()  # waiting for the task's lock
    release.set()
    one.join(10)
    two.join(10)
    assert errors == []
    task.refresh_from_db()
    assert task.status == "curated"
    assert AuditLog.objects.filter(action="task.curate", object_id=task.pk).count() == 1
