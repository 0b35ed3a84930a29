"""Where should humans look next: flagged targets, their priority, and the one-click project."""

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from core.models import AuditLog

from annotation.models import AnnotationItem, AnnotationProject
from scoring.models import Verdict
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, annotator, curator
from tests.factories import ReportFactory, TaskFactory

pytestmark = pytest.mark.django_db

STEP = "deepsynth.checklist_group"


def _verdict(report, judge, target_id, label, *, repeat=0, confidence=None, step=STEP, version="v1", error=""):
    return VerdictFactory(report=report, judge_config=judge, prompt_version=version, step=step,
                          target_kind="checklist_item", target_id=target_id, repeat=repeat, label=label,
                          confidence=confidence, error=error)


@pytest.fixture
def judged():
    """Targets 1–6 of one report under judges A and B (and A's newer prompt version):
    1 judges disagree; 2 A's repeats disagree 2:1; 3 low confidence 0.2; 4 everybody agrees,
    confidently; 5 judges A, B, A-v2 split 2:1 and A-v2's repeats tie; 6 only a failed verdict
    disagrees. Plus a ReportBench target with low confidence (another protocol)."""
    a, b = JudgeConfigFactory(name="judge A"), JudgeConfigFactory(name="judge B")
    report = ReportFactory(task=TaskFactory(protocol="deepsynth"))
    v = {}
    v["1a"] = _verdict(report, a, 1, "correct", confidence=0.9)
    v["1b"] = _verdict(report, b, 1, "incorrect", confidence=0.95)
    v["2a"] = _verdict(report, a, 2, "correct")
    _verdict(report, a, 2, "correct", repeat=1)
    _verdict(report, a, 2, "omitted", repeat=2)
    v["3a"] = _verdict(report, a, 3, "correct", confidence=0.2)
    _verdict(report, a, 4, "correct", confidence=0.99)
    _verdict(report, b, 4, "correct", confidence=0.8)
    v["5a"] = _verdict(report, a, 5, "correct")
    _verdict(report, b, 5, "correct")
    _verdict(report, a, 5, "correct", version="v2")
    _verdict(report, a, 5, "incorrect", repeat=1, version="v2")
    _verdict(report, a, 6, "correct")
    _verdict(report, b, 6, "", error="timeout")
    rb_report = ReportFactory(task=TaskFactory(protocol="reportbench"))
    v["rb"] = _verdict(rb_report, a, 7, "consistent", confidence=0.3, step="reportbench.consistency")
    return a, b, report, v


def test_flagged_targets_ranked_by_priority(curator_client, judged):
    a, b, report, v = judged
    response = curator_client.get(reverse("dashboards:look_next"))
    assert response.status_code == 200
    data = response.context["data"]
    items = {i["target_id"]: i for i in data["items"]}
    assert set(items) == {1, 2, 3, 5, 7}  # 4 agrees confidently; 6's disagreeing verdict failed
    # 1: two judges, different decisions → 1 − 1/2
    assert items[1]["judge_disagreement"] == pytest.approx(0.5) and items[1]["repeat_disagreement"] == 0
    assert items[1]["priority"] == pytest.approx(0.5) and items[1]["reasons"] == ["judges disagree"]
    # 2: one judge, repeats correct/correct/omitted → 1 − 2/3
    assert items[2]["repeat_disagreement"] == pytest.approx(1 / 3) and items[2]["judge_disagreement"] == 0
    assert items[2]["judges"][0]["labels"] == ["correct", "correct", "omitted"]
    # 3: confidence 0.2 under 0.6 → (0.6 − 0.2) / 0.6
    assert items[3]["low_confidence"] == pytest.approx(0.4 / 0.6) and items[3]["lowest_confidence"] == 0.2
    # 5: A v1 correct, B correct, A v2 split (no decision) → 1 − 2/3; A v2's repeats tie → 1 − 1/2
    assert items[5]["judge_disagreement"] == pytest.approx(1 / 3)
    assert items[5]["repeat_disagreement"] == pytest.approx(0.5)
    assert items[5]["priority"] == pytest.approx(1 / 3 + 0.5)
    assert [j["decision"] for j in items[5]["judges"]] == ["correct", None, "correct"]
    # 7 (ReportBench): confidence 0.3 → 0.5
    assert items[7]["priority"] == pytest.approx(0.5)
    order = [i["target_id"] for i in data["items"]]
    assert order[:2] == [5, 3] and order[-1] == 2
    assert data["n_flagged"] == 5 and data["n_judges_disagree"] == 2 and data["n_repeats_disagree"] == 2
    assert data["n_low_confidence"] == 2
    # the verdict an agreement project would show: the first judge's first repeat
    assert items[1]["verdict_id"] == v["1a"].pk and items[5]["verdict_id"] == v["5a"].pk
    html = response.content.decode()
    assert 'id="create-project"' in html and html.count('name="verdict"') == 5

    narrowed = curator_client.get(reverse("dashboards:look_next"), {"protocol": "reportbench"}).context["data"]
    assert [i["target_id"] for i in narrowed["items"]] == [7]
    only_b = curator_client.get(reverse("dashboards:look_next"), {"judge": b.pk}).context["data"]
    assert {i["target_id"] for i in only_b["items"]} == {1, 5}
    assert next(i for i in only_b["items"] if i["target_id"] == 1)["verdict_id"] == v["1b"].pk
    strict = curator_client.get(reverse("dashboards:look_next"), {"confidence": "0.25"}).context["data"]
    assert {i["target_id"] for i in strict["items"]} == {1, 2, 3, 5}
    assert next(i for i in strict["items"] if i["target_id"] == 3)["low_confidence"] == pytest.approx(0.05 / 0.25)

    exported = list(csv.DictReader(io.StringIO(
        curator_client.get(reverse("dashboards:look_next"), {"format": "csv"}).content.decode())))
    assert [int(r["verdict_id"]) for r in exported] == [i["verdict_id"] for i in data["items"]]
    assert float(exported[0]["priority"]) == pytest.approx(1 / 3 + 0.5)


@pytest.mark.parametrize("params, message", [
    ({"confidence": "abc"}, "confidence: &#x27;abc&#x27; is not a number"),
    ({"confidence": "0"}, "confidence: 0.0 is not a threshold"),
    ({"protocol": "nope"}, "protocol: &#x27;nope&#x27; is not one of"),
    ({"judge": "x"}, "judge: &#x27;x&#x27; is not an id"),
])
def test_bad_filters_are_refused(curator_client, params, message):
    response = curator_client.get(reverse("dashboards:look_next"), params)
    assert response.status_code == 400 and message in response.content.decode()


def test_only_curators_see_it(client, judged):
    client.force_login(annotator("reader"))
    assert client.get(reverse("dashboards:look_next")).status_code == 403
    assert client.post(reverse("dashboards:look_next_project"), {"verdict": [judged[3]["1a"].pk]}).status_code == 403
    assert not AnnotationProject.objects.exists()


def test_one_click_project_from_the_flagged_targets(judged):
    a, b, report, v = judged
    boss = curator("boss")
    client = Client(enforce_csrf_checks=True)
    client.force_login(boss)
    page = client.get(reverse("dashboards:look_next"))
    shown = [i["verdict_id"] for i in page.context["data"]["items"]]
    token = page.cookies["csrftoken"].value
    # without the CSRF token the POST is refused and nothing is created
    refused = client.post(reverse("dashboards:look_next_project"), {"verdict": shown, "name": "look"})
    assert refused.status_code == 403 and not AnnotationProject.objects.exists()

    response = client.post(reverse("dashboards:look_next_project"),
                           {"verdict": shown, "name": "look at these", "csrfmiddlewaretoken": token})
    project = AnnotationProject.objects.get(name="look at these")
    assert response.status_code == 302 and response["Location"] == reverse("annotation:progress", args=[project.pk])
    assert project.kind == "agreement" and project.judge_config == a  # most of the shown verdicts are A's
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    assert [(i.target_kind, i.target_id) for i in items] == [("verdict", pk) for pk in shown]
    assert {i.task_id for i in items} == set(Verdict.objects.filter(pk__in=shown).values_list("report__task_id", flat=True))
    assert project.steps == sorted({STEP, "reportbench.consistency"})
    # every label of both steps, also one no judge gave (a human may still choose it)
    assert set(project.label_set["label"]) == {"correct", "incorrect", "omitted", "consistent", "inconsistent"}
    [event] = AuditLog.objects.filter(project_id=project.pk, action="project.create")
    assert event.actor == boss and event.after["verdicts"] == shown and event.after["items"] == len(shown)
    assert project.memberships.get().user == boss
    landed = client.get(response["Location"])
    assert landed.status_code == 200 and "look at these" in landed.content.decode()


@pytest.mark.parametrize("post, message", [
    ({"verdict": ["999999"]}, "verdicts: no verdict with id 999999"),
    ({"verdict": ["abc"]}, "verdict: &#x27;abc&#x27; is not a verdict id"),
    ({}, "verdicts: choose at least one verdict"),
])
def test_bad_project_requests_change_nothing(curator_client, judged, post, message):
    before = AuditLog.objects.count()
    response = curator_client.post(reverse("dashboards:look_next_project"), {"name": "x", **post})
    assert response.status_code == 400 and message in response.content.decode()
    assert not AnnotationProject.objects.exists() and AuditLog.objects.count() == before


def test_failed_verdicts_and_taken_names_are_refused(curator_client, judged):
    failed = Verdict.objects.get(label="")
    response = curator_client.post(reverse("dashboards:look_next_project"), {"verdict": [failed.pk], "name": "x"})
    assert response.status_code == 400 and "have no label (the judge failed)" in response.content.decode()
    ok = judged[3]["1a"].pk
    assert curator_client.post(reverse("dashboards:look_next_project"), {"verdict": [ok], "name": "x"}).status_code == 302
    again = curator_client.post(reverse("dashboards:look_next_project"), {"verdict": [ok], "name": "x"})
    assert again.status_code == 400 and "a project called &#x27;x&#x27; already exists" in again.content.decode()
    assert AnnotationProject.objects.count() == 1


def test_get_on_the_create_url_is_not_allowed(curator_client):
    assert curator_client.get(reverse("dashboards:look_next_project")).status_code == 405


def test_service_rolls_back_when_the_label_set_is_too_small():
    from annotation.services.projects import project_from_verdicts

    judge = JudgeConfigFactory(name="lonely")
    only = _verdict(ReportFactory(), judge, 1, "correct", step="surveylens.lonely_step", confidence=0.1)
    before = AuditLog.objects.count()
    with pytest.raises(ValueError, match="label_set.label: give at least two values"):
        project_from_verdicts(name="too small", curator=curator("boss"), verdict_ids=[only.pk])
    assert not AnnotationProject.objects.exists() and AuditLog.objects.count() == before
    with pytest.raises(PermissionError, match="only curators create annotation projects"):
        project_from_verdicts(name="not yours", curator=annotator("someone"), verdict_ids=[only.pk])
    assert not AnnotationProject.objects.exists()
