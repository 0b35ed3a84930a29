"""Judge configurations: the endpoint rule, frozen verdict-shaping fields, revision rows, the test call."""

import pytest
from django.contrib.contenttypes.models import ContentType

from core.models import AuditLog
from scoring.models import JudgeConfig
from scoring.services.judge_configs import judge_config_create, judge_config_test, judge_config_update
from tests.annotation_factories import VerdictFactory, curator
from tests.support.fake_openai import Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return curator()


def _revisions(config) -> list[str]:
    content_type = ContentType.objects.get_for_model(JudgeConfig)
    return list(AuditLog.objects.filter(content_type=content_type, object_id=config.pk).values_list("action", flat=True))


def test_create_on_an_allowed_endpoint_stores_no_key_and_writes_a_revision(owner, settings):
    settings.JUDGE_ENDPOINTS = {"https://llm.example.org/v1": "lab-key-0001"}
    config = judge_config_create(actor=owner, name="gpt", backend="openai", model="gpt-4o-mini",
                                 base_url="https://llm.example.org/v1")
    assert (config.base_url, config.temperature, config.repeats) == ("https://llm.example.org/v1", 0.0, 1)
    assert "lab-key-0001" not in str(JudgeConfig.objects.values().get(pk=config.pk))
    assert _revisions(config) == ["judge_config.create"]
    assert "lab-key-0001" not in str(AuditLog.objects.get(action="judge_config.create").after)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"base_url": "https://attacker.example/v1"}, "base_url: base_url 'https://attacker.example/v1' is not an "
                                                      "allowed judge endpoint"),
        ({"backend": "offline", "base_url": "https://llm.example.org/v1"}, "base_url: the offline judge calls no"),
        ({"base_url": "ftp://example.org"}, "base_url: 'ftp://example.org' is not an http"),
        ({"base_url": "https://user:secret@example.org/v1"}, "base_url: put no credentials in the URL"),
        ({"model": ""}, "model: an OpenAI-compatible judge needs the model name"),
        ({"backend": "claude"}, "backend: 'claude' is not one of"),
    ],
)
def test_create_refuses_unbound_or_bad_endpoints_and_missing_fields(owner, fields, message):
    with pytest.raises(ValueError, match=message):
        judge_config_create(actor=owner, **{"name": "j", "backend": "openai", "model": "m", **fields})
    assert not JudgeConfig.objects.exists()


def test_fields_that_shape_verdicts_freeze_once_there_are_verdicts(owner):
    config = judge_config_create(actor=owner, name="gpt", backend="openai", model="m1")
    judge_config_update(config=config, actor=owner, model="m2")  # no verdicts yet: free
    VerdictFactory(judge_config=config)
    with pytest.raises(ValueError, match="model: this configuration has verdicts"):
        judge_config_update(config=config, actor=owner, model="m3", name="renamed")
    judge_config_update(config=config, actor=owner, name="renamed", max_concurrency=2, model="m2")
    config.refresh_from_db()
    assert (config.name, config.model, config.max_concurrency) == ("renamed", "m2", 2)
    assert _revisions(config) == ["judge_config.create", "judge_config.update", "judge_config.update"]
    last = AuditLog.objects.filter(action="judge_config.update").last()
    assert last.before == {"name": "gpt", "max_concurrency": 8} and last.after == {"name": "renamed",
                                                                                   "max_concurrency": 2}


def test_connection_test_makes_one_call_with_the_bound_key_and_shows_the_answer(owner, fake_openai, settings):
    settings.JUDGE_ENDPOINTS = {fake_openai.base_url: "secret-value-123"}
    config = judge_config_create(actor=owner, name="gpt", backend="openai", model="fake-judge",
                                 base_url=fake_openai.base_url)
    fake_openai.script(Reply.text("OK"))
    result = judge_config_test(config=config)
    assert result.ok and "answered as fake-judge: 'OK'" in result.message
    assert len(fake_openai.requests) == 1
    request = fake_openai.requests[0]
    assert request.body["max_tokens"] == 1
    assert request.headers.get("Authorization", request.headers.get("authorization")) == "Bearer secret-value-123"


def test_connection_test_reports_the_error_without_the_key(owner, fake_openai, settings):
    settings.JUDGE_ENDPOINTS = {fake_openai.base_url: "sk-secret-value-123456"}
    config = judge_config_create(actor=owner, name="gpt", backend="openai", model="fake-judge",
                                 base_url=fake_openai.base_url)
    fake_openai.script(Reply.error(401, "Incorrect API key provided: sk-secret-value-123456"))
    result = judge_config_test(config=config)
    assert not result.ok and "HTTP 401" in result.message and "[redacted]" in result.message
    assert "secret-value" not in result.message
    offline = judge_config_create(actor=owner, name="offline", backend="offline")
    assert judge_config_test(config=offline).ok
