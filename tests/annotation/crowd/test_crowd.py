"""Crowd studies end to end through the entry link, the workspace and the API (issue #42)."""

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

from annotation.crowd.models import CHECK_OVERLAP, AttentionCheck, CrowdWorker
from annotation.crowd.selectors import check_slots
from annotation.crowd.services import attention_check_set, crowd_study_set, crowd_token_rotate
from annotation.models import AnnotationItem, Label, PairwisePreference, ProjectMembership
from core.models import AuditLog
from tests.annotation_factories import pairwise_project, token
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db

QUOTA, RATE = 5, 0.4  # two of each worker's five items are attention checks


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()  # the entry link's rate counts live there
    yield
    cache.clear()


@pytest.fixture
def study(owner):
    project = pairwise_project(owner, [], n_tasks=2, n_systems=3, name="crowd pairwise")
    study = crowd_study_set(project=project, actor=owner, quota=QUOTA, check_rate=RATE, completion_code="C0DE42",
                            completion_url="https://app.prolific.com/submissions/complete?cc={code}")
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    for item in items[-3:]:  # the last three items in claim order: reached only as checks
        attention_check_set(project=project, item_id=item.pk, expected={"choice": "left"}, actor=owner)
    project.refresh_from_db()
    return study


def join(client, study, worker="w1", **extra):
    params = {"PROLIFIC_PID": worker, "STUDY_ID": "s", "SESSION_ID": "x", **extra}
    return client.get(f"/join/{study.token}/", params)


def test_entry_link_lands_a_new_pseudonymous_annotator_in_the_workspace(study):
    client = Client()
    answer = join(client, study)
    assert answer.status_code == 302 and answer["Location"] == f"/annotate/{study.project_id}/"
    page = client.get(answer["Location"])
    assert page.status_code == 200 and b"data-item=" in page.content
    worker = CrowdWorker.objects.get(study=study, worker_id="w1")
    user = worker.user
    assert user.username.startswith("crowd-") and "w1" not in user.username
    assert not user.has_usable_password() and not user.is_staff
    assert (worker.platform_study, worker.platform_session) == ("s", "x")
    assert list(ProjectMembership.objects.filter(user=user).values_list("project_id", "role")) == [
        (study.project_id, "annotator")]
    assert AuditLog.objects.filter(action="crowd_worker.join", object_id=user.pk).count() == 1
    # the worker sees no label counts (an attention check's would stand out) and no menu
    assert b"labels so far" not in page.content and b'href="/dashboards/"' not in page.content
    assert b'href="/annotate/"' not in page.content  # nor a link to the projects list (a 404 for them)


def test_second_visit_is_the_same_account(study):
    join(Client(), study)
    users = get_user_model().objects.count()
    client = Client()
    answer = join(client, study, SESSION_ID="y")
    assert answer.status_code == 302
    worker = CrowdWorker.objects.get(study=study, worker_id="w1")
    assert get_user_model().objects.count() == users
    assert int(client.session["_auth_user_id"]) == worker.user_id and worker.platform_session == "y"
    join(Client(), study, worker="w2")
    assert CrowdWorker.objects.filter(study=study).count() == 2


def test_worker_reaches_no_other_project_nor_page(study, owner, alice):
    other = pairwise_project(owner, [alice], name="other study")
    client = Client()
    join(client, study)
    other_item = AnnotationItem.objects.filter(project=other).first()
    for path in (f"/annotate/{other.pk}/", f"/annotate/{other.pk}/progress/", f"/api/projects/{other.pk}/",
                 f"/api/projects/{other.pk}/progress/", f"/api/annotation-items/{other_item.pk}/",
                 "/annotate/", "/api/projects/", "/dashboards/", "/api/dashboards/leaderboard/",
                 "/benchmark/tasks/", "/api/reports/", "/api/verdicts/", "/runs/", "/api/exports/",
                 "/benchmark/exports/", "/account/tokens/", "/password/", "/admin/"):
        assert client.get(path).status_code in (302, 404), path  # admin: to its login; the rest: no such page
    assert client.get(f"/api/projects/{study.project_id}/progress/").status_code == 200
    assert client.get(f"/annotate/{study.project_id}/").status_code == 200


def test_bad_and_rotated_tokens_are_404(study, owner):
    assert Client().get("/join/not-a-token/", {"PROLIFIC_PID": "w1"}).status_code == 404
    old = study.token
    study = crowd_token_rotate(project=study.project, actor=owner)
    assert Client().get(f"/join/{old}/", {"PROLIFIC_PID": "w1"}).status_code == 404
    assert join(Client(), study).status_code == 302
    crowd_study_set(project=study.project, actor=owner, open=False)
    assert join(Client(), study).status_code == 404


def test_missing_worker_id_is_a_400_naming_the_parameter(study):
    answer = Client().get(f"/join/{study.token}/", {"STUDY_ID": "s"})
    assert answer.status_code == 400 and b"PROLIFIC_PID" in answer.content
    assert not CrowdWorker.objects.exists()


def test_other_platform_parameter_names(study, owner):
    crowd_study_set(project=study.project, actor=owner, worker_param="workerId", study_param="hitId",
                    session_param="assignmentId")
    answer = Client().get(f"/join/{study.token}/", {"workerId": "A1B2", "hitId": "h", "assignmentId": "a"})
    assert answer.status_code == 302
    worker = CrowdWorker.objects.get(worker_id="A1B2")
    assert (worker.platform_study, worker.platform_session) == ("h", "a")


def test_join_is_rate_limited(study, settings):
    settings.CROWD_JOIN_RATE = 3
    client = Client()
    codes = [join(client, study, worker=f"w{n}").status_code for n in range(5)]
    assert codes == [302, 302, 302, 429, 429]
    assert Client().get("/join/guess/", {"PROLIFIC_PID": "x"}).status_code == 429  # guesses count too
    assert CrowdWorker.objects.count() == 3


def _work_through(client, study, choice):
    """Label through the API as the worker would through the page, until nothing is left."""
    labelled = []
    answer = client.post(f"/api/projects/{study.project_id}/next/")
    item = answer.json()["item"]
    while item is not None:
        labelled.append(item["item"]["id"])
        assert item["item"]["labels_needed"] is None and item["item"]["labels_done"] is None
        answer = client.post("/api/labels/", {"item": item["item"]["id"], "value": {"choice": choice},
                                              "client_token": token(), "next": True}, format="json")
        assert answer.status_code == 201, answer.content
        item = answer.json()["next"]["item"]
    return labelled


def test_quota_checks_at_the_rate_and_results_in_progress(study, owner, alice):
    expert = alice
    client = Client()
    join(client, study)
    worker = CrowdWorker.objects.get(worker_id="w1")
    api = client_for(worker.user)
    labelled = _work_through(api, study, choice="right")  # every check expects "left": all failed
    checks = set(AttentionCheck.objects.values_list("item_id", flat=True))
    assert len(labelled) == QUOTA
    assert len([item for item in labelled if item in checks]) == round(QUOTA * RATE)
    slots = check_slots(study, worker.user_id)
    assert {i for i, item in enumerate(labelled) if item in checks} == slots  # at the worker's secret places
    # a check's answer tests the worker: it is no preference the rankings read
    assert PairwisePreference.objects.filter(label__annotator=worker.user).count() == QUOTA - 2

    progress = client_for(owner).get(f"/api/projects/{study.project_id}/progress/").json()
    row = next(row for row in progress["annotators"] if row["user_id"] == worker.user_id)
    assert (row["attention_checks"], row["attention_failed"], row["flagged"]) == (2, 2, True)
    assert progress["items"] == AnnotationItem.objects.filter(project_id=study.project_id).count() - 3
    assert progress["labels_needed"] < CHECK_OVERLAP  # the checks' overlap is not counted
    ProjectMembership.objects.create(project_id=study.project_id, user=expert, role="annotator")
    listed = client_for(expert).get(f"/api/projects/{study.project_id}/items/").json()["results"]
    assert {row["labels_needed"] for row in listed} == {None}  # no count singles the checks out
    assert client_for(expert).get(f"/api/projects/{study.project_id}/items/?ordering=labels_done").status_code == 400
    assert client_for(owner).get(f"/api/projects/{study.project_id}/items/").json()["results"][0]["labels_needed"]
    own = api.get(f"/api/projects/{study.project_id}/progress/").json()
    assert own["annotators"][0]["attention_checks"] is None  # a worker never learns which items were checks

    # a second worker who passes the checks is not flagged
    client2 = Client()
    join(client2, study, worker="w2")
    worker2 = CrowdWorker.objects.get(worker_id="w2")
    _work_through(client_for(worker2.user), study, choice="left")
    progress = client_for(owner).get(f"/api/projects/{study.project_id}/progress/").json()
    row = next(row for row in progress["annotators"] if row["user_id"] == worker2.user_id)
    assert (row["attention_checks"], row["attention_failed"], row["flagged"]) == (2, 0, False)


def test_completion_code_after_the_quota(study):
    client = Client()
    join(client, study)
    worker = CrowdWorker.objects.get(worker_id="w1")
    done = f"/annotate/{study.project_id}/crowd/done/"
    assert client.get(done)["Location"] == f"/annotate/{study.project_id}/"  # not yet: back to work
    _work_through(client_for(worker.user), study, choice="left")
    assert client.get(f"/annotate/{study.project_id}/")["Location"] == done
    page = client.get(done)
    assert page.status_code == 200 and b"C0DE42" in page.content
    assert b"https://app.prolific.com/submissions/complete?cc=C0DE42" in page.content
    worker.refresh_from_db()
    assert worker.completed_at is not None
    assert Label.objects.filter(annotator=worker.user).count() == QUOTA
    assert join(Client(), study)["Location"] == done  # coming back: the code again


def test_crowd_settings_api_for_curators_only(study, owner, alice):
    path = f"/api/projects/{study.project_id}/crowd/"
    answer = client_for(owner).get(path)
    assert answer.status_code == 200 and answer.json()["entry_link"].endswith(f"/join/{study.token}/")
    assert client_for(owner).get(f"/api/projects/{study.project_id}/").json()["crowd_token"] == study.token
    ProjectMembership.objects.create(project=study.project, user=alice, role="annotator")
    assert client_for(alice).get(path).status_code == 403
    assert client_for(alice).get(f"/api/projects/{study.project_id}/").json()["crowd_token"] is None
    bad = client_for(owner).put(path, {"check_rate": 1.5}, format="json")
    assert bad.status_code == 400 and "check_rate" in bad.json()
    rotated = client_for(owner).post(f"/api/projects/{study.project_id}/crowd/rotate-token/")
    assert rotated.status_code == 200 and rotated.json()["token"] != study.token


def test_attention_check_api_refuses_an_answer_outside_the_label_set(study, owner):
    item = AnnotationItem.objects.filter(project_id=study.project_id, attention_check__isnull=True).first()
    path = f"/api/projects/{study.project_id}/attention-checks/"
    bad = client_for(owner).post(path, {"item": item.pk, "expected": {"choice": "up"}}, format="json")
    assert bad.status_code == 400 and "expected.choice" in str(bad.json())
    item.refresh_from_db()
    assert item.labels_needed != CHECK_OVERLAP
    ok = client_for(owner).post(path, {"item": item.pk, "expected": {"choice": "tie"}}, format="json")
    assert ok.status_code == 201
    listed = client_for(owner).get(path).json()
    assert len(listed["checks"]) == 4


def test_curators_open_a_study_and_rotate_its_link_on_its_page(owner, alice):
    project = pairwise_project(owner, [alice], name="page study")
    client = Client()
    client.force_login(owner)
    page = f"/annotate/{project.pk}/crowd/"
    assert client.get(page).status_code == 200
    bad = client.post(page, {"action": "save", "platform": "custom", "quota": "5", "check_rate": "0.2",
                             "max_failures": "1", "completion_code": "ABC"})
    assert bad.status_code == 400 and b"Name the platform" in bad.content and not project_has_study(project)
    answer = client.post(page, {"action": "save", "platform": "mturk", "quota": "5", "check_rate": "0.2",
                                "max_failures": "2", "completion_code": "ABC", "open": "on"})
    assert answer.status_code == 302
    study = project.crowd_study
    assert (study.worker_param, study.quota, study.max_failures) == ("workerId", 5, 2)
    shown = client.get(page).content.decode()
    assert f"/join/{study.token}/?workerId={{{{%workerId%}}}}" in shown
    client.post(page, {"action": "rotate"})
    study.refresh_from_db()
    assert study.token not in shown
    alice_client = Client()
    alice_client.force_login(alice)
    assert alice_client.get(page).status_code == 403


def project_has_study(project) -> bool:
    project.refresh_from_db()
    return project.has_crowd_study


def test_project_list_totals_count_no_attention_check(study, owner):
    from annotation.selectors.progress import projects_progress_for

    row = projects_progress_for(user=owner, projects=[study.project])[study.project_id]
    regular = AnnotationItem.objects.filter(project_id=study.project_id, attention_check__isnull=True)
    assert row["labels_needed"] == sum(item.labels_needed for item in regular) == regular.count()
