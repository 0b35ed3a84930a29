"""``core.compiled``: an ORM read compiled once answers what the ORM answers, for any values."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from core.compiled import CompiledRead
from core.models import AuditLog
from tests.annotation_factories import ProfileFactory
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_each_call_reads_its_own_values_as_the_orm_does_in_one_statement_compiled_once():
    ada, bob = UserFactory(username="ada"), UserFactory(username="bob")
    rows = [AuditLog.objects.create(actor=user, action="test.compiled", after={"who": user.username, "n": [1, 2]})
            for user in (ada, bob)]
    builds = []

    def build(log_id, actor_id):
        builds.append(log_id)
        return AuditLog.objects.select_related("actor").filter(pk=log_id, actor_id=actor_id)[:1]

    read = CompiledRead(build, "log_id", "actor_id")
    for row, user in zip(rows, (ada, bob)):
        with CaptureQueriesContext(connection) as queries:
            found = read.first(log_id=row.pk, actor_id=user.pk)
        assert len(queries) == 1
        orm = AuditLog.objects.select_related("actor").get(pk=row.pk)
        assert (found.pk, found.after, found.created_at, found.actor.username) == (
            orm.pk, orm.after, orm.created_at, user.username)  # JSON and times through the fields' converters
    assert len(builds) == 1  # built and compiled by the first call only
    assert read.first(log_id=rows[0].pk, actor_id=bob.pk) is None  # both values are taken


def test_a_reverse_one_to_one_and_annotations_ride_along_as_with_the_orm():
    profile = ProfileFactory(user=UserFactory(username="cy"), role="curator")
    plain = UserFactory(username="dee")
    read = CompiledRead(lambda user_id: get_user_model().objects.select_related("profile").annotate(
        n_groups=Count("groups")).filter(pk=user_id), "user_id")
    (cy,), (dee,) = read.rows(user_id=profile.user.pk), read.rows(user_id=plain.pk)
    assert (cy.profile.role, cy.profile.user is cy, cy.n_groups) == ("curator", True, 0)
    assert not hasattr(dee, "profile") and dee.n_groups == 0


def test_an_argument_the_sql_does_not_take_as_a_parameter_is_refused():
    read = CompiledRead(lambda n: get_user_model().objects.order_by("pk")[:n], "n")  # LIMIT is written in
    with pytest.raises(ValueError, match="does not take each argument"):
        read.rows(n=2)
