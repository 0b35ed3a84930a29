"""The recount inside the claims INSERT (``store.claims_insert``), pinned with two connections.

The second claimer reads the item's last slot as free while the first claim is still
uncommitted, then takes the item's lock and inserts its claim only once the first has committed:
the INSERT's own count of live claims is all that stands between them and one claim too many.
PostgreSQL only: on SQLite the IMMEDIATE transaction serializes writers, and no read of a
second connection can predate a committed claim that its write then follows."""

import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotation import rules
from annotation.loop import store
from annotation.models import AnnotationItem, Assignment
from tests.annotation_factories import agreement_project, annotator, curator

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="two connections racing: PostgreSQL")

WAIT = 30  # seconds; a step that takes longer failed


@pytest.mark.django_db(transaction=True)
def test_a_claim_whose_read_predates_a_committed_claim_is_refused_by_the_recount():
    first_user, second_user = annotator("first"), annotator("second")
    project = agreement_project(curator(), [first_user, second_user], labels=["correct"])
    item = project.items.get()
    item.labels_needed, item.labels_done = 2, 1  # one slot left
    item.save()
    first_claimed, second_read, first_committed = threading.Event(), threading.Event(), threading.Event()
    outcome: dict = {}

    def first() -> None:
        try:
            with transaction.atomic():
                locked = store.item_lock(item_id=item.pk)
                outcome["first"] = store.claims_insert(project=project, items=[locked], user=first_user,
                                                       now=timezone.now())
                first_claimed.set()
                assert second_read.wait(WAIT)
            first_committed.set()
        finally:
            connection.close()

    def second() -> None:
        try:
            assert first_claimed.wait(WAIT)
            with transaction.atomic():
                # The read that picks candidates, before the first claim commits: a free slot.
                now = timezone.now()
                seen = AnnotationItem.objects.get(pk=item.pk)
                live = sum(rules.claim_live(status=c.status, expires_at=c.expires_at, now=now)
                           for c in Assignment.objects.filter(item=seen))
                outcome["seen_free"] = rules.has_free_slot(item_status=seen.status, labels_done=seen.labels_done,
                                                           labels_needed=seen.labels_needed, live_claims=live)
                second_read.set()
                assert first_committed.wait(WAIT)
                locked = store.item_lock(item_id=item.pk)
                outcome["second"] = store.claims_insert(project=project, items=[locked], user=second_user,
                                                        now=timezone.now())
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * WAIT)
    assert len(outcome["first"]) == 1
    assert outcome["seen_free"] is True  # the second read predates the first claim...
    assert outcome["second"] == []  # ...and the INSERT counted it: no claim beyond k
    live = Assignment.objects.filter(item=item, status=Assignment.Status.ACTIVE, expires_at__gt=timezone.now())
    assert list(live.values_list("user", flat=True)) == [first_user.pk]
