"""Calibrated DeepSynth group scores: units of several verdicts (a checklist group), sampled by
group, their values against a computation by hand of eq. 3, the PPI figures against ppi_py and a
numpy closed form, and the rules for units waiting, part-labelled, hidden or refused."""


import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.calibration.selectors import calibrated_scores
from annotation.models import AnnotationItem, Role
from annotation.services.projects import membership_add, project_create
from benchmark.models import ReviewStatus
from scoring.models import EvaluationRun, Verdict
from scoring.pipelines.deepsynth import DeepSynthPipeline
from tests.annotation.calibration.closed_form import assert_row_is_ppi
from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, annotator, label_all
from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, ReportFactory, SystemFactory, TaskFactory

STEP = "deepsynth.checklist_group"
REWARD = {"correct": 1, "omitted": 0, "incorrect": -1}
# per group: (number of items, threshold, clip factor); θ by hand below
GROUPS = [(3, 2.0, None), (4, None, 0.8), (2, None, None), (5, 3.0, None), (3, None, None), (4, None, 0.5),
          (2, 1.0, None), (3, None, None), (5, None, 0.8), (4, 4.0, None)]


def _theta(n_items: int, threshold, clip, judged: int) -> float:
    """Eq. 3's θ as the module doc of ``scoring.pipelines.deepsynth`` states it, written out here."""
    theta = min(threshold, n_items) if threshold is not None else (clip * n_items if clip is not None else n_items)
    if judged < n_items:
        theta = theta * judged / n_items
    return min(theta, judged)


def _by_hand(rewards: list[int], theta: float) -> float:
    return min(1.0, max(0.0, sum(rewards) / theta))


def _checklist():
    """One DeepSynth task with the ``GROUPS`` checklist, two systems' reports judged on every
    item (the second group's last item failed on every report, its rejected item never judged)."""
    judge = JudgeConfigFactory()
    task = TaskFactory(protocol="deepsynth")
    groups = []
    for k, (n, threshold, clip) in enumerate(GROUPS):
        group = ChecklistGroupFactory(task=task, threshold=threshold, clip_factor=clip,
                                      kind="general" if k % 2 else "constraint")
        groups.append((group, [ChecklistItemFactory(group=group) for _ in range(n)]))
    ChecklistItemFactory(group=groups[1][0], review_status=ReviewStatus.REJECTED)
    systems = [SystemFactory(name="alpha"), SystemFactory(name="beta")]
    rng = np.random.default_rng(11)
    reports = []
    for system, p_correct in zip(systems, (0.75, 0.35)):
        report = ReportFactory(task=task, system=system)
        reports.append(report)
        for g, (_, items) in enumerate(groups):
            for i, item in enumerate(items):
                if g == 1 and i == len(items) - 1:
                    VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=item.pk, label="",
                                   error="judge error: timeout")
                    continue
                label = "correct" if rng.random() < p_correct else ("omitted" if rng.random() < 0.7 else "incorrect")
                if g == 1:  # S = 1 over 3 judged items of 4: θ = 0.8 · 4 · 3/4 = 2.4, the score 1/2.4 (not 1/3.2)
                    label = "correct" if i == 0 else "omitted"
                VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=item.pk, label=label,
                               score=REWARD[label])
    run = EvaluationRun.objects.create(protocol="deepsynth", judge_config=judge, status=EvaluationRun.Status.FINISHED)
    run.tasks.set([task])
    run.systems.set(systems)
    return judge, task, systems, reports, groups, run


def _project(owner, judge, task, *, size=8, name="by group", **options):
    return project_create(name=name, kind="agreement", created_by=owner, tasks=[task], judge_config=judge,
                          sampling=options.pop("sampling", "uniform"), sample_size=size,
                          sampling_unit=options.pop("sampling_unit", "group"),
                          label_set={"label": list(REWARD)}, **options)


def _expert_label(verdict: Verdict, k: int) -> str:
    """The experts' label: the judge's, but an 'omitted' on every third verdict was in fact covered."""
    return "correct" if verdict.label == "omitted" and k % 3 == 0 else verdict.label


def _unit_values(groups, report, expert: dict[int, str] | None):
    """(judge value, expert value or None, verdict ids) of each group of ``report``, by hand."""
    out = []
    for (group, items), (n, threshold, clip) in zip(groups, GROUPS):
        verdicts = [Verdict.objects.filter(report=report, target_id=item.pk, error="").first() for item in items]
        verdicts = [v for v in verdicts if v is not None]
        theta = _theta(n, threshold, clip, len(verdicts))
        f = _by_hand([REWARD[v.label] for v in verdicts], theta)
        y = None
        if expert is not None and all(v.pk in expert for v in verdicts):
            y = _by_hand([REWARD[expert[v.pk]] for v in verdicts], theta)
        out.append((f, y, [v.pk for v in verdicts]))
    return out


@pytest.mark.django_db
def test_sampling_by_group_holds_whole_groups_with_the_groups_probability(owner):
    judge, task, _, reports, groups, _ = _checklist()
    project = _project(owner, judge, task, size=8)
    assert project.sampling_unit == "group" and project.steps == [STEP]
    items = list(AnnotationItem.objects.filter(project=project).order_by("position"))
    group_of = {v.pk: (v.report_id, item_group)
                for item_group, (_, members) in enumerate(groups) for m in members
                for v in Verdict.objects.filter(target_id=m.pk, error="")}
    drawn = [group_of[item.target_id] for item in items]
    # 20 groups (10 per report) hold a labelled verdict: π = 8 / 20 for every verdict of a drawn group
    assert len(set(drawn)) == 8
    assert all(item.inclusion_probability == pytest.approx(8 / 20) for item in items)
    for unit in set(drawn):  # every verdict of a drawn group is held
        members = {pk for pk, key in group_of.items() if key == unit}
        assert members == {item.target_id for item, key in zip(items, drawn) if key == unit}
    runs = [key for k, key in enumerate(drawn) if k == 0 or drawn[k - 1] != key]
    assert len(runs) == 8  # a group's verdicts together, groups in a random order
    assert runs != sorted(runs)
    # Horvitz–Thompson over units: Σ 1/π over the drawn groups = the 20 groups
    assert sum(1 / AnnotationItem.objects.filter(project=project, target_id__in=[
        pk for pk, key in group_of.items() if key == unit]).first().inclusion_probability for unit in set(drawn)) == \
        pytest.approx(20)


@pytest.mark.django_db
def test_stratified_and_adaptive_by_group(owner):
    judge, task, systems, _, groups, _ = _checklist()
    project = _project(owner, judge, task, size=4, sampling="stratified", name="strata")
    per_system = {s.pk: set() for s in systems}
    for item in project.items.all():
        verdict = Verdict.objects.get(pk=item.target_id)
        per_system[verdict.report.system_id].add(verdict.target_id)
        assert item.inclusion_probability == pytest.approx(2 / 10)
    group_of_item = {m.pk: g for g, (_, members) in enumerate(groups) for m in members}
    assert sorted(len({group_of_item[i] for i in ids}) for ids in per_system.values()) == [2, 2]
    adaptive = _project(owner, judge, task, size=6, sampling="adaptive", name="adaptive by group")
    pis = {}
    for item in adaptive.items.all():
        verdict = Verdict.objects.get(pk=item.target_id)
        pis.setdefault((verdict.report_id, group_of_item[verdict.target_id]), set()).add(item.inclusion_probability)
    assert all(len(values) == 1 for values in pis.values())  # one π per unit
    assert all(0.2 * 6 / 20 - 1e-9 <= next(iter(v)) <= 1 for v in pis.values())


@pytest.mark.django_db
def test_group_scores_and_ppi_match_an_independent_computation(owner):
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    judge, task, systems, reports, groups, run = _checklist()
    project = _project(owner, judge, task, size=12)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    given = {}
    for k, item in enumerate(project.items.order_by("position")):
        verdict = Verdict.objects.get(pk=item.target_id)
        given[verdict.pk] = _expert_label(verdict, k)
        label_all(item, [expert], {"label": given[verdict.pk]})
    client = APIClient()
    client.force_login(owner)
    body = client.get(reverse("api:run-calibrated", kwargs={"pk": run.pk}), {"project": project.pk}).json()
    assert body["sampling_unit"] == "group"
    assert [m["metric"] for m in body["metrics"]] == ["group_score"]  # a clustered sample: no per-verdict metric
    entry = body["metrics"][0]
    assert entry["unit"] == "group"
    for system, report in zip(systems, reports):
        row = next(r for r in entry["systems"] if r["system_id"] == system.pk)
        values = _unit_values(groups, report, given)
        f_all = np.array([f for f, _, _ in values])
        pairs = [(f, y) for f, y, _ in values if y is not None]
        f, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        assert y.size >= 3
        # the judge-only figure is the pipeline's own overall score (eq. 6) on this one report, / 100
        overall = DeepSynthPipeline().score_report(run=run, report=report)["metrics"]["overall"]
        assert row["judge_only"]["estimate"] == pytest.approx(overall / 100)
        lam = assert_row_is_ppi(row, y, f, f_all)
        assert row["lam"] == pytest.approx(lam)
        low, high = ppi_mean_ci(y, f, f_all, alpha=0.05, lam=lam)
        assert row["ppi"]["estimate"] == pytest.approx(float(ppi_mean_pointestimate(y, f, f_all, lam=lam)[0]))
        assert (row["ppi"]["low"], row["ppi"]["high"]) == pytest.approx((float(low[0]), float(high[0])))
    plan = client.get(reverse("api:run-calibrated", kwargs={"pk": run.pk}),
                      {"project": project.pk, "metric": "group_score", "width": "0.3"}).json()["plan"]
    assert len(plan["systems"]) == 2 and all(s["more"] is None or s["more"] >= 0 for s in plan["systems"])
    assert plan["unit"] == "group"  # more labelled groups, each with all its verdicts


@pytest.mark.django_db
def test_a_unit_waits_or_is_unlabelled_while_any_of_its_verdicts_does(owner):
    from annotation.loop.settle import item_adjudicate

    judge, task, _, _, groups, run = _checklist()
    project = _project(owner, judge, task, size=6, overlap=2)
    first, second = annotator("first"), annotator("second")
    for user in (first, second):
        membership_add(project=project, user=user, role=Role.ANNOTATOR, actor=owner)
    group_of_item = {m.pk: g for g, (_, members) in enumerate(groups) for m in members}
    members: dict[tuple, list] = {}
    for item in project.items.order_by("position"):
        verdict = Verdict.objects.get(pk=item.target_id)
        members.setdefault((verdict.report_id, group_of_item[verdict.target_id]), []).append(item)
    units = list(members)
    assert all(len(its) >= 2 for its in members.values())
    disputed = members[units[0]][0]  # the first unit: its first verdict's annotators disagree
    label_all(disputed, [first, second], {"label": "correct"}, {"label": "incorrect"})
    for item in members[units[0]][1:] + [its[j] for key in units[1:-1] for its in [members[key]]
                                         for j in range(len(its))] + members[units[-1]][-1:]:
        label_all(item, [first, second], {"label": "omitted"})  # the last unit: only its last verdict
    row_sum = lambda result, key: sum(r[key] for r in result["metrics"][0]["systems"])  # noqa: E731
    result = calibrated_scores(run=run, project=project, user=owner)
    assert row_sum(result, "waiting_adjudication") == 1
    assert row_sum(result, "n_human") == len(units) - 2  # one waits, one part-labelled
    assert row_sum(result, "part_labelled") == 1
    assert row_sum(result, "n_judge") == 20
    item_adjudicate(item=AnnotationItem.objects.get(pk=disputed.pk), curator=owner, value={"label": "incorrect"})
    result = calibrated_scores(run=run, project=project, user=owner)
    assert row_sum(result, "waiting_adjudication") == 0 and row_sum(result, "n_human") == len(units) - 1


@pytest.mark.django_db
def test_a_blind_study_hides_whole_units_and_annotators_learn_nothing_new(owner, client):
    judge, task, _, _, _, run = _checklist()
    project = _project(owner, judge, task, size=6)
    member = annotator("member-curator")
    membership_add(project=project, user=member, role=Role.CURATOR, actor=owner)
    full = calibrated_scores(run=run, project=project, user=member)
    assert sum(r["n_judge"] for r in full["metrics"][0]["systems"]) == 20
    # the member labels blind in a verdict-sampled project holding 3 verdicts of 3 groups at most
    blind = project_create(name="blind elsewhere", kind="agreement", created_by=owner, tasks=[task],
                           judge_config=judge, sampling="uniform", sample_size=3, label_set={"label": list(REWARD)})
    membership_add(project=blind, user=member, role=Role.ANNOTATOR, actor=owner)
    hidden_units = {(v.report_id, v.target_id) for v in Verdict.objects.filter(
        pk__in=blind.items.values_list("target_id", flat=True))}
    from benchmark.models import ChecklistItem
    groups_hidden = {(report, ChecklistItem.objects.get(pk=item).group_id) for report, item in hidden_units}
    hidden = calibrated_scores(run=run, project=project, user=member)
    assert sum(r["n_judge"] for r in hidden["metrics"][0]["systems"]) == 20 - len(groups_hidden)
    # the annotator of a blind unit-sampled project is not told its unit (the curators' design)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    client.force_login(expert)
    url = reverse("annotation:progress", kwargs={"project_id": project.pk})
    text = client.get(url).content.decode()
    assert "checklist group" not in text.lower() and 'id="sampling-design"' in text
    api = APIClient()
    api.force_login(expert)
    detail = reverse("api:project-detail", kwargs={"pk": project.pk})
    assert api.get(detail).json()["sampling_unit"] is None
    listed = next(p for p in api.get(reverse("api:project-list")).json()["results"] if p["id"] == project.pk)
    assert listed["sampling_unit"] is None
    # nor its design: an adaptive sample is drawn by the judge's uncertainty (the page's sentence
    # does not say so to annotators either)
    assert api.get(detail).json()["sampling"] is None and listed["sampling"] is None
    client.force_login(owner)
    assert "whole DeepSynth checklist groups" in client.get(url).content.decode()
    api.force_login(owner)
    assert api.get(detail).json()["sampling_unit"] == "group"
    assert api.get(detail).json()["sampling"] == project.sampling


@pytest.mark.django_db
def test_bad_unit_sampling_is_refused_naming_the_field(owner, client):
    judge, task, *_ = _checklist()
    api = APIClient()
    api.force_login(owner)
    base = {"kind": "agreement", "tasks": [task.pk], "judge_config": judge.pk, "label_set": {"label": list(REWARD)}}
    cases = [
        ({"name": "a", "sampling": "all", "sampling_unit": "group"}, "sampling_unit"),
        ({"name": "b", "sampling": "uniform", "sample_size": 3, "sampling_unit": "paragraph"}, "sampling_unit"),
        ({"name": "c", "sampling": "uniform", "sample_size": 3, "sampling_unit": "group",
          "steps": ["deepscholar.citation_support"]}, "steps"),
    ]
    for extra, field in cases:
        response = api.post(reverse("api:project-list"), {**base, **extra}, format="json")
        assert response.status_code == 400 and field in response.json(), (extra, response.content)
    created = api.post(reverse("api:project-list"), {**base, "name": "d", "sampling": "uniform", "sample_size": 3,
                                                     "sampling_unit": "group"}, format="json")
    assert created.status_code == 201 and created.json()["sampling_unit"] == "group"
    client.force_login(owner)
    form = {"kind": "agreement", "name": "form", "tasks": [task.pk], "judge_config": judge.pk, "hold_minutes": "15",
            "component": "report", "sampling": "all", "sampling_unit": "group", "labels": "correct, omitted, incorrect",
            "action": "create"}
    refused = client.post(reverse("annotation:new"), form)
    assert refused.status_code == 400 and "sampling_unit" in refused.content.decode()
    form.update(sampling="uniform", sample_size="5")
    assert client.post(reverse("annotation:new"), form).status_code == 302


@pytest.mark.django_db
def test_card_and_planner_name_the_unit(owner, client):
    judge, task, _, _, _, run = _checklist()
    project = _project(owner, judge, task, size=12)
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    for k, item in enumerate(project.items.order_by("position")):
        label_all(item, [expert], {"label": _expert_label(Verdict.objects.get(pk=item.target_id), k)})
    client.force_login(owner)
    page = client.get(reverse("runs:detail", kwargs={"run_id": run.pk})).content.decode()
    assert 'data-metric="group_score"' in page and "one unit per group (n counts groups)" in page
    assert 'data-metric="item_reward"' not in page
    url = reverse("annotation:progress", kwargs={"project_id": project.pk})
    planned = client.get(url, {"plan_metric": "group_score", "plan_width": "0.2"}).content.decode()
    assert '<option value="group_score" selected>' in planned and 'value="item_reward"' not in planned
    assert 'id="planner-answer"' in planned and "units labelled" in planned
    # a project of every verdict (π = 1) calibrates the per-verdict metrics and the group score
    census = project_create(name="census", kind="agreement", created_by=owner, tasks=[task], judge_config=judge,
                            label_set={"label": list(REWARD)})
    result = calibrated_scores(run=run, project=census, user=owner)
    assert {m["metric"]: m["unit"] for m in result["metrics"]} == {
        "group_score": "group", "item_correct": "verdict", "item_reward": "verdict"}
    verdicts_only = project_create(name="verdicts", kind="agreement", created_by=owner, tasks=[task],
                                   judge_config=judge, sampling="uniform", sample_size=10,
                                   label_set={"label": list(REWARD)})
    assert "group_score" not in {m["metric"] for m in calibrated_scores(run=run, project=verdicts_only,
                                                                        user=owner)["metrics"]}
    from annotation.exporters import design_of
    assert (design_of(project), design_of(verdicts_only), design_of(census)) == ("uniform by group", "uniform", "all")


def _second_task(judge, systems, run, groups_spec=((2, None, None), (3, 2.0, None), (4, None, 0.5))):
    """A second, smaller DeepSynth task (3 groups against the first's 10), both systems' reports
    judged on every item: a system's reports then hold unequal numbers of groups."""
    task = TaskFactory(protocol="deepsynth")
    rng = np.random.default_rng(23)
    groups = [(ChecklistGroupFactory(task=task, threshold=threshold, clip_factor=clip), n)
              for n, threshold, clip in groups_spec]
    items = [[ChecklistItemFactory(group=group) for _ in range(n)] for group, n in groups]
    reports = []
    for system, p_correct in zip(systems, (0.3, 0.9)):
        report = ReportFactory(task=task, system=system)
        reports.append(report)
        for members in items:
            for item in members:
                label = "correct" if rng.random() < p_correct else "incorrect"
                VerdictFactory(report=report, judge_config=judge, step=STEP, target_id=item.pk, label=label,
                               score=REWARD[label])
    run.tasks.add(task)
    return task, reports, list(zip([(n, t, c) for n, t, c in groups_spec], items))


@pytest.mark.django_db
def test_group_score_is_the_papers_mean_of_report_means_with_unequal_groups_per_report(owner):
    """Each system: one report of 10 groups, one of 3. The judge-only figure is the pipeline's
    system score (the mean over reports of eq. 6, / 100), not the mean over the 13 groups; PPI
    runs on the unit values × U / (R · n_r) (13/20 and 13/6), against ppi_py and the closed form."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    judge, task, systems, reports, groups, run = _checklist()
    small, small_reports, small_groups = _second_task(judge, systems, run)
    project = project_create(name="two tasks", kind="agreement", created_by=owner, tasks=[task, small],
                             judge_config=judge, sampling="uniform", sample_size=14, sampling_unit="group",
                             label_set={"label": list(REWARD)})
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    given = {}
    for k, item in enumerate(project.items.order_by("position")):
        verdict = Verdict.objects.get(pk=item.target_id)
        given[verdict.pk] = _expert_label(verdict, k) if k % 5 else "incorrect"
        label_all(item, [expert], {"label": given[verdict.pk]})
    result = calibrated_scores(run=run, project=project, user=owner)
    entry = result["metrics"][0]
    assert entry["metric"] == "group_score" and "averaged over each report's groups, then over" in entry["definition"]
    pipeline = DeepSynthPipeline()
    for system, big, little in zip(systems, reports, small_reports):
        row = next(r for r in entry["systems"] if r["system_id"] == system.pk)
        system_score = pipeline.score_system(report_scores=[pipeline.score_report(run=run, report=r)
                                                            for r in (big, little)])["metrics"]["overall"] / 100
        values = [(f, y, 13 / 20) for f, y, _ in _unit_values(groups, big, given)]
        for (n, threshold, clip), items in small_groups:  # the small task's groups, eq. 3 by hand
            verdicts = [Verdict.objects.get(report=little, target_id=item.pk) for item in items]
            theta = _theta(n, threshold, clip, n)
            y = (_by_hand([REWARD[given[v.pk]] for v in verdicts], theta)
                 if all(v.pk in given for v in verdicts) else None)
            values.append((_by_hand([REWARD[v.label] for v in verdicts], theta), y, 13 / 6))
        f_all = np.array([f for f, _, _ in values])
        unweighted = f_all.mean()
        assert row["n_judge"] == 13
        assert row["judge_only"]["estimate"] == pytest.approx(system_score)
        assert abs(unweighted - system_score) > 0.02  # the mean over the 13 groups is another number
        scale = np.array([a for _, _, a in values])
        assert (scale * f_all).mean() == pytest.approx(system_score)
        labelled = [(f * a, y * a) for f, y, a in values if y is not None]
        f, y = np.array([p[0] for p in labelled]), np.array([p[1] for p in labelled])
        assert y.size >= 3
        lam = assert_row_is_ppi(row, y, f, scale * f_all)
        low, high = ppi_mean_ci(y, f, scale * f_all, alpha=0.05, lam=lam)
        assert row["ppi"]["estimate"] == pytest.approx(float(ppi_mean_pointestimate(y, f, scale * f_all, lam=lam)[0]))
        assert (row["ppi"]["low"], row["ppi"]["high"]) == pytest.approx((float(low[0]), float(high[0])))
        # the planner's variances are those of the scaled values (its n counts units of this estimand)
        assert row["judge_var"] == pytest.approx(np.var(lam * scale * f_all))
        assert row["rectifier_var"] == pytest.approx(np.var(y - lam * f))
