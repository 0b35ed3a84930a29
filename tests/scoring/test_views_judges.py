"""Judge configuration pages: list, new, edit, test connection; curators only."""

import pytest
from django.urls import reverse

from scoring.models import JudgeConfig
from tests.annotation_factories import annotator, curator
from tests.support.fake_openai import Reply

pytestmark = pytest.mark.django_db


def _body(**extra):
    return {"name": "lab-judge", "backend": "openai", "model": "fake-judge", "base_url": "",
            "temperature": "0", "prompt_version": "v1", "repeats": "1", "max_concurrency": "4",
            "timeout_seconds": "30", "max_retries": "2", "price_input_per_million": "0",
            "price_output_per_million": "0", "embedding_backend": "", **extra}


def test_curator_creates_edits_and_tests_a_judge(client, fake_openai, settings):
    settings.JUDGE_ENDPOINTS = {fake_openai.base_url: "not-shown-anywhere"}
    client.force_login(curator())
    created = client.post(reverse("runs:judge_new"), _body(base_url=fake_openai.base_url))
    config = JudgeConfig.objects.get(name="lab-judge")
    assert created["Location"] == reverse("runs:judge_edit", args=[config.pk])
    listing = client.get(reverse("runs:judges")).content.decode()
    assert "lab-judge" in listing and fake_openai.base_url in listing and "not-shown-anywhere" not in listing
    form = client.get(reverse("runs:judge_new")).content.decode()
    assert f'<option value="{fake_openai.base_url}">' in form and "not-shown-anywhere" not in form
    edited = client.post(reverse("runs:judge_edit", args=[config.pk]),
                         _body(base_url=fake_openai.base_url, temperature="0.5"))
    assert edited.status_code == 302
    config.refresh_from_db()
    assert config.temperature == 0.5
    fake_openai.script(Reply.text("OK"))
    answer = client.post(reverse("runs:judge_test", args=[config.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert "<strong>Works</strong>" in answer and "answered as fake-judge: &#x27;OK&#x27;" in answer
    assert "not-shown-anywhere" not in answer


def test_an_endpoint_the_deployment_does_not_allow_is_refused_and_nothing_is_stored(client):
    client.force_login(curator())
    response = client.post(reverse("runs:judge_new"), _body(base_url="https://attacker.example/v1"))
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="errors-base_url"><li>' in html and "https://attacker.example/v1" in html
    assert not JudgeConfig.objects.exists()


def test_annotators_read_the_list_but_cannot_write(client):
    client.force_login(annotator("alice"))
    config = JudgeConfig.objects.create(name="offline", backend="offline")
    assert client.get(reverse("runs:judges")).status_code == 200
    assert client.get(reverse("runs:judge_new")).status_code == 403
    assert client.post(reverse("runs:judge_edit", args=[config.pk]), _body()).status_code == 403
    assert client.post(reverse("runs:judge_test", args=[config.pk])).status_code == 403
    assert JudgeConfig.objects.get().name == "offline"


def test_the_form_turns_batch_mode_on_with_its_discount_and_refuses_a_discount_above_one(client):
    client.force_login(curator())
    refused = client.post(reverse("runs:judge_new"), _body(batch="on", batch_discount="1.5"))
    assert refused.status_code == 400
    assert 'id="errors-batch_discount"><li>' in refused.content.decode()
    assert not JudgeConfig.objects.exists()
    created = client.post(reverse("runs:judge_new"), _body(batch="on", batch_discount="0.4"))
    assert created.status_code == 302
    config = JudgeConfig.objects.get(name="lab-judge")
    assert (config.batch, config.batch_discount) == (True, 0.4)
    edited = client.post(reverse("runs:judge_edit", args=[config.pk]), _body())  # unticked, discount left out
    assert edited.status_code == 302
    config.refresh_from_db()
    assert (config.batch, config.batch_discount) == (False, 0.4)
