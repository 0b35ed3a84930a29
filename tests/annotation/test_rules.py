"""Two rules of ``annotation.rules`` pinned where the loop applies them (its SQL in
``annotation.loop.store``, the ORM filters): the claim order's second key, "least labelled",
and a claim's expiry at exactly now (a claim whose time is now is no longer live)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.loop import store
from annotation.models import AnnotationItem, Assignment
from annotation.rules import claim_live, claim_order, claims_lapsed, claims_live
from tests.annotation_factories import agreement_project


def test_claim_order_breaks_a_tie_in_what_is_left_by_the_least_labelled():
    a = claim_order(labels_needed=3, labels_done=1, position=1, pk=1)  # two to go, one given
    b = claim_order(labels_needed=2, labels_done=0, position=2, pk=2)  # two to go, none given
    assert sorted([a, b]) == [b, a]


@pytest.mark.django_db
def test_the_loop_hands_out_the_least_labelled_of_equally_unfinished_items(owner, alice):
    project = agreement_project(owner, [alice], labels=("correct", "omitted", "correct"))
    first, second, third = AnnotationItem.objects.filter(project=project).order_by("position")
    AnnotationItem.objects.filter(pk=first.pk).update(labels_needed=3, labels_done=1)  # 2 to go, 1 given
    AnnotationItem.objects.filter(pk=second.pk).update(labels_needed=2, labels_done=0)  # 2 to go, 0 given
    AnnotationItem.objects.filter(pk=third.pk).update(labels_needed=1, labels_done=0)  # 1 to go: first of all
    found = store.claimable_items(project=project, user=alice, now=timezone.now(), passed_over=[], limit=3)
    assert [item.pk for item in found] == [third.pk, second.pk, first.pk]


def test_a_claim_expiring_exactly_now_is_not_live():
    now = timezone.now()
    assert not claim_live(status=Assignment.Status.ACTIVE, expires_at=now, now=now)
    assert claim_live(status=Assignment.Status.ACTIVE, expires_at=now + timedelta(microseconds=1), now=now)


@pytest.mark.django_db
def test_a_claim_expiring_exactly_now_frees_its_slot_in_the_loop_and_the_filters(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=("correct",))
    item = AnnotationItem.objects.get(project=project)  # k = 1: bob's claim holds the only slot
    now = timezone.now()
    claim = Assignment.objects.create(project=project, item=item, user=bob, claimed_at=now - timedelta(minutes=15),
                                      expires_at=now)
    found = store.claimable_items(project=project, user=alice, now=now, passed_over=[], limit=1)
    assert [i.pk for i in found] == [item.pk] and found[0].stale  # free, its claim marked for expiry
    assert not Assignment.objects.filter(claims_live(now), pk=claim.pk).exists()
    assert Assignment.objects.filter(claims_lapsed(now), pk=claim.pk).exists()
    later = now + timedelta(microseconds=1)
    Assignment.objects.filter(pk=claim.pk).update(expires_at=later)  # a microsecond left: still bob's
    assert store.claimable_items(project=project, user=alice, now=now, passed_over=[], limit=1) == []
    assert Assignment.objects.filter(claims_live(now), pk=claim.pk).exists()
    assert not Assignment.objects.filter(claims_lapsed(now), pk=claim.pk).exists()
