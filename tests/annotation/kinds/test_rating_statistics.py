"""A rating project's own figures in its agreement figures (``/api/dashboards/agreement/``),
each equal to an independent computation on the same scores: α per criterion (the
``krippendorff`` package), ICC(2,1) (the raters × reports table), per system the mean of the
reports' mean scores, and the judge against the experts (SciPy's Spearman, the mean difference)."""

import numpy as np
import krippendorff
import pytest
from rest_framework.test import APIClient
from scipy import stats

from annotation.models import AnnotationItem
from annotation.services.projects import project_create
from scoring.metrics.ratings import icc_2_1
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, annotator, curator, label_all, members_add
from tests.factories import ReportFactory, SystemFactory, TaskFactory

CRITERIA = ["coverage", "structure"]


@pytest.mark.django_db
def test_rating_figures_equal_independent_computations():
    owner = curator("owner")
    raters = [annotator("ana"), annotator("ben")]
    systems = [SystemFactory(name=f"s{n}") for n in range(3)]
    tasks = [TaskFactory(protocol="surveylens") for _ in range(4)]
    reports = [ReportFactory(task=task, system=system) for task in tasks for system in systems]
    judge = JudgeConfigFactory()
    project = project_create(name="r", kind="rating", created_by=owner, tasks=tasks, criteria=CRITERIA, overlap=2,
                             judge_config=judge)
    members_add(project, owner, raters)
    rng = np.random.default_rng(5)
    given = {}  # (rater, report, criterion) -> score
    judged = {}
    for item in AnnotationItem.objects.filter(project=project).order_by("position"):
        base = {c: int(rng.integers(1, 5)) for c in CRITERIA}
        values = [{"scores": {c: int(min(5, base[c] + rng.integers(0, 2))) for c in CRITERIA}} for _ in raters]
        label_all(item, raters, *values)
        for rater, value in zip(raters, values):
            for c, s in value["scores"].items():
                given[rater.pk, item.target_id, c] = s
        for c in CRITERIA:  # the judge: SciSage's 1–5 section-structure step, keyed by the criterion
            judged[item.target_id, c] = float(min(5, base[c] + 1))
            VerdictFactory(report_id=item.target_id, judge_config=judge, step="scisage.section_structure",
                           target_kind="quality_dimension", target_id=0, target_key=c, label="scored",
                           score=judged[item.target_id, c])

    client = APIClient()
    client.force_authenticate(owner)
    figures = client.get(f"/api/dashboards/agreement/?project={project.pk}").json()
    mine = next(p for p in figures["iaa"]["projects"] if p["id"] == project.pk)["stats"]["rating"]
    assert mine["n_scores"] == len(given)
    report_ids = [r.pk for r in reports]
    for row in mine["criteria"]:
        c = row["criterion"]
        table = np.array([[given[r.pk, report, c] for report in report_ids] for r in raters], dtype=float)
        assert row["alpha_interval"] == pytest.approx(
            krippendorff.alpha(reliability_data=table, level_of_measurement="interval"), abs=1e-9)
        units = [report for _ in raters for report in report_ids]
        coders = [r.pk for r in raters for _ in report_ids]
        assert row["icc"]["icc"] == pytest.approx(icc_2_1(units, coders, table.ravel().tolist())["icc"], rel=1e-9)
        expert_mean = table.mean(axis=0)
        for line in row["systems"]:
            mine_reports = [i for i, r in enumerate(reports) if r.system.name == line["system"]]
            assert line["mean"] == pytest.approx(expert_mean[mine_reports].mean())
            assert line["n"] == 4 and line["n_clusters"] == 4
            judge_of_system = [judged[reports[i].pk, c] for i in mine_reports]
            assert line["judge_mean"] == pytest.approx(np.mean(judge_of_system)) and line["judge_n"] == 4
        versus = row["judge_vs_experts"]
        judge_scores = np.array([judged[report, c] for report in report_ids])
        assert versus["n"] == len(report_ids)
        assert versus["spearman"] == pytest.approx(stats.spearmanr(judge_scores, expert_mean).statistic, rel=1e-9)
        assert versus["mean_difference"] == pytest.approx((judge_scores - expert_mean).mean())

    # the same figures beside the human ranking (the human dashboard's API)
    human = client.get(f"/api/dashboards/human/?project={project.pk}").json()
    assert [p["id"] for p in human["ratings"]] == [project.pk]
    assert human["ratings"][0]["criteria"] == mine["criteria"]

    # ... and on the pages: the human dashboard and the protocol's leaderboard
    from django.test import Client

    html = Client()
    html.force_login(owner)
    for url in (f"/dashboards/human/?project={project.pk}", "/dashboards/leaderboard/?protocol=surveylens"):
        page = html.get(url).content.decode()
        assert f'id="expert-ratings-{project.pk}"' in page and "Expert rubric ratings: r" in page, url
        assert all(system.name in page for system in systems) and "structure — α (interval)" in page, url
