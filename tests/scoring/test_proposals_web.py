"""The task page's "Propose with LLM" control: curator-only POST, queued on commit, proposals shown."""

import pytest
from playwright.sync_api import expect
from django.test import Client
from django.urls import reverse

from annotation.models import AnnotatorProfile, Role
from benchmark.models import TaskPrompt
from scoring.models import JudgeConfig, ProposalBatch
from scoring.services.proposals import proposal_batch_execute
from tests.factories import SurveyFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def client_as(role: str) -> Client:
    user = UserFactory(username=role)
    AnnotatorProfile.objects.create(user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def setup():
    config = JudgeConfig.objects.create(name="offline-heuristic", backend=JudgeConfig.Backend.OFFLINE)
    survey = SurveyFactory(title="Semantic Visual SLAM: A Survey", abstract="We review semantic visual SLAM.",
                           outline=[[1, "Methods"], [2, "Feature-based SLAM"]])
    task = TaskFactory(protocol="deepsynth", key="slam", survey=survey)
    return task, config


def test_a_curator_queues_the_stages_on_commit(setup, monkeypatch, django_capture_on_commit_callbacks):
    task, config = setup
    sent = []
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", sent.append)
    curator = client_as(Role.CURATOR)
    url = reverse("proposals:task_propose", kwargs={"task_id": task.pk})

    with django_capture_on_commit_callbacks(execute=True):
        response = curator.post(url, {"stages": ["question", "topic_groups"], "judge_config": config.pk})

    assert response.status_code == 302 and response.url == reverse("benchmark:task_detail", args=[task.pk])
    batch = ProposalBatch.objects.get()
    assert sent == [batch.pk]
    assert (batch.stages, batch.total, batch.created_by.username) == (["question", "topic_groups"], 2, "curator")
    page = curator.get(response.url).content.decode()
    assert f"Queued proposals #{batch.pk} (question, topic_groups) with judge offline-heuristic" in page
    assert "Propose with LLM" in page
    assert 'hx-trigger="every 2s" hx-select="#proposals"' in page  # the panel refreshes itself while it waits

    # The worker's run: the proposals show as "proposed (llm)", and the batch with its counts.
    assert proposal_batch_execute(batch_id=batch.pk) == "finished"
    page = curator.get(response.url).content.decode()
    assert page.count("proposed (llm)") == 1 + 1  # the question and the one checklist item
    assert TaskPrompt.objects.get(task=task).text in page
    assert "2/2 done" in page
    assert 'hx-trigger="every 2s"' not in page  # and stops once the batch has ended
    assert 'id="task-material" hx-swap-oob' not in page
    # the poll that finds it ended re-sends the material the batch changed, out of band
    poll = curator.get(response.url, {"poll": "proposals"}).content.decode()
    assert 'id="task-material" hx-swap-oob="true"' in poll and "Checklist groups (1)" in poll


def test_others_are_refused_and_nothing_is_queued(setup, monkeypatch, django_capture_on_commit_callbacks):
    task, config = setup
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", lambda pk: pytest.fail("queued for a non-curator"))
    url = reverse("proposals:task_propose", kwargs={"task_id": task.pk})
    body = {"stages": ["question"], "judge_config": config.pk}
    for role in (Role.ANNOTATOR, Role.VIEWER):
        client = client_as(role)
        with django_capture_on_commit_callbacks(execute=True):
            assert client.post(url, body).status_code == 403
        assert "Propose with LLM" not in client.get(reverse("benchmark:task_detail", args=[task.pk])).content.decode()
    anonymous = Client().post(url, body)
    assert anonymous.status_code == 302 and "/login/" in anonymous.url
    assert client_as(Role.CURATOR).get(url).status_code == 405
    assert not ProposalBatch.objects.exists()


def test_a_bad_request_queues_nothing_and_says_why(setup):
    task, config = setup
    curator = client_as(Role.CURATOR)
    url = reverse("proposals:task_propose", kwargs={"task_id": task.pk})
    response = curator.post(url, {"stages": ["nuggets"], "judge_config": config.pk}, follow=True)
    assert "Nothing was queued: stages: Select a valid choice. nuggets is not one of the available choices." \
        in response.content.decode()
    assert not ProposalBatch.objects.exists()
    assert curator.post(reverse("proposals:task_propose", kwargs={"task_id": 999999}), {}).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_the_control_in_chromium(setup, page, login, live_server, screenshot, monkeypatch):
    task, config = setup
    queued = []
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", queued.append)
    user = UserFactory(username="cur", password="pw-cur-123")
    AnnotatorProfile.objects.create(user=user, role=Role.CURATOR)
    login("cur", "pw-cur-123")
    page.goto(f"{live_server.url}{reverse('benchmark:task_detail', args=[task.pk])}")
    page.uncheck("input[value=constraint_pairs]")
    page.click("text=Propose with LLM")
    page.wait_for_selector(".messages .success")
    assert queued == [ProposalBatch.objects.get().pk]
    assert page.locator("#task-material h2", has_text="Checklist groups").count() == 0
    proposal_batch_execute(batch_id=queued[0])  # what the worker does
    # No reload: the panel's poll shows the proposals, and re-sends the task's material once.
    expect(page.locator(".llm-proposals li")).to_have_count(2, timeout=10_000)
    expect(page.locator("#task-material h2", has_text="Checklist groups (1)")).to_be_visible()
    assert page.locator("#task-material").count() == 1
    assert page.locator(".llm-proposals .status.proposed").first.inner_text() == "proposed (llm)"
    screenshot("task_detail_proposals")
