import pytest
from django.urls import reverse

from benchmark.importers.base import ImportResult
from benchmark.importers.systems import SystemSpec, systems_ensure
from benchmark.models import System, SystemAlias, system_key
from benchmark.services.systems import system_alias_delete, system_alias_set, system_names_resolve
from core.models import AuditLog

pytestmark = pytest.mark.django_db


def test_system_key_ignores_case_and_separators_only():
    assert system_key("LLMxMapReduce_V2") == system_key("llmxmapreduce-v2") == system_key("LLMxMapReduce V2")
    assert system_key("AutoSurvey2") != system_key("Autosurvey")


def test_seeded_alias_names_the_canonical_spelling():
    seeded = SystemAlias.objects.get(key=system_key("LLMxMapReduce_V2"))
    assert (seeded.alias, seeded.canonical) == ("LLMxMapReduce_V2", "LLMxMapReduce-V2")
    assert system_names_resolve(["LLMxMapReduce_V2", "llmxmapreduce-v2"]) == {
        "LLMxMapReduce_V2": "LLMxMapReduce-V2", "llmxmapreduce-v2": "LLMxMapReduce-V2"}


def test_released_names_resolve_to_stored_systems_up_to_case_and_separators():
    System.objects.create(name="SurveyForge")
    result = ImportResult()
    systems = systems_ensure([SystemSpec("surveyforge"), SystemSpec("Survey_Forge"), SystemSpec("AutoSurvey2"),
                              SystemSpec("Autosurvey")], result=result)
    assert systems["surveyforge"] == systems["Survey_Forge"] == System.objects.get(name="SurveyForge")
    assert systems["AutoSurvey2"] != systems["Autosurvey"]
    assert System.objects.count() == 3
    assert "system 'surveyforge' imported as 'SurveyForge' (system alias table, or the same name up to case and " \
           "separators)" in result.messages


def test_alias_set_change_and_delete_each_leave_a_revision(admin_user):
    alias = system_alias_set(alias="AutoSurvey2", canonical="Autosurvey", note="same pipeline", actor=admin_user)
    assert systems_ensure([SystemSpec("autosurvey_2")], result=ImportResult())["autosurvey_2"].name == "Autosurvey"
    system_alias_set(alias="autosurvey-2", canonical="Autosurvey", note="same pipeline, v2 run", actor=admin_user)
    assert SystemAlias.objects.filter(key=system_key("AutoSurvey2")).count() == 1
    system_alias_delete(alias=SystemAlias.objects.get(pk=alias.pk), actor=admin_user)
    entries = list(AuditLog.objects.filter(object_id=alias.pk, content_type__model="systemalias"))
    assert [r.action for r in entries] == ["alias.set", "alias.set", "alias.delete"]
    assert entries[0].before is None and entries[0].after["canonical"] == "Autosurvey"
    assert entries[1].before["note"] == "same pipeline" and entries[1].after["note"] == "same pipeline, v2 run"
    assert entries[2].after is None and all(r.actor == admin_user for r in entries)
    assert system_names_resolve(["AutoSurvey2"]) == {"AutoSurvey2": "AutoSurvey2"}


@pytest.mark.parametrize(("alias", "canonical", "message"), [
    ("Survey-X", "surveyx", "are already one system"),
    ("", "SciSage", "needs both"),
    ("MapReduce", "LLMxMapReduce_V2", "is itself an alias of 'LLMxMapReduce-V2'"),
])
def test_alias_refused_with_the_reason(alias, canonical, message):
    with pytest.raises(ValueError, match=message):
        system_alias_set(alias=alias, canonical=canonical)
    assert not AuditLog.objects.filter(content_type__model="systemalias").exists()


# The revision history inline's (empty) management form, which every admin form post carries.
INLINE = {"core-auditlog-content_type-object_id-TOTAL_FORMS": "0",
          "core-auditlog-content_type-object_id-INITIAL_FORMS": "0"}


def test_admin_page_shows_and_edits_the_table_through_the_service(admin_client, admin_user):
    changelist = reverse("admin:benchmark_systemalias_changelist")
    assert "LLMxMapReduce_V2" in admin_client.get(changelist).content.decode()
    response = admin_client.post(reverse("admin:benchmark_systemalias_add"),
                                 {"alias": "Gemini DR", "canonical": "Gemini", "note": "release name", **INLINE})
    assert response.status_code == 302
    added = SystemAlias.objects.get(key=system_key("gemini dr"))
    assert AuditLog.objects.get(object_id=added.pk, content_type__model="systemalias").actor == admin_user
    refused = admin_client.post(reverse("admin:benchmark_systemalias_add"),
                                {"alias": "gemini", "canonical": "Gemini", "note": "", **INLINE})
    assert refused.status_code == 200 and "are already one system" in refused.content.decode()
