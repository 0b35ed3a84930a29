"""Onboarding in Chromium at 1366×768: the login page's "Sign in with …" followed through a real
OpenID provider and back, and the members page inviting by e-mail (links with copy buttons,
status per invitee, revoke). axe-core clean on each page, screenshots for a person to look at."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import override_settings

from annotation.models import Invitation, ProjectMembership
from annotation.services.invitations import invitations_create
from core.oidc import oidc_discovery_forget
from tests.annotation_factories import checklist_task, curator, verify_project
from tests.support.axe import axe_violations
from tests.support.browser import SCREENSHOTS
from tests.support.oidc_provider.process import CLIENT_ID, PASSWORD, oidc_provider, studio_sso_settings

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
VIEWPORT = {"width": 1366, "height": 768}


def test_sign_in_with_the_institutions_provider_lands_an_invited_expert_in_the_project(page, live_server,
                                                                                     screenshot, tmp_path):
    page.set_viewport_size(VIEWPORT)
    owner = curator("pi")
    task, _ = checklist_task(1)
    project = verify_project(owner, [], tasks=[task], name="Expert check")
    invitations_create(project=project, invitees=[("Ada", "ada@lab.org")], role="annotator", actor=owner,
                       link_for=lambda token: f"{live_server.url}/invitation/{token}/")
    with oidc_provider(tmp_path / "provider.sqlite3", f"{live_server.url}/oidc/callback/",
                       ("ada:ada@lab.org",)) as issuer:
        oidc_discovery_forget()
        with override_settings(**studio_sso_settings(issuer, OIDC_ALLOWED_DOMAINS=["lab.org"],
                                                     OIDC_PROVIDER_NAME="Lab ID")):
            page.goto(f"{live_server.url}/oidc/callback/?error=access_denied&error_description=The+user+said+no")
            assert "refused the sign-in (The user said no)" in page.locator("[data-role=sso-refused]").inner_text()
            screenshot("sso-refused")
            assert axe_violations(page) == []
            page.goto(f"{live_server.url}/login/")
            button = page.locator("[data-role=sso-login]")
            assert button.inner_text() == "Sign in with Lab ID"
            screenshot("login-with-sso")
            assert axe_violations(page) == []
            with page.expect_request(re.compile(re.escape(issuer) + r"/authorize")) as authorize:
                button.click()
            assert "code_challenge=" in authorize.value.url and f"client_id={CLIENT_ID}" in authorize.value.url
            page.fill("input[name=username]", "ada")  # the provider's own login form
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: url.startswith(live_server.url) and "/oidc/" not in url)
            ada = get_user_model().objects.get(email="ada@lab.org")
            assert ProjectMembership.objects.filter(project=project, user=ada, role="annotator").exists()
            page.goto(f"{live_server.url}/annotate/")
            assert "Expert check" in page.content()
        oidc_discovery_forget()


def test_the_members_page_invites_by_email_with_copy_buttons_and_status(page, live_server, login, screenshot):
    page.set_viewport_size(VIEWPORT)
    owner = curator("pi")
    owner.set_password("pw-for-tests")
    owner.save()
    task, _ = checklist_task(1)
    project = verify_project(owner, [], tasks=[task], name="Expert check")
    login("pi", "pw-for-tests")
    page.goto(f"{live_server.url}/annotate/{project.pk}/members/")
    page.fill("#id_email-emails", "Ada Lovelace <ada@lab.org>\nbob@lab.org\ncy@lab.org")
    page.click("#member-email-invite button[type=submit]")
    links = page.locator("#invitation-links code")
    assert links.count() == 3 and len(mail.outbox) == 3
    page.locator("#invitation-links button[data-copy]").first.click()
    status = page.locator("#invitation-links [data-copy-status]").first
    page.wait_for_function("el => el.textContent.length > 0", arg=status.element_handle())
    assert status.inner_text() in ("Copied.", "Selected: press Ctrl+C to copy.")
    assert page.locator("#invitations tbody tr").count() == 3
    screenshot("members-invitations-sent")
    assert axe_violations(page) == []

    # Bob opens his link (status: opened); the curator revokes Cy's
    bob_link = re.search(r"http://\S+/invitation/\S+/", next(m.body for m in mail.outbox if m.to == ["bob@lab.org"]))
    other = page.context.browser.new_context(viewport=VIEWPORT).new_page()
    other.goto(bob_link.group(0))
    assert "Join “Expert check”" in other.content()
    other.screenshot(path=str(SCREENSHOTS / "invitation-accept.png"), full_page=True)
    assert axe_violations(other) == []
    other.context.close()
    page.goto(f"{live_server.url}/annotate/{project.pk}/members/")
    page.click("button[aria-label='Revoke the invitation of cy@lab.org']")
    assert "revoked" in page.locator(".messages").inner_text()
    statuses = dict(Invitation.objects.values_list("email", "status"))
    assert statuses == {"ada@lab.org": "sent", "bob@lab.org": "opened", "cy@lab.org": "revoked"}
    rows = page.locator("#invitations tbody tr")
    assert sorted(rows.nth(n).get_attribute("data-status") for n in range(3)) == ["opened", "revoked", "sent"]
    screenshot("members-invitations-status")
    assert axe_violations(page) == []
