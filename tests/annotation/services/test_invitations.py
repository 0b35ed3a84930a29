"""Invitations by e-mail, sent through Django's SMTP backend to a real SMTP server on loopback
(aiosmtpd), each link followed as the invitee would."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Invitation, ProjectMembership
from annotation.services.invitations import invitees_parse
from core.models import AuditLog
from tests.annotation_factories import annotator, checklist_task, curator, verify_project
from tests.support.smtp import LoopbackSmtp

pytestmark = pytest.mark.django_db
PASSWORD = "correct-horse-battery-42"
LINK = re.compile(r"http://testserver/invitation/[A-Za-z0-9_-]+/")


@pytest.fixture
def smtp():
    server = LoopbackSmtp(refuse=["gone@lab.org"]).start()
    try:
        with override_settings(**server.settings()):
            yield server
    finally:
        server.stop()


@pytest.fixture
def lab():
    owner = curator("pi")
    task, _ = checklist_task(2)
    project = verify_project(owner, [], tasks=[task], name="Survey check")
    api = APIClient()
    api.force_authenticate(owner)
    return owner, project, api


def _invite(api, project, emails, **extra):
    return api.post(f"/api/projects/{project.pk}/invitations/", {"emails": emails, **extra}, format="json")


def _link_in(message) -> str:
    (link,) = LINK.findall(message.get_body(preferencelist=("plain",)).get_content())
    return link.removeprefix("http://testserver")


def test_three_invitations_arrive_by_smtp_each_link_works_once_and_revoke_kills_one(smtp, lab, client):
    owner, project, api = lab
    response = _invite(api, project, ["Ada Lovelace <Ada@Lab.org>", "bob@lab.org", "cy@lab.org"])
    assert response.status_code == 201, response.content
    assert [(row["email"], row["status"], row["name"]) for row in response.json()] == [
        ("ada@lab.org", "sent", "Ada Lovelace"), ("bob@lab.org", "sent", ""), ("cy@lab.org", "sent", "")]

    assert len(smtp.messages) == 3
    by_address = {message["To"]: message for message in smtp.messages}
    assert set(by_address) == {"ada@lab.org", "bob@lab.org", "cy@lab.org"}
    assert "Survey check" in by_address["ada@lab.org"]["Subject"]
    links = {address: _link_in(message) for address, message in by_address.items()}
    assert len(set(links.values())) == 3
    # the answer's link is the e-mailed one; the row keeps only its hash
    assert {row["email"]: row["link"].removeprefix("http://testserver") for row in response.json()} == links
    assert not Invitation.objects.filter(token_hash__in=[link.split("/")[2] for link in links.values()]).exists()

    cy = Invitation.objects.get(email="cy@lab.org")
    assert api.post(f"/api/projects/{project.pk}/invitations/{cy.pk}/revoke/").json()["status"] == "revoked"
    refused = client.get(links["cy@lab.org"])
    assert refused.status_code == 410 and b"withdrawn" in refused.content

    # Ada has no account: opening marks opened, accepting makes her account and membership
    page = client.get(links["ada@lab.org"])
    assert page.status_code == 200 and b"Survey check" in page.content
    assert Invitation.objects.get(email="ada@lab.org").status == "opened"
    joined = client.post(links["ada@lab.org"], {"action": "create", "username": "ada", "password1": PASSWORD,
                                                "password2": PASSWORD})
    assert joined.status_code == 302 and joined["Location"] == f"/annotate/{project.pk}/"
    ada = get_user_model().objects.get(username="ada")
    assert (ada.email, ada.is_staff, ada.profile.role) == ("ada@lab.org", False, "annotator")
    assert ProjectMembership.objects.get(project=project, user=ada).role == "annotator"
    assert client.get(f"/annotate/{project.pk}/").status_code == 200  # signed in, in the workspace
    assert client.get(links["ada@lab.org"])["Location"] == f"/annotate/{project.pk}/"  # Ada again: on to it
    client.logout()
    assert client.get(links["ada@lab.org"]).status_code == 410  # anyone else: used once

    # Bob has an account already: signed in, he joins with it
    bob = annotator("bob")
    client.force_login(bob)
    assert client.get(links["bob@lab.org"]).status_code == 200
    assert client.post(links["bob@lab.org"], {"action": "join"}).status_code == 302
    assert ProjectMembership.objects.filter(project=project, user=bob).exists()

    listed = {row["email"]: row for row in api.get(f"/api/projects/{project.pk}/invitations/").json()["results"]}
    assert {email: row["status"] for email, row in listed.items()} == {
        "ada@lab.org": "joined", "bob@lab.org": "joined", "cy@lab.org": "revoked"}
    assert listed["ada@lab.org"]["username"] == "ada"
    actions = list(AuditLog.objects.filter(project_id=project.pk, action__startswith="invitation.")
                   .values_list("action", flat=True))
    assert sorted(actions) == sorted(["invitation.create"] * 3 + ["invitation.send"] * 3 + ["invitation.revoke"]
                                     + ["invitation.open"] * 2 + ["invitation.join"] * 2)


def test_bad_addresses_are_a_400_naming_each_and_nothing_is_stored_or_sent(smtp, lab):
    owner, project, api = lab
    member = annotator("member")
    member.email = "Member@Lab.org"
    member.save()
    ProjectMembership.objects.create(project=project, user=member, role="annotator")
    response = _invite(api, project, ["ok@lab.org", "not-an-address", "x@", "ok@lab.org", "member@lab.org"])
    assert response.status_code == 400
    text = str(response.json())
    assert "member@lab.org is already a member" in text
    assert "'not-an-address' is not an e-mail address" in text and "'x@' is not an e-mail address" in text
    assert "ok@lab.org is listed twice" in text
    assert not Invitation.objects.exists() and smtp.messages == []


def test_a_refused_mailbox_fails_only_its_own_invitation_and_resend_draws_a_new_link(smtp, lab, client):
    owner, project, api = lab
    response = _invite(api, project, ["gone@lab.org", "dee@lab.org"])
    rows = {row["email"]: row for row in response.json()}
    assert rows["gone@lab.org"]["status"] == "failed" and "550" in rows["gone@lab.org"]["send_error"]
    assert rows["dee@lab.org"]["status"] == "sent"
    assert [message["To"] for message in smtp.messages] == ["dee@lab.org"]
    # the failed one's link still works when the curator copies it from the answer
    assert client.get(rows["gone@lab.org"]["link"]).status_code == 200

    dee = Invitation.objects.get(email="dee@lab.org")
    old_link, old_expiry = rows["dee@lab.org"]["link"], dee.expires_at
    resent = api.post(f"/api/projects/{project.pk}/invitations/{dee.pk}/resend/")
    assert resent.status_code == 200 and resent.json()["send_count"] == 2
    assert len(smtp.messages) == 2 and _link_in(smtp.messages[1]) == resent.json()["link"].removeprefix("http://testserver")
    assert client.get(old_link).status_code == 410
    assert client.get(resent.json()["link"]).status_code == 200
    dee.refresh_from_db()
    assert dee.expires_at >= old_expiry

    # a second invitation to a pending address is refused: resend that one
    again = _invite(api, project, ["dee@lab.org"])
    assert again.status_code == 400 and "already invited" in str(again.json())


def test_an_expired_link_says_so(smtp, lab, client):
    owner, project, api = lab
    link = _invite(api, project, ["eve@lab.org"]).json()[0]["link"]
    Invitation.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    page = client.get(link)
    assert page.status_code == 410 and b"expired" in page.content
    assert client.post(link, {"action": "create", "username": "eve", "password1": PASSWORD,
                              "password2": PASSWORD}).status_code == 410
    assert not get_user_model().objects.filter(username="eve").exists()


def test_a_refused_acceptance_keeps_the_input_and_the_invitation_open(smtp, lab, client):
    owner, project, api = lab
    annotator("taken")
    link = _invite(api, project, ["fay@lab.org"]).json()[0]["link"]
    refused = client.post(link, {"action": "create", "username": "taken", "password1": PASSWORD, "password2": PASSWORD})
    assert refused.status_code == 400 and b"already exists" in refused.content and b'value="taken"' in refused.content
    short = client.post(link, {"action": "create", "username": "fay", "password1": "abc", "password2": "abc"})
    assert short.status_code == 400 and b"password" in short.content
    assert Invitation.objects.get(email="fay@lab.org").status == "sent"  # still open: nothing was stored
    assert client.post(link, {"action": "create", "username": "fay", "password1": PASSWORD,
                              "password2": PASSWORD}).status_code == 302


def test_only_the_projects_curators_invite(smtp, lab):
    owner, project, api = lab
    member, stranger = annotator("member"), annotator("stranger")
    ProjectMembership.objects.create(project=project, user=member, role="annotator")
    for user, expected in ((member, 403), (stranger, 404)):
        other = APIClient()
        other.force_authenticate(user)
        assert _invite(other, project, ["gus@lab.org"]).status_code == expected
        assert other.get(f"/api/projects/{project.pk}/invitations/").status_code == expected
    assert not Invitation.objects.exists() and smtp.messages == []


def test_the_members_page_invites_a_pasted_list_and_an_uploaded_csv(smtp, lab, client):
    owner, project, api = lab
    client.force_login(owner)
    upload = SimpleUploadedFile("experts.csv", b"email,name\nhal@lab.org,Hal Jordan\n")
    page = client.post(f"/annotate/{project.pk}/members/", {
        "action": "email_invite", "email-emails": "Ida Wells <ida@lab.org>\njo@lab.org", "email-role": "curator",
        "email-emails_file": upload})
    assert page.status_code == 201
    html = page.content.decode()
    assert html.count('data-copy="invitation-link-') == 3 and len(LINK.findall(html)) == 3
    assert {message["To"] for message in smtp.messages} == {"hal@lab.org", "ida@lab.org", "jo@lab.org"}
    assert set(Invitation.objects.values_list("email", "name", "role")) == {
        ("hal@lab.org", "Hal Jordan", "curator"), ("ida@lab.org", "Ida Wells", "curator"), ("jo@lab.org", "", "curator")}

    jo = Invitation.objects.get(email="jo@lab.org")
    revoked = client.post(f"/annotate/{project.pk}/members/", {"action": "revoke", "invitation": jo.pk}, follow=True)
    assert b"revoked" in revoked.content
    jo.refresh_from_db()
    assert jo.status == "revoked"
    ida = Invitation.objects.get(email="ida@lab.org")
    resent = client.post(f"/annotate/{project.pk}/members/", {"action": "resend", "invitation": ida.pk})
    assert resent.status_code == 200 and len(smtp.messages) == 4 and smtp.messages[-1]["To"] == "ida@lab.org"
    assert LINK.findall(resent.content.decode()) == ["http://testserver" + _link_in(smtp.messages[-1])]
    unknown = client.post(f"/annotate/{project.pk}/members/", {"action": "revoke", "invitation": "9" * 30})
    assert unknown.status_code == 400 and b"No such invitation" in unknown.content

    bad = client.post(f"/annotate/{project.pk}/members/", {"action": "email_invite", "email-emails": "a@lab.org\nnope",
                                                           "email-role": "annotator"})
    assert bad.status_code == 400 and "line 2: &#x27;nope&#x27; has no e-mail address" in bad.content.decode()
    bad_file = client.post(f"/annotate/{project.pk}/members/", {
        "action": "email_invite", "email-role": "annotator",
        "email-emails_file": SimpleUploadedFile("list.csv", b"email\nkim@lab.org\nkim@\n")})
    assert bad_file.status_code == 400 and "list.csv: line 3: &#x27;kim@&#x27; is not an e-mail address" in bad_file.content.decode()
    assert Invitation.objects.count() == 3


def test_invitees_parse_reads_lines_names_and_csv():
    text = "email,name\nAda <ADA@lab.org>\n\nbob@lab.org, Bob Smith\n# a comment\ncy@lab.org; dee@lab.org\n"
    assert invitees_parse(text) == [("Ada", "ada@lab.org"), ("Bob Smith", "bob@lab.org"), ("", "cy@lab.org"),
                                    ("", "dee@lab.org")]
    with pytest.raises(ValueError) as caught:
        invitees_parse("ok@lab.org\nno address here\nbad@")
    assert str(caught.value) == ("emails: line 2: 'no address here' has no e-mail address; "
                                 "line 3: 'bad@' is not an e-mail address")


@pytest.mark.django_db(transaction=True)
def test_an_address_invited_by_another_request_meanwhile_is_a_400_not_a_500():
    """A double click: the other request commits ``b@lab.org`` between this one's checks and its insert."""
    import threading

    from django.db import connection

    from annotation.services.invitations import invitations_create

    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer: the other request would wait for this one, never overlap it")
    owner = curator("pi")
    task, _ = checklist_task(1)
    project = verify_project(owner, [], tasks=[task])

    def other_request():
        try:
            Invitation.objects.create(project=project, email="b@lab.org", token_hash="f" * 64,
                                      expires_at=timezone.now() + timedelta(days=1))
        finally:
            connection.close()

    def link_for(token):  # called inside the transaction, after the checks and the first insert
        if not Invitation.objects.filter(email="b@lab.org").exists():
            thread = threading.Thread(target=other_request)
            thread.start()
            thread.join()
        return f"http://testserver/invitation/{token}/"

    with override_settings(EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"):
        with pytest.raises(ValueError, match="just invited by another request"):
            invitations_create(project=project, invitees=[("", "a@lab.org"), ("", "b@lab.org")], role="annotator",
                               actor=owner, link_for=link_for)
    assert list(Invitation.objects.values_list("email", flat=True)) == ["b@lab.org"]  # a@ rolled back


def test_a_mail_server_that_is_down_marks_the_invitations_undelivered_and_keeps_their_links(lab, client):
    owner, project, api = lab
    closed = LoopbackSmtp()  # a free port nobody listens on
    with override_settings(**closed.settings()):
        response = _invite(api, project, ["hal@lab.org", "ida@lab.org"])
    assert response.status_code == 201
    rows = response.json()
    assert [row["status"] for row in rows] == ["failed", "failed"]
    assert all("ConnectionRefusedError" in row["send_error"] for row in rows)
    assert client.get(rows[0]["link"]).status_code == 200  # the copied link works
    listed = api.get(f"/api/projects/{project.pk}/invitations/?status=failed").json()
    assert listed["count"] == 1  # hal's was opened just now
    assert api.get(f"/api/projects/{project.pk}/invitations/?state=failed").status_code == 400
