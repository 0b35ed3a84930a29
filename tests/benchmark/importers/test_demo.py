import json
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command

from annotation.models import PairwisePreference
from benchmark.models import Discipline, GoldReference, Protocol, Report, Task, TaskSet
from benchmark.services.demo import demo_load
from scoring.services.proposals import propose
from tests.annotation_factories import JudgeConfigFactory

from . import model_counts

pytestmark = pytest.mark.django_db


def _stamps() -> dict[str, dict]:
    """``updated_at`` of every row of every time-stamped model."""
    return {
        model._meta.label: dict(model.objects.values_list("pk", "updated_at"))
        for app in ("core", "benchmark", "annotation")
        for model in apps.get_app_config(app).get_models()
        if any(f.name == "updated_at" for f in model._meta.fields)
    }


def test_demo_load_is_complete_and_idempotent(datasets):
    result = demo_load(datasets_dir=datasets)

    tasks = Task.objects.all()
    assert tasks.filter(protocol=Protocol.DEEPSYNTH).count() == 4
    assert tasks.filter(protocol=Protocol.REPORTBENCH).count() == 10
    assert tasks.filter(protocol=Protocol.DEEPSCHOLAR).count() == 63
    assert tasks.filter(protocol=Protocol.SURVEYLENS).count() == 1 + 10
    # The ten ReportBench tasks span the ten application domains, with all their gold references.
    assert Discipline.objects.filter(taxonomy="reportbench").count() == 10
    assert GoldReference.objects.filter(task__protocol=Protocol.REPORTBENCH).count() > 1000
    # Several systems on the same tasks.
    assert Report.objects.filter(task__protocol=Protocol.DEEPSCHOLAR).count() == 8
    assert Report.objects.filter(task__key="luciferase").count() == 7
    assert Report.objects.filter(task__protocol=Protocol.DEEPSYNTH).count() == 4
    assert PairwisePreference.objects.count() == 100
    assert any(m.startswith("[surveylens-annotations] ") for m in result.messages)
    # One task set per protocol with its demo tasks, ready to export and evaluate.
    sets = {t.name: t for t in TaskSet.objects.all()}
    assert sorted(sets) == ["demo-deepscholar", "demo-deepsynth", "demo-reportbench", "demo-surveylens"]
    assert sets["demo-reportbench"].tasks.count() == 10 and sets["demo-surveylens"].tasks.count() == 11
    assert result.counts["task set"] == {"created": 4}
    # DeepSynth ships no survey text: each survey's outline is its checklist's topic groups and their
    # sub-groups, in file order (read here from the release itself).
    assert result.counts["survey outline"] == {"updated": 4}
    for line in (datasets / "deepsynth-eval" / "example_gen_result.jsonl").read_text().splitlines():
        data = json.loads(line)
        expected = []
        for group in (g for g in data["checklist"] if not g.get("strict")):
            expected.append([1, group["group_name"]])
            expected += [[2, sub["sub_group_name"]] for sub in group["sub_groups"] if sub["sub_group_name"]]
        survey = Task.objects.get(protocol=Protocol.DEEPSYNTH, key=str(data["task_id"])).survey
        assert survey.outline == expected and len(expected) > 10

    # A second load (through the command, which calls the same service) changes nothing.
    counts, stamps = model_counts(), _stamps()
    out = StringIO()
    call_command("load_demo", datasets_dir=str(datasets), stdout=out)
    assert model_counts() == counts
    assert _stamps() == stamps
    assert "task: 88 unchanged" in out.getvalue() and "task set: 4 unchanged" in out.getvalue()
    assert " created" not in out.getvalue() and " updated" not in out.getvalue()

    # With that outline, "Propose with LLM" works on a demo DeepSynth task with the offline judge.
    task = Task.objects.get(protocol=Protocol.DEEPSYNTH, key="0")
    summary = propose(tasks=[task], stages=["topic_groups"], judge_config=JudgeConfigFactory(name="offline"))
    subgroups = sum(1 for level, _ in task.survey.outline if level == 2)
    assert [o.status for o in summary.outcomes] == ["proposed"]
    assert summary.proposed == {"checklist_item": subgroups}


def test_demo_accounts_open_a_project_of_each_kind_for_both_annotators(datasets):
    from annotation.models import AnnotationProject, ProjectMembership, Role

    demo_load(datasets_dir=datasets)
    out = StringIO()
    call_command("demo_accounts", stdout=out)
    projects = {p.name: p for p in AnnotationProject.objects.all()}
    verify, pairwise = projects["Demo: review DeepSynth proposals"], projects["Demo: compare DeepScholar reports"]
    assert (verify.kind, pairwise.kind) == ("verify", "pairwise")
    assert verify.items.count() > 100
    assert pairwise.items.count() == 2 * 4 * 3  # 2 tasks, 4 systems: every ordered pair, positions swapped
    for project in (verify, pairwise):
        members = ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR)
        assert sorted(members.values_list("user__username", flat=True)) == ["annotator1", "annotator2"]
    assert "Demo: review DeepSynth proposals — " in out.getvalue() and "(created)" in out.getvalue()

    # Again: nothing new, and the demo data still loads unchanged beside the projects.
    counts = model_counts()
    again = StringIO()
    call_command("demo_accounts", stdout=again)
    call_command("load_demo", datasets_dir=str(datasets), stdout=again)
    assert model_counts() == counts
    assert "(created)" not in again.getvalue() and " updated" not in again.getvalue()


def test_load_demo_from_a_missing_folder_is_one_clear_line_and_stores_nothing(tmp_path):
    from django.core.management.base import CommandError

    counts = model_counts()
    with pytest.raises(CommandError, match=r"^demo load failed, nothing was stored: the datasets folder is missing at "
                                           r".*nowhere \(set DATASETS_DIR"):
        call_command("load_demo", datasets_dir=str(tmp_path / "nowhere"), stdout=StringIO())
    (tmp_path / "partial" / "deepsynth-eval").mkdir(parents=True)
    with pytest.raises(CommandError, match=r"example_gen_result\.jsonl is missing from the datasets folder"):
        call_command("load_demo", datasets_dir=str(tmp_path / "partial"), stdout=StringIO())
    assert model_counts() == counts
