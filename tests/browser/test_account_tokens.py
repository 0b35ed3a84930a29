"""The token page in Chromium: rotate shows the key once, reload shows only when it was made, revoke."""

import pytest
from rest_framework.authtoken.models import Token

from tests.factories import UserFactory
from tests.support.axe import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_token_page_shows_a_new_key_once(page, live_server, login, screenshot):
    user = UserFactory(username="scripter")
    login("scripter", "pw-for-tests")
    page.click("text=Token")
    assert page.locator("#token-state").inner_text() == "You have no token."
    page.click("button:has-text('Make a token')")
    key = Token.objects.get(user=user).key
    assert page.locator("#token-key").inner_text() == key
    screenshot("account-token-shown-once")
    assert axe_violations(page) == []
    page.goto(f"{live_server.url}/account/tokens/")
    assert key not in page.content() and "You have a token, made" in page.locator("#token-state").inner_text()
    page.click("button:has-text('Revoke')")
    assert "Token revoked" in page.locator(".messages").inner_text()
    screenshot("account-token-revoked")
    assert not Token.objects.filter(user=user).exists()
