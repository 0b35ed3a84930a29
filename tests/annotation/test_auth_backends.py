"""A curator made by create_account sees and edits the system alias table in the admin, and nothing else."""

import pytest
from django.test import Client

from annotation.models import Role
from annotation.services.accounts import account_create
from benchmark.models import SystemAlias
from benchmark.services.systems import system_alias_set

pytestmark = pytest.mark.django_db
PASSWORD = "a long phrase nobody guesses"


def _signed_in(role) -> Client:
    account_create(username=f"{role}-1", role=role, password=PASSWORD)
    client = Client()
    assert client.login(username=f"{role}-1", password=PASSWORD)
    return client


def test_a_curator_lists_adds_and_deletes_aliases_through_the_admin():
    client = _signed_in(Role.CURATOR)
    index = client.get("/admin/").content.decode()
    assert "/admin/benchmark/systemalias/" in index and "/admin/auth/user/" not in index
    assert client.get("/admin/benchmark/systemalias/").status_code == 200
    response = client.post("/admin/benchmark/systemalias/add/",
                           {"alias": "AutoSurvey2", "canonical": "Autosurvey", "note": "same system, renamed"})
    assert response.status_code == 302
    alias = SystemAlias.objects.get(canonical="Autosurvey")
    assert alias.alias == "AutoSurvey2"
    assert client.post(f"/admin/benchmark/systemalias/{alias.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not SystemAlias.objects.filter(pk=alias.pk).exists()
    # the role opens curation's pages only
    assert client.get("/admin/benchmark/task/").status_code == 403
    assert client.get("/admin/auth/user/").status_code == 403


def test_an_annotator_cannot_reach_the_alias_table():
    system_alias_set(alias="Survey-Writer", canonical="SurveyForge", note="", actor=None)
    client = _signed_in(Role.ANNOTATOR)
    assert client.get("/admin/benchmark/systemalias/").status_code == 302  # not staff: the admin's login page
