from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.loop.claims import assignment_release, assignment_skip, claim_next_item, skips_revisit
from core.models import AuditLog
from annotation.models import Assignment
from annotation.services.errors import ClaimLostError, ProjectNotOpenError
from annotation.loop.labels import label_submit
from annotation.services.projects import project_set_status
from tests.annotation_factories import agreement_project, annotator, token
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

CORRECT = {"label": "correct"}


def test_ordering_closest_to_completion_then_least_annotated_then_position(owner, alice, bob, carol):
    project = agreement_project(owner, [alice, bob, carol], labels=["correct"] * 4, overlap=3)
    first, second, third, fourth = project.items.order_by("position")
    # third item: 2 of 3 labels; second: 1 of 3; first and fourth: none.
    for user in (alice, bob):
        label_submit(item=third, annotator=user, value=CORRECT, client_token=token())
    label_submit(item=second, annotator=alice, value=CORRECT, client_token=token())

    assert claim_next_item(project=project, user=carol).item == third
    dave = annotator("dave")
    project.memberships.create(user=dave, role="annotator")
    # third is now fully claimed (2 labels + carol's claim): next closest is second, then position.
    assert claim_next_item(project=project, user=dave).item == second
    erin = annotator("erin")
    project.memberships.create(user=erin, role="annotator")
    assert claim_next_item(project=project, user=erin).item == second
    frank = annotator("frank")
    project.memberships.create(user=frank, role="annotator")
    assert claim_next_item(project=project, user=frank).item == first


def test_never_offers_an_item_the_user_labelled(owner, alice):
    project = agreement_project(owner, [alice], labels=["correct", "correct"], overlap=2)
    claim = claim_next_item(project=project, user=alice)
    label_submit(item=claim.item, annotator=alice, value=CORRECT, client_token=token())
    assert claim_next_item(project=project, user=alice).item != claim.item
    assert Assignment.objects.get(pk=claim.pk).status == Assignment.Status.SUBMITTED


def test_asking_again_returns_the_held_claim(owner, alice):
    project = agreement_project(owner, [alice])
    claim = claim_next_item(project=project, user=alice)
    again = claim_next_item(project=project, user=alice)
    assert again.pk == claim.pk
    assert Assignment.objects.filter(user=alice).count() == 1
    assert AuditLog.objects.filter(action="assignment.claim").count() == 1


def test_expired_claims_are_reclaimed_by_others(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=["correct"], overlap=1)
    claim = claim_next_item(project=project, user=alice)
    assert claim_next_item(project=project, user=bob) is None  # the only slot is held

    past = timezone.now() - timedelta(seconds=1)
    Assignment.objects.filter(pk=claim.pk).update(claimed_at=past - project.hold_duration, expires_at=past)
    reclaimed = claim_next_item(project=project, user=bob)
    assert reclaimed.item == claim.item
    assert Assignment.objects.get(pk=claim.pk).status == Assignment.Status.EXPIRED

    # Alice comes back late: bob holds the only slot, so her label is refused.
    with pytest.raises(ClaimLostError, match="expired and its 1 slots are taken; your label was not saved"):
        label_submit(item=claim.item, annotator=alice, value=CORRECT, client_token=token())


def test_a_late_label_is_accepted_while_the_slot_is_still_free(owner, alice):
    project = agreement_project(owner, [alice], labels=["correct"], overlap=1)
    claim = claim_next_item(project=project, user=alice)
    Assignment.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    label = label_submit(item=claim.item, annotator=alice, value=CORRECT, client_token=token())
    assert label.item.labels_done == 1


def test_expired_own_claim_is_replaced_on_asking_again(owner, alice):
    project = agreement_project(owner, [alice], labels=["correct"], overlap=1)
    claim = claim_next_item(project=project, user=alice)
    Assignment.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    again = claim_next_item(project=project, user=alice)
    assert again.pk != claim.pk and again.item == claim.item
    assert again.expires_at > timezone.now()


def test_skipped_items_are_never_offered_again(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=["correct", "correct"], overlap=1)
    claim = claim_next_item(project=project, user=alice)
    assignment_skip(assignment=claim, user=alice)
    offered = claim_next_item(project=project, user=alice)
    assert offered.item != claim.item
    label_submit(item=offered.item, annotator=alice, value=CORRECT, client_token=token())
    assert claim_next_item(project=project, user=alice) is None
    # The skipped item is free for others.
    assert claim_next_item(project=project, user=bob).item == claim.item
    assert AuditLog.objects.filter(action="assignment.skip", actor=alice).count() == 1


def test_skipped_items_come_back_when_revisited(owner, alice, client):
    from django.urls import reverse

    project = agreement_project(owner, [alice], labels=["correct", "correct"], overlap=1)
    first = claim_next_item(project=project, user=alice)
    assignment_skip(assignment=first, user=alice)
    second = claim_next_item(project=project, user=alice)
    label_submit(item=second.item, annotator=alice, value=CORRECT, client_token=token())
    assert claim_next_item(project=project, user=alice) is None
    client.force_login(alice)
    done = client.get(reverse("annotation:workspace", args=[project.pk])).content.decode()
    assert "Revisit the 1 item you skipped" in done
    assert client.post(reverse("annotation:revisit_skipped", args=[project.pk])).status_code == 302
    assert claim_next_item(project=project, user=alice).item == first.item
    event = AuditLog.objects.get(action="assignment.revisit_skipped")
    assert (event.actor, event.before) == (alice, {"skipped_items": [first.item_id]})
    assert skips_revisit(project=project, user=alice) == 0  # nothing skipped any more


def test_released_items_may_come_back(owner, alice):
    project = agreement_project(owner, [alice], labels=["correct"], overlap=1)
    claim = claim_next_item(project=project, user=alice)
    assignment_release(assignment=claim, user=alice)
    assert claim_next_item(project=project, user=alice).item == claim.item


def test_overlap_is_never_exceeded_by_claims(owner):
    users = [annotator(f"a{i}") for i in range(5)]
    project = agreement_project(owner, users, labels=["correct"], overlap=2)
    claims = [claim_next_item(project=project, user=user) for user in users]
    assert [c is not None for c in claims] == [True, True, False, False, False]


def test_only_labellers_of_open_projects_get_items(owner, alice):
    project = agreement_project(owner, [alice])
    viewer = UserFactory(username="vic")
    project.memberships.create(user=viewer, role="viewer")
    with pytest.raises(PermissionError, match=r"vic may not label items of project 'agreement' \(role: viewer\)"):
        claim_next_item(project=project, user=viewer)
    with pytest.raises(PermissionError, match=r"stranger may not label items of project 'agreement' \(role: not a member\)"):
        claim_next_item(project=project, user=UserFactory(username="stranger"))
    project_set_status(project=project, status="paused", actor=owner)
    with pytest.raises(ProjectNotOpenError, match="project 'agreement' is paused"):
        claim_next_item(project=project, user=alice)


def test_skipping_by_item_looks_up_the_users_claim(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], overlap=2)
    claim = claim_next_item(project=project, user=alice)
    assert assignment_skip(item=claim.item, user=bob) is None  # bob holds no claim on it: nothing to skip
    skipped = assignment_skip(item=claim.item, user=alice)
    assert (skipped.pk, skipped.status) == (claim.pk, Assignment.Status.SKIPPED)
    assert assignment_skip(item=claim.item, user=alice) is None
    with pytest.raises(TypeError, match="assignment_skip takes either item or assignment"):
        assignment_skip(user=alice)


def test_label_and_next_keeps_the_label_audit_row_while_another_claim_is_held(owner, alice):
    # Before: with a usable claim held, the next claim returned early and the label's deferred
    # audit row was never written.
    from annotation.loop.claims import claim_next_items
    from annotation.loop.labels import label_submit_and_claim
    from annotation.loop.labels import Submission

    project = agreement_project(owner, [alice], labels=["correct"] * 3)
    first, second = claim_next_items(project=project, user=alice, count=2)
    result, following = label_submit_and_claim(
        annotator=alice, submission=Submission(item_id=first.item_id, value=CORRECT, client_token=token()))
    assert result.error is None and [claim.pk for claim in following] == [second.pk]
    assert AuditLog.objects.filter(action="label.submit", actor=alice, object_id=first.item_id).count() == 1
    assert AuditLog.objects.filter(action="assignment.claim", actor=alice).count() == 2  # nothing claimed anew
