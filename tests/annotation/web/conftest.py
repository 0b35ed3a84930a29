import pytest
from django.test import Client

from annotation.models import Assignment
from tests.annotation_factories import checklist_task, verify_project


def htmx(client: Client) -> Client:
    """The client, sending htmx's request header on every request."""
    client.defaults["HTTP_HX_REQUEST"] = "true"
    return client


@pytest.fixture
def as_user(client):
    def login(user, *, hx: bool = True) -> Client:
        client.force_login(user)
        return htmx(client) if hx else client

    return login


@pytest.fixture
def verify(owner, alice, bob):
    task, items = checklist_task(3)
    return verify_project(owner, [alice, bob], tasks=[task])


def claim_of(user, project) -> Assignment:
    """The user's claim on the item the workspace shows: their oldest active one (the next item,
    held ready behind it, is claimed too)."""
    return Assignment.objects.filter(user=user, project=project, status=Assignment.Status.ACTIVE).order_by(
        "claimed_at", "id").first()
