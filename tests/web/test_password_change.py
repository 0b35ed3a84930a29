"""/password/: an account made with a generated password (create_account) sets its own."""

import pytest
from django.test import Client

from annotation.models import Role
from annotation.services.accounts import account_create

pytestmark = pytest.mark.django_db


def test_a_generated_password_is_replaced_by_the_users_own():
    _, generated = account_create(username="ben", role=Role.ANNOTATOR)
    client = Client()
    assert client.login(username="ben", password=generated)
    page = client.get("/password/")
    assert page.status_code == 200 and b'name="new_password2"' in page.content

    weak = client.post("/password/", {"old_password": generated, "new_password1": "short", "new_password2": "short"})
    assert weak.status_code == 200 and b"This password is too short" in weak.content
    done = client.post("/password/", {"old_password": generated, "new_password1": "my own long passphrase",
                                      "new_password2": "my own long passphrase"}, follow=True)
    assert done.redirect_chain == [("/password/done/", 302)] and b"Password changed" in done.content
    assert client.get("/password/").status_code == 200  # still signed in
    assert not Client().login(username="ben", password=generated)
    assert Client().login(username="ben", password="my own long passphrase")


def test_the_page_needs_a_signed_in_user():
    response = Client().get("/password/")
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=/password/")
