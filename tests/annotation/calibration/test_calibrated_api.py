"""Calibrated scores end to end: sampled agreement projects (inclusion probabilities), expert
labels through the labelling service, ``GET /api/runs/<id>/calibrated/`` (numbers against an
independent computation, who may read it, blind mode), and the run page's card."""


import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import AnnotationItem, AnnotationProject, Role
from annotation.services.projects import membership_add, project_create, project_populate
from scoring.models import EvaluationRun
from tests.annotation.calibration.closed_form import assert_row_is_ppi
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, annotator, curator, label_all
from tests.factories import ReportFactory, SystemFactory, TaskFactory

STEP = "deepsynth.checklist_group"
REWARD = {"correct": 1.0, "omitted": 0.0, "incorrect": -1.0}


def _judged(n_per_system: int = 40):
    """Two systems' reports on one task, each with ``n_per_system`` first-repeat verdicts."""
    judge = JudgeConfigFactory()
    task = TaskFactory(protocol="deepsynth")
    systems = [SystemFactory(name="alpha"), SystemFactory(name="beta")]
    rng = np.random.default_rng(4)
    for system, p_correct in zip(systems, (0.7, 0.3)):
        report = ReportFactory(task=task, system=system)
        for k in range(n_per_system):
            label = "correct" if rng.random() < p_correct else ("omitted" if rng.random() < 0.8 else "incorrect")
            VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=k + 1, label=label)
    run = EvaluationRun.objects.create(protocol="deepsynth", judge_config=judge, status=EvaluationRun.Status.FINISHED)
    run.tasks.set([task])
    run.systems.set(systems)
    return judge, task, systems, run


def _project(owner, judge, task, *, sampling="uniform", size=30, name="calibration", **options):
    return project_create(name=name, kind="agreement", created_by=owner, tasks=[task], judge_config=judge,
                          sampling=sampling, sample_size=size, label_set={"label": list(REWARD)}, **options)


@pytest.mark.django_db
def test_uniform_sample_records_inclusion_probabilities_in_random_order(owner):
    judge, task, _, _ = _judged()
    project = _project(owner, judge, task, size=30)
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    assert project.sampling == "uniform" and len(items) == 30
    assert all(item.inclusion_probability == pytest.approx(30 / 80) for item in items)
    assert sum(1 / item.inclusion_probability for item in items) == pytest.approx(80)  # Horvitz–Thompson: N
    assert [i.target_id for i in items] != sorted(i.target_id for i in items)  # offered in a random order
    with pytest.raises(ValueError, match="sample is fixed"):
        project_populate(project=project, actor=owner)
    again = _project(owner, judge, task, size=30, name="calibration again")
    assert {i.target_id for i in again.items.all()} != {i.target_id for i in items}  # another project, another draw


@pytest.mark.django_db
def test_stratified_and_adaptive_samples(owner):
    judge, task, systems, _ = _judged()
    project = _project(owner, judge, task, sampling="stratified", size=10)
    items = list(project.items.all())
    by_system = {s.pk: 0 for s in systems}
    from scoring.models import Verdict
    for item in items:
        by_system[Verdict.objects.get(pk=item.target_id).report.system_id] += 1
    assert sorted(by_system.values()) == [5, 5]
    assert all(item.inclusion_probability == pytest.approx(5 / 40) for item in items)
    adaptive = _project(owner, judge, task, sampling="adaptive", size=20, name="adaptive")
    probabilities = [i.inclusion_probability for i in adaptive.items.all()]
    assert probabilities and all(0.2 * 20 / 80 - 1e-9 <= p <= 1 for p in probabilities)
    everything = project_create(name="all", kind="agreement", created_by=owner, tasks=[task], judge_config=judge,
                                label_set={"label": list(REWARD)})
    assert everything.sampling == "all" and set(everything.items.values_list("inclusion_probability", flat=True)) == {1.0}
    with pytest.raises(ValueError, match="sample_size"):
        _project(owner, judge, task, size=0, name="no size")
    with pytest.raises(ValueError, match="sampling"):
        _project(owner, judge, task, sampling="chosen", name="chosen")


def _label_sample(project, expert, flip_every: int = 4):
    """The expert labels every item: the judge's label, but 'omitted' → 'correct' on every
    ``flip_every``-th item (the judge under-credits)."""
    from scoring.models import Verdict

    for k, item in enumerate(project.items.order_by("position")):
        judge_label = Verdict.objects.get(pk=item.target_id).label
        label = "correct" if (judge_label == "omitted" and k % flip_every == 0) else judge_label
        label_all(item, [expert], {"label": label})


@pytest.mark.django_db
def test_api_numbers_match_an_independent_ppi_computation(owner):
    from scoring.models import Verdict

    judge, task, systems, run = _judged()
    project = _project(owner, judge, task, size=40)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    answer = APIClient()
    answer.force_login(owner)
    response = answer.get(reverse("api:run-calibrated", kwargs={"pk": run.pk}), {"project": project.pk})
    assert response.status_code == 200, response.content
    body = response.json()
    entry = next(m for m in body["metrics"] if m["metric"] == "item_reward")
    for row in entry["systems"]:
        verdicts = Verdict.objects.filter(report__system_id=row["system_id"], judge_config=judge)
        f_all = np.array([REWARD[v.label] for v in verdicts])
        labelled = {i.target_id: i for i in project.items.all()}
        y, f = [], []
        for v in verdicts:
            if v.pk in labelled:
                y.append(REWARD[labelled[v.pk].labels.get().value["label"]])
                f.append(REWARD[v.label])
        assert_row_is_ppi(row, y, f, f_all)
    best = entry["best_vs_second"]
    assert best["best"] != best["second"] and best["ppi"]["low"] < best["ppi"]["estimate"] < best["ppi"]["high"]
    # the planner rides on the same route
    plan = answer.get(reverse("api:run-calibrated", kwargs={"pk": run.pk}),
                      {"project": project.pk, "metric": "item_reward", "width": "0.2"}).json()["plan"]
    assert plan["systems"] and all(s["more"] is None or s["more"] >= 0 for s in plan["systems"])
    assert "assumes" in plan["assumption"].lower()
    bad = answer.get(reverse("api:run-calibrated", kwargs={"pk": run.pk}), {"project": project.pk, "width": "x"})
    assert bad.status_code == 400 and "width" in bad.json()


@pytest.mark.django_db
def test_only_the_projects_curators_read_it_and_blind_annotators_learn_nothing(owner):
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=12)
    assert project.blind
    expert, outsider = annotator("expert"), annotator("outsider")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    url = reverse("api:run-calibrated", kwargs={"pk": run.pk})

    def status(user, params):
        client = APIClient()
        if user is not None:
            client.force_login(user)
        response = client.get(url, params)
        return response.status_code, response.content.decode()

    # an annotator with open blind items: the ranking gate, naming only their own project
    code, text = status(expert, {"project": project.pk})
    assert code == 403 and "closed to you" in text and "item_reward" not in text
    _label_sample(project, expert)
    code, text = status(expert, {"project": project.pk})  # done labelling: still not a curator of it
    assert code == 403 and "curators" in text and "estimate" not in text
    assert status(outsider, {"project": project.pk})[0] == 404  # no hint that the project exists
    assert status(None, {"project": project.pk})[0] == 403
    assert status(owner, {})[0] == 400
    other = JudgeConfigFactory()
    other_run = EvaluationRun.objects.create(protocol="deepsynth", judge_config=other)
    response = APIClient()
    response.force_login(owner)
    refused = response.get(reverse("api:run-calibrated", kwargs={"pk": other_run.pk}), {"project": project.pk})
    assert refused.status_code == 400 and "another judge configuration" in refused.content.decode()


@pytest.mark.django_db
def test_hand_picked_project_counts_no_label(owner):
    from annotation.services.projects import project_from_verdicts
    from scoring.models import Verdict

    judge, task, _, run = _judged(10)
    project = project_from_verdicts(name="picked", curator=owner,
                                    verdict_ids=list(Verdict.objects.values_list("pk", flat=True)[:6]))
    assert project.sampling == AnnotationProject.Sampling.CHOSEN
    client = APIClient()
    client.force_login(owner)
    body = client.get(reverse("api:run-calibrated", kwargs={"pk": run.pk}), {"project": project.pk}).json()
    assert "chosen by hand" in body["warning"]
    assert all(row["n_human"] == 0 and row["ppi"] is None for m in body["metrics"] for row in m["systems"])


@pytest.mark.django_db
def test_run_page_shows_the_card_to_the_projects_curator_only(client, owner):
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=30)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    client.force_login(owner)
    page = client.get(reverse("runs:detail", kwargs={"run_id": run.pk})).content.decode()
    assert 'id="calibrated-scores"' in page and "prediction-powered" in page and project.name in page
    client.force_login(curator("another"))  # a global curator who curates the project too: sees it
    assert 'id="calibrated-scores"' in client.get(reverse("runs:detail", kwargs={"run_id": run.pk})).content.decode()
    viewer = annotator("viewer")
    client.force_login(viewer)
    page = client.get(reverse("runs:detail", kwargs={"run_id": run.pk})).content.decode()
    assert 'id="calibrated-scores"' not in page


@pytest.mark.django_db
def test_progress_page_says_how_it_sampled_and_plans_for_curators(client, owner):
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, sampling="adaptive", size=24)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    url = reverse("annotation:progress", kwargs={"project_id": project.pk})
    client.force_login(owner)
    page = client.get(url, {"plan_metric": "item_reward", "plan_width": "0.1"}).content.decode()
    assert 'id="sampling-design"' in page and "least sure" in page
    assert 'id="planner-answer"' in page and "more labels" in page and "Assumes" in page
    separation = client.get(url, {"plan_metric": "item_reward", "plan_width": "0.1", "plan_separation": "1"})
    assert "best-vs-second interval" in separation.content.decode() or "not reachable" in separation.content.decode()
    client.force_login(expert)  # the annotator: told it is a random sample, not that it favours uncertain verdicts
    page = client.get(url).content.decode()
    assert 'id="sampling-design"' in page and "least sure" not in page and 'id="planner"' not in page


@pytest.mark.django_db
def test_leaderboard_shows_the_card_for_the_newest_calibrated_run(client, owner):
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=30)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    client.force_login(owner)
    page = client.get(reverse("dashboards:leaderboard"), {"protocol": "deepsynth"}).content.decode()
    assert 'id="calibrated-scores"' in page and 'id="calibrated-run"' in page


@pytest.mark.django_db
def test_population_leaves_out_what_a_blind_study_hides_from_the_reader(owner):
    from annotation.calibration.selectors import calibrated_scores

    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=20)
    full = calibrated_scores(run=run, project=project, user=owner)
    n_full = sum(row["n_judge"] for m in full["metrics"][:1] for row in m["systems"])
    assert n_full == 80
    # a project curator who is no global curator reads the same population
    member = annotator("member-curator")
    membership_add(project=project, user=member, role=Role.CURATOR, actor=owner)
    same = calibrated_scores(run=run, project=project, user=member)
    assert sum(row["n_judge"] for row in same["metrics"][0]["systems"]) == 80
    # the member labels blind in another project over 10 of these verdicts: those 10 are left out
    blind = _project(owner, judge, task, size=10, name="blind elsewhere")
    membership_add(project=blind, user=member, role=Role.ANNOTATOR, actor=owner)
    hidden = calibrated_scores(run=run, project=project, user=member)
    assert sum(row["n_judge"] for row in hidden["metrics"][0]["systems"]) == 70


@pytest.mark.django_db
def test_new_project_form_and_api_create_a_calibration_sample(client, owner):
    judge, task, _, _ = _judged()
    client.force_login(owner)
    body = {"kind": "agreement", "name": "Calibrate the judge", "tasks": [task.pk], "judge_config": judge.pk,
            "hold_minutes": "15", "blind": "on", "component": "report", "sampling": "stratified", "sample_size": "8",
            "labels": "correct, omitted, incorrect"}
    preview = client.post(reverse("annotation:new"), {**body, "action": "preview"})
    assert preview.status_code == 200 and 'id="preview-items">8<' in preview.content.decode()
    response = client.post(reverse("annotation:new"), {**body, "action": "create"})
    assert response.status_code == 302, response.content.decode()[-2000:]
    project = AnnotationProject.objects.get(name="Calibrate the judge")
    assert project.sampling == "stratified" and project.items.count() == 8
    refused = client.post(reverse("annotation:new"), {**body, "name": "No size", "sample_size": "", "action": "create"})
    assert refused.status_code == 400 and "sample_size" in refused.content.decode()
    api = APIClient()
    api.force_login(owner)
    created = api.post(reverse("api:project-list"), {"name": "via api", "kind": "agreement", "tasks": [task.pk],
                                                     "judge_config": judge.pk, "sampling": "uniform", "sample_size": 5,
                                                     "label_set": {"label": list(REWARD)}}, format="json")
    assert created.status_code == 201 and created.json()["sampling"] == "uniform"
    assert AnnotationProject.objects.get(name="via api").items.count() == 5


@pytest.mark.django_db
def test_a_census_project_warns_until_complete_then_counts_every_label(owner):
    from annotation.calibration.selectors import calibrated_scores

    judge, task, _, run = _judged(6)
    project = project_create(name="census", kind="agreement", created_by=owner, tasks=[task], judge_config=judge,
                             label_set={"label": list(REWARD)})
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    assert "not a random sample" in calibrated_scores(run=run, project=project, user=owner)["warning"]
    _label_sample(project, expert)
    result = calibrated_scores(run=run, project=project, user=owner)
    assert result["warning"] == "" and not result["random_sample"]
    rows = next(m for m in result["metrics"] if m["metric"] == "item_reward")["systems"]
    assert all(row["n_human"] == row["n_judge"] == 6 for row in rows)


@pytest.mark.django_db
def test_disagreeing_annotators_wait_for_adjudication(owner):
    from annotation.calibration.selectors import calibrated_scores
    from annotation.loop.settle import item_adjudicate

    judge, task, _, run = _judged(10)
    project = _project(owner, judge, task, size=8, overlap=2)
    first, second = annotator("first"), annotator("second")
    for user in (first, second):
        membership_add(project=project, user=user, role=Role.ANNOTATOR, actor=owner)
    items = list(project.items.order_by("position"))
    for k, item in enumerate(items):
        label_all(item, [first, second], {"label": "correct"}, {"label": "omitted" if k < 3 else "correct"})
    result = calibrated_scores(run=run, project=project, user=owner)
    rows = next(m for m in result["metrics"] if m["metric"] == "item_reward")["systems"]
    assert sum(r["waiting_adjudication"] for r in rows) == 3 and sum(r["n_human"] for r in rows) == 5
    item_adjudicate(item=AnnotationItem.objects.get(pk=items[0].pk), curator=owner, value={"label": "omitted"})
    rows = next(m for m in calibrated_scores(run=run, project=project, user=owner)["metrics"]
                if m["metric"] == "item_reward")["systems"]
    assert sum(r["waiting_adjudication"] for r in rows) == 2 and sum(r["n_human"] for r in rows) == 6
