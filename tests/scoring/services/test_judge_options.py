"""Judge configuration options checked against each backend's declarations (``scoring.judges.options``):
at save (API, form) a 400 naming the option; before a run starts, the same check."""

import pytest
from django.core.exceptions import ValidationError
from django.contrib.admin.sites import site
from rest_framework.test import APIClient

from scoring.judges.options import OPTIONS, options_check
from scoring.models import JudgeConfig
from scoring.services.runs import run_create
from tests.annotation_factories import curator
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist

pytestmark = pytest.mark.django_db

OPENAI = {"name": "o", "backend": "openai", "model": "m"}
OFFLINE = {"name": "f", "backend": "offline"}


@pytest.fixture
def api(settings):
    settings.OPENAI_BASE_URL = "https://llm.internal.example/v1"
    client = APIClient()
    client.force_login(curator())
    return client


@pytest.mark.parametrize("base, options, message", [
    (OFFLINE, {"support_similarity": "abc"}, "support_similarity must be a number from -1 to 1; got 'abc'"),
    (OFFLINE, {"support_similarity": 1.5}, "support_similarity must be a number from -1 to 1; got 1.5"),
    (OFFLINE, {"keyword_count": 2.5}, "keyword_count must be a whole number from 0 to 1000; got 2.5"),
    (OFFLINE, {"keyword_count": "3"}, "keyword_count must be a whole number from 0 to 1000; got '3'"),
    (OFFLINE, {"keyword_count": True}, "keyword_count must be a whole number from 0 to 1000; got True"),
    (OPENAI, {"backoff_base_seconds": "fast"}, "backoff_base_seconds must be a number from 0 to 600; got 'fast'"),
    (OPENAI, {"backoff_base_seconds": -1}, "backoff_base_seconds must be a number from 0 to 600; got -1"),
    (OPENAI, {"max_tokens": 0}, "max_tokens must be a whole number from 1 to 1000000; got 0"),
    (OPENAI, {"max_tokens": "300"}, "max_tokens must be a whole number from 1 to 1000000; got '300'"),
    (OPENAI, {"call_deadline_seconds": 0}, "call_deadline_seconds must be a number above 0 to 86400; got 0"),
    (OPENAI, {"support_similarity": 0.5}, "support_similarity is an option of the offline judge only, not of the openai judge"),
    (OFFLINE, {"max_tokens": 10}, "max_tokens is an option of the openai judge only, not of the offline judge"),
    (OPENAI, {"max_token": 10}, "'max_token' is not an option of the openai judge; its options: backoff_base_seconds,"),
    (OPENAI, {"variants": {"group_score": "both"}}, "variants.group_score must be one of paper, upstream; got 'both'"),
    (OPENAI, {"variants": {"colour": "red"}}, "variants.colour is not a metric with variants"),
    (OPENAI, {"surveylens_tams_mode": "loose"}, "surveylens_tams_mode must be 'margin' or 'gated'; got 'loose'"),
    (OPENAI, {"nugget_batch_size": 0}, "nugget_batch_size must be a whole number from 1 to 10000; got 0"),
])
def test_a_bad_option_is_a_400_naming_it_on_create_and_on_patch(api, base, options, message):
    response = api.post("/api/judge-configs/", {**base, "options": options}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["options"] and response.json()["options"][0].startswith(message)
    assert not JudgeConfig.objects.exists()
    created = api.post("/api/judge-configs/", base, format="json")
    assert created.status_code == 201, created.content
    response = api.patch(f"/api/judge-configs/{created.json()['id']}/", {"options": options}, format="json")
    assert response.status_code == 400 and response.json()["options"][0].startswith(message)
    assert JudgeConfig.objects.get().options == {}


def test_good_options_are_saved(api):
    options = {"support_similarity": 0.7, "keyword_count": 4, "nugget_count": 10, "run_deadline_seconds": 600,
               "variants": {"references": "scisage_upstream", "nugget_coverage": "upstream"},
               "surveylens_tau": "upstream", "structure_floor": -2.0}
    assert api.post("/api/judge-configs/", {**OFFLINE, "options": options}, format="json").status_code == 201
    options = {"max_tokens": 300, "backoff_base_seconds": 0.01, "backoff_max_seconds": 0.05, "call_deadline_seconds": 1}
    assert api.post("/api/judge-configs/", {**OPENAI, "options": options}, format="json").status_code == 201


def test_every_declared_option_names_a_backend_that_exists():
    assert {b for option in OPTIONS.values() for b in option.backends} <= set(JudgeConfig.Backend.values)
    for name in ("support_similarity", "keyword_count", "backoff_base_seconds", "max_tokens"):
        with pytest.raises(ValueError, match=name):
            options_check("offline" if name in ("support_similarity", "keyword_count") else "openai", {name: "abc"})


def test_the_admin_form_refuses_a_bad_option_naming_it(settings):
    form_class = site._registry[JudgeConfig].get_form(request=None)
    form = form_class(data={"name": "x", "backend": "offline", "model": "", "base_url": "", "temperature": 0,
                            "prompt_version": "v1", "repeats": 1, "max_concurrency": 1, "timeout_seconds": 10,
                            "max_retries": 1, "price_input_per_million": 0, "price_output_per_million": 0,
                            "batch_discount": 0.5, "options": '{"keyword_count": "many"}'})
    assert not form.is_valid()
    assert form.errors["options"] == ["keyword_count must be a whole number from 0 to 1000; got 'many'"]


def test_a_configuration_saved_before_the_rules_cannot_start_a_run():
    checklist = two_group_checklist()
    pair = systems(2)
    reports_for(checklist.task, pair)
    config = judge_config(name="old-row", options={"support_similarity": "abc"})  # written behind the services
    with pytest.raises(ValidationError, match="judge configuration 'old-row' cannot run: options: support_similarity "
                                              "must be a number from -1 to 1; got 'abc'"):
        run_create(protocol="deepsynth", judge_config=config, systems=pair, tasks=[checklist.task])
