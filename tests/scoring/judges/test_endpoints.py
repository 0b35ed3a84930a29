"""Keys bound to endpoints by the settings, and redaction of every error."""

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError

from config.settings import _judge_endpoints
from scoring.judges.endpoints import endpoint_check, key_for, redact
from scoring.judges.transport import make_client


@pytest.fixture
def bound(settings):
    settings.OPENAI_BASE_URL = "https://api.provider.example/v1/"
    settings.OPENAI_API_KEY = "global-key-0001"
    settings.JUDGE_ENDPOINTS = {"http://vllm.local:8000/v1": "", "https://other.example/v1": "other-key-0002"}


def test_each_key_goes_to_its_own_url_only(bound):
    assert key_for("https://api.provider.example/v1") == "global-key-0001"
    assert key_for("HTTPS://API.provider.example/v1/") == "global-key-0001"  # one spelling of a URL
    assert key_for("https://other.example/v1") == "other-key-0002"
    assert key_for("http://vllm.local:8000/v1") == ""
    assert key_for("https://api.provider.example/v2") == ""
    assert key_for("https://attacker.example/v1") == ""


def test_the_client_carries_the_bound_key_and_nothing_else(bound):
    class Config:
        timeout_seconds = 5.0

        def __init__(self, base_url):
            self.base_url = base_url

    assert make_client(Config("")).api_key == "global-key-0001"
    assert make_client(Config("https://other.example/v1")).api_key == "other-key-0002"
    assert make_client(Config("https://attacker.example/v1")).api_key == "no-key"
    assert make_client(Config("http://vllm.local:8000/v1")).api_key == "no-key"


def test_openai_itself_without_a_key_is_a_configuration_error_naming_the_variable(settings):
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY, settings.JUDGE_ENDPOINTS = "", "", {}

    class Config:
        base_url, timeout_seconds = "", 5.0

    with pytest.raises(ImproperlyConfigured, match=r"^OPENAI_API_KEY is not set: set it, or point"):
        make_client(Config())


def test_only_allowed_endpoints_pass_the_check(bound):
    endpoint_check("")
    endpoint_check("https://other.example/v1/")
    with pytest.raises(ValidationError, match="'https://attacker.example/v1' is not an allowed judge endpoint"):
        endpoint_check("https://attacker.example/v1")


def test_redaction_removes_configured_keys_and_key_shaped_tokens(bound):
    text = ("401: Incorrect API key provided: global-key-0001; also other-key-0002, sk-proj-AbC_123-xyz789 "
            "and sk-short but not skeleton-key")
    assert redact(text) == ("401: Incorrect API key provided: [redacted]; also [redacted], [redacted] "
                            "and sk-short but not skeleton-key")
    assert redact("") == ""


def test_judge_endpoints_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("OTHER_KEY", "k-123")
    assert _judge_endpoints("https://other.example/v1=OTHER_KEY, http://vllm.local:8000/v1") == {
        "https://other.example/v1": "k-123", "http://vllm.local:8000/v1": ""}
    monkeypatch.delenv("MISSING_KEY", raising=False)
    with pytest.raises(ImproperlyConfigured, match=r"binds https://x.example/v1 to the key in \$MISSING_KEY"):
        _judge_endpoints("https://x.example/v1=MISSING_KEY")
