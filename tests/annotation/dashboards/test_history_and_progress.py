"""Judge agreement per prompt version, and the live progress of running runs on the index."""

import csv
import io
from collections import defaultdict
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.dashboards.progress import eta_text
from annotation.models import AnnotationItem, GoldLabel, Label
from scoring import metrics as m
from scoring.models import EvaluationRun, RunJob, Verdict
from scoring.selectors import run_progress
from tests.annotation_factories import JudgeConfigFactory
from tests.annotation.dashboards.builders import agreement_setup
from tests.factories import ReportFactory

pytestmark = pytest.mark.django_db


def test_agreement_per_prompt_version(curator_client):
    project, owner, users = agreement_setup(n_verdicts=9)
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    newer = [item.target_id for item in items[::2]]
    # the newer prompt version's verdicts were made later
    Verdict.objects.filter(pk__in=newer).update(prompt_version="v2", created_at=timezone.now() + timedelta(days=1))
    response = curator_client.get(reverse("dashboards:agreement"))
    [group] = response.context["judge"]["groups"]

    labels = defaultdict(list)
    for item_id, value in Label.objects.filter(project=project).values_list("item_id", "value"):
        labels[item_id].append(value["label"])
    gold = dict(GoldLabel.objects.filter(item__project=project).values_list("item_id", "value"))
    per_version = defaultdict(lambda: ([], []))
    for item in items:
        verdict = Verdict.objects.get(pk=item.target_id)
        if item.pk in gold:
            reference = gold[item.pk]["label"]
        elif len(set(labels[item.pk])) == 1:
            reference = labels[item.pk][0]
        else:
            continue
        per_version[verdict.prompt_version][0].append(verdict.label)
        per_version[verdict.prompt_version][1].append(reference)
    assert [v["prompt_version"] for v in group["versions"]] == ["v1", "v2"]
    for row in group["versions"]:
        judged, reference = per_version[row["prompt_version"]]
        assert row["n"] == len(judged)
        assert row["accuracy"] == pytest.approx(m.percent_agreement(judged, reference))
        assert row["kappa"] == pytest.approx(m.cohen_kappa(judged, reference))
        assert row["alpha"] == pytest.approx(m.krippendorff_alpha([judged, reference], level="nominal"))
    assert sum(v["n"] for v in group["versions"]) == group["n"]
    html = response.content.decode()
    assert html.count('data-version="v') == 2
    exported = list(csv.DictReader(io.StringIO(
        curator_client.get(reverse("dashboards:agreement"), {"format": "csv"}).content.decode())))
    assert [r["prompt_version"] for r in exported] == ["", "v1", "v2"]
    assert float(exported[2]["accuracy"]) == pytest.approx(group["versions"][1]["accuracy"])


def _running_run(name, *, done=3, failed=1, pending=2, running=1):
    run = EvaluationRun.objects.create(name=name, protocol="deepsynth", judge_config=JudgeConfigFactory(name=f"j {name}"),
                                       status=EvaluationRun.Status.RUNNING, started_at=timezone.now())
    now = timezone.now()
    statuses = ["done"] * done + ["failed"] * failed + ["pending"] * pending + ["running"] * running
    for n, status in enumerate(statuses):
        settled = status in ("done", "failed")
        RunJob.objects.create(run=run, report=ReportFactory(), step="all", status=status,
                              started_at=now - timedelta(seconds=10 + n) if status != "pending" else None,
                              finished_at=now if settled else None)
    return run


def test_index_lists_running_runs_and_polls_only_while_they_run(curator_client, django_assert_max_num_queries):
    run = _running_run("nightly")
    EvaluationRun.objects.create(name="finished one", protocol="deepsynth", judge_config=JudgeConfigFactory(name="f"),
                                 status=EvaluationRun.Status.FINISHED)
    response = curator_client.get(reverse("dashboards:index"))
    html = response.content.decode()
    expected = run_progress(run=run)
    [row] = response.context["progress"]["runs"]
    assert (row["done"], row["failed"], row["total"]) == (3, 1, 7) == (expected["done"], expected["failed"], expected["total"])
    assert row["eta_seconds"] == pytest.approx(expected["eta_seconds"])
    assert 'hx-trigger="every 2s"' in html and f'href="/runs/{run.pk}/"' in html
    assert "3 / 7" in html and eta_text(expected["eta_seconds"]) in html and "finished one" not in html
    for n in range(4):  # more running runs cost two queries each, up to the ten shown
        _running_run(f"r{n}")
    with django_assert_max_num_queries(4 + 2 * 10):
        fragment = curator_client.get(reverse("dashboards:run_progress"))
    assert fragment.content.decode().count("data-run=") == 5

    EvaluationRun.objects.filter(status=EvaluationRun.Status.RUNNING).update(status=EvaluationRun.Status.FINISHED)
    fragment = curator_client.get(reverse("dashboards:run_progress")).content.decode()
    assert "hx-trigger" not in fragment and "No evaluation run is running." in fragment


def test_more_runs_than_shown(curator_client):
    for n in range(12):
        _running_run(f"run {n}", done=1, failed=0, pending=1, running=0)
    progress = curator_client.get(reverse("dashboards:run_progress")).context["progress"]
    assert len(progress["runs"]) == 10 and progress["more"] == 2
    assert progress["runs"][0]["name"] == "run 11"


@pytest.mark.parametrize("seconds, text", [(None, "—"), (0, "0 s"), (59.6, "1 min 0 s"), (200, "3 min 20 s"),
                                           (7260, "2 h 1 min")])
def test_eta_text(seconds, text):
    assert eta_text(seconds) == text
