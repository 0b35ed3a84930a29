"""System identifiers in words for people: one mechanism (``benchmark.naming``), a curator's display name
first, the identifier kept for the API and tooltips."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.urls import reverse

from benchmark.models import System
from benchmark.naming import readable_identifier, system_label
from benchmark.services.systems import system_display_name_set
from core.models import AuditLog
from tests.annotation_factories import curator
from tests.factories import ReportFactory, SystemFactory


@pytest.mark.parametrize("identifier, words", [
    ("deepscholar_base_gpt_4.1", "DeepScholar base GPT-4.1"),
    ("search_ai_gpt_4.1", "Search AI GPT-4.1"),
    ("deepsynth-example", "DeepSynth example"),
    ("storm", "STORM"),
    ("gpt-4.1-mini", "GPT-4.1 mini"),
    ("Autosurvey", "Autosurvey"),  # written with a capital: as its authors spell it
    ("LLMxMapReduce_V2", "LLMxMapReduce V2"),
    ("-2+3", "-2+3"),  # not an identifier: shown exactly
])
def test_identifiers_read_as_words(identifier, words):
    assert readable_identifier(identifier) == words


def test_a_display_name_wins_and_a_version_follows_the_name():
    assert system_label("storm", "v2") == "STORM v2"
    assert system_label("storm", "v2", "  STORM (Stanford)  ") == "STORM (Stanford)"


@pytest.mark.django_db
def test_curators_rename_a_system_in_the_admin_with_a_revision_and_pages_use_the_label(client):
    system = SystemFactory(name="deepscholar_base_gpt_4.1")
    report = ReportFactory(system=system)
    user = curator()
    user.is_staff = True  # as account_create makes curators
    user.save()
    client.force_login(user)
    task_page = client.get(reverse("benchmark:task_detail", args=[report.task_id])).content.decode()
    assert 'title="deepscholar_base_gpt_4.1">DeepScholar base GPT-4.1</a>' in task_page

    url = reverse("admin:benchmark_system_change", args=[system.pk])
    assert client.get(url).status_code == 200
    response = client.post(url, {"display_name": "DeepScholar (GPT-4.1)", "name": "renamed-by-curator",
                                 "revisions-TOTAL_FORMS": "0", "revisions-INITIAL_FORMS": "0"})
    assert response.status_code == 302, response.content.decode()[:2000]
    system.refresh_from_db()
    assert (system.name, system.display_name, system.label) == (
        "deepscholar_base_gpt_4.1", "DeepScholar (GPT-4.1)", "DeepScholar (GPT-4.1)")
    revision = AuditLog.objects.get(content_type=ContentType.objects.get_for_model(System), object_id=system.pk)
    assert (revision.action, revision.actor, revision.before, revision.after) == (
        "system.display_name", user, {"display_name": ""}, {"display_name": "DeepScholar (GPT-4.1)"})
    assert not system_display_name_set(system=system, display_name=" DeepScholar  (GPT-4.1) ")
    report_page = client.get(reverse("benchmark:report_detail", args=[report.pk])).content.decode()
    assert "<h1>DeepScholar (GPT-4.1) on" in report_page
    # Curators rename, they do not create or delete systems.
    assert client.get(reverse("admin:benchmark_system_add")).status_code == 403
    assert client.post(reverse("admin:benchmark_system_delete", args=[system.pk]), {"post": "yes"}).status_code == 403
