"""Discussion on items: the blind rule, mentions and their notifications, audit, sanitizing, the panel."""

import pytest
from django.core import mail
from django.test import Client

from annotation.comments.models import CommentNotification, ItemComment
from annotation.loop.claims import claim_next_item
from annotation.loop.labels import label_submit
from annotation.models import AnnotationItem
from annotation.services.projects import project_update
from core.models import AuditLog
from tests.annotation_factories import agreement_project, pairwise_project, token
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db


def comments_path(item) -> str:
    return f"/api/annotation-items/{item.pk}/comments/"


@pytest.fixture
def blind(owner, alice, bob):
    """A blind agreement project (it reveals after each label) with alice holding its first item."""
    project = agreement_project(owner, [alice, bob], blind=True)
    claim = claim_next_item(project=project, user=alice)
    return project, claim.item


def test_annotator_comments_only_after_their_own_label_in_a_blind_project(blind, alice):
    project, item = blind
    api = client_for(alice)
    before = api.post(comments_path(item), {"text": "Is this verdict right?"}, format="json")
    assert before.status_code == 403 and "label" in before.json()["detail"]
    assert api.get(comments_path(item)).status_code == 403
    assert not ItemComment.objects.exists()
    label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=token())
    after = api.post(comments_path(item), {"text": "Is this verdict right?"}, format="json")
    assert after.status_code == 201 and after.json()["author"] == "alice"
    listed = api.get(comments_path(item)).json()
    assert [row["text"] for row in listed] == ["Is this verdict right?"]
    row = AuditLog.objects.get(action="comment.post")
    assert (row.object_id, row.project_id, row.actor_id) == (item.pk, project.pk, alice.pk)
    assert row.after["text"] == "Is this verdict right?"


def test_an_item_out_of_reach_answers_as_a_missing_one(blind, bob, owner, alice):
    project, item = blind
    api = client_for(bob)  # a member, but the item is alice's and bob never labelled it
    refused = api.post(comments_path(item), {"text": "hello"}, format="json")
    missing = api.post("/api/annotation-items/987654/comments/", {"text": "hello"}, format="json")
    assert refused.status_code == missing.status_code == 404
    assert refused.json() == missing.json()
    assert api.get(comments_path(item)).json() == api.get("/api/annotation-items/987654/comments/").json()
    outsider = client_for(agreement_project(owner, [], name="other").created_by)  # a curator of another project...
    assert outsider.get(comments_path(item)).status_code in (200, 403)  # ...is a global curator: a curator here
    stranger = Client()
    assert stranger.get(comments_path(item)).status_code in (401, 403)


def test_reveal_at_close_keeps_the_discussion_closed_until_the_study_closes(owner, alice):
    project = pairwise_project(owner, [alice], blind=True)
    assert project.reveal == "close"
    claim = claim_next_item(project=project, user=alice)
    label_submit(item=claim.item, annotator=alice, value={"choice": "left"}, client_token=token())
    api = client_for(alice)
    assert api.post(comments_path(claim.item), {"text": "tie?"}, format="json").status_code == 403
    project_update(project=project, actor=owner, status="closed")
    assert api.post(comments_path(claim.item), {"text": "tie?"}, format="json").status_code == 201


def test_not_blind_anyone_of_the_project_discusses_any_item(owner, alice):
    project = agreement_project(owner, [alice], blind=False)
    item = AnnotationItem.objects.filter(project=project).first()
    assert client_for(alice).post(comments_path(item), {"text": "first"}, format="json").status_code == 201


def test_mentions_notify_who_may_read_and_email_them(blind, owner, alice, bob, settings,
                                                     django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    owner.email = "curator@lab.example"
    owner.save()
    project, item = blind
    label_submit(item=item, annotator=alice, value={"label": "omitted"}, client_token=token())
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(alice).post(comments_path(item), {"text": "@curator @bob @nobody please look: omitted?"},
                                        format="json")
    assert answer.status_code == 201
    # bob has not labelled this item of a blind project: he is not led to it
    assert answer.json()["mentions"] == ["curator"]
    note = CommentNotification.objects.get()
    assert note.user == owner and note.emailed
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["curator@lab.example"]
    assert "omitted" not in mail.outbox[0].body  # the text stays in the project
    assert f"http://testserver/annotate/{project.pk}/items/{item.pk}/comments/" in mail.outbox[0].body
    unread = client_for(owner).get("/api/notifications/").json()
    assert [(row["item"], row["author"]) for row in unread] == [(item.pk, "alice")]
    listing = Client()
    listing.force_login(owner)
    assert f'href="/annotate/{project.pk}/items/{item.pk}/comments/"' in listing.get("/annotate/").content.decode()
    client_for(owner).get(comments_path(item))  # reading the discussion reads its mentions
    assert client_for(owner).get("/api/notifications/").json() == []


def test_text_is_sanitized_when_rendered_and_bad_input_named(blind, alice):
    project, item = blind
    label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=token())
    api = client_for(alice)
    answer = api.post(comments_path(item), {"text": "**why** <script>alert(1)</script><img src=x onerror=alert(2)>"
                                                    " [see](javascript:alert(3))"}, format="json")
    html = answer.json()["html"]
    assert "<strong>why</strong>" in html and "<script" not in html and "<img" not in html
    assert "href=\"javascript" not in html
    empty = api.post(comments_path(item), {"text": "   "}, format="json")
    assert empty.status_code == 400 and "text" in empty.json()
    assert ItemComment.objects.count() == 1


def test_panel_in_the_workspace(blind, alice):
    project, item = blind
    client = Client()
    client.force_login(alice)
    page = client.get(f"/annotate/{project.pk}/items/{item.pk}/")
    assert b'data-role="discussion"' in page.content
    panel = f"/annotate/{project.pk}/items/{item.pk}/comments/"
    closed = client.get(panel, headers={"HX-Request": "true"})
    assert closed.status_code == 200 and b'data-role="comments-closed"' in closed.content
    assert client.post(panel, {"text": "x"}, headers={"HX-Request": "true"}).status_code == 403
    label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=token())
    posted = client.post(panel, {"text": "Looks *fine*"}, headers={"HX-Request": "true"})
    assert posted.status_code == 200 and b"<em>fine</em>" in posted.content
    assert client.post(panel, {"text": ""}, headers={"HX-Request": "true"}).status_code == 422
    assert client.post(panel, {"text": "again"})["Location"] == panel  # without JavaScript: back to the page


def test_comments_in_the_curators_export(blind, owner, alice):
    from annotation.exporters import annotation_export_scope, comment_rows

    project, item = blind
    label_submit(item=item, annotator=alice, value={"label": "correct"}, client_token=token())
    client_for(alice).post(comments_path(item), {"text": "agreed @curator"}, format="json")
    rows = list(comment_rows(annotation_export_scope(user=owner, project_id=project.pk).comments))
    assert [(row["item_id"], row["author"], row["text"], row["mentions"]) for row in rows] == [
        (item.pk, "alice", "agreed @curator", ["curator"])]  # k=1: settled by alice's label, the curator reads it
    bob_rows = list(comment_rows(annotation_export_scope(user=alice, project_id=project.pk).comments))
    assert len(bob_rows) == 1
