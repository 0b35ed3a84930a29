"""A signed-in session's user is read with its global role (``AnnotatorProfile``) in one query."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.accounts import global_role
from core.authentication import ProfileModelBackend
from tests.annotation_factories import ProfileFactory
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_user_comes_with_its_profile_in_one_query():
    profile = ProfileFactory(user=UserFactory(username="ada"), role="curator")
    with CaptureQueriesContext(connection) as queries:
        user = ProfileModelBackend().get_user(profile.user.pk)
        assert (user.username, global_role(user), user.profile.user is user) == ("ada", "curator", True)
    assert len(queries) == 1


def test_a_user_without_a_profile_has_no_global_role_and_costs_no_second_query():
    plain = UserFactory(username="bob")
    with CaptureQueriesContext(connection) as queries:
        user = ProfileModelBackend().get_user(plain.pk)
        assert (user.username, global_role(user)) == ("bob", None)
    assert len(queries) == 1


def test_an_inactive_or_unknown_user_is_nobody():
    inactive = UserFactory(is_active=False)
    assert ProfileModelBackend().get_user(inactive.pk) is None
    assert ProfileModelBackend().get_user(inactive.pk + 1000) is None
