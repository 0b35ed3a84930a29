import json
import shutil

import pytest

from benchmark.importers.catalogue import run_import
from benchmark.models import ChecklistGroup, ChecklistItem, ConstraintQuestion, Report, ReviewStatus, Task
from core.models import AuditLog

from . import assert_rejected, model_counts

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(datasets):
    return datasets / "deepsynth-eval" / "example_gen_result.jsonl"


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_example_file(release):
    rows = _rows(release)
    result = run_import("deepsynth", release)

    assert [t.key for t in Task.objects.filter(protocol="deepsynth").order_by("key")] == ["0", "1", "2", "4"]
    assert result.counts["checklist group"] == {"created": 12 + 7 + 13 + 17}
    assert result.counts["checklist item"] == {"created": 806}
    for row in rows:
        task = Task.objects.get(protocol="deepsynth", key=row["task_id"])
        assert task.survey.arxiv_id == row["survey_id"]
        assert task.prompts.get(level="general").text == row["general_prompt"]
        groups = list(task.checklist_groups.order_by("position"))
        assert [g.name for g in groups] == [g["group_name"] for g in row["checklist"]]
        for group, source in zip(groups, row["checklist"]):
            requirements = [r for sub in source["sub_groups"] for r in sub["requirements"]]
            items = list(group.items.order_by("position"))
            assert [i.text for i in items] == [r["content"] for r in requirements]
            assert [i.subgroup for i in items] == [
                sub["sub_group_name"] for sub in source["sub_groups"] for _ in sub["requirements"]]
            assert (group.clip_factor, group.weight) == (source["clip_factor"], source["weight"])
            if source["strict"]:
                assert (group.kind, group.anchor) == ("constraint", "structure")
                assert group.constraint_question.text == source["detailed_prompt"]
                assert group.constraint_question.title == source["group_name"]
            else:
                assert (group.kind, group.anchor, group.constraint_question) == ("general", "topic", None)

    # Task 0: 12 groups (7 general, 5 constraint) holding 16+13+14+11+15+12+12 general and
    # 135+30+10+4+4 constraint requirements.
    task0 = Task.objects.get(protocol="deepsynth", key="0")
    assert task0.checklist_groups.count() == 12
    assert [g.items.count() for g in task0.checklist_groups.order_by("position")] == [
        16, 13, 14, 11, 15, 12, 12, 135, 30, 10, 4, 4]
    assert task0.constraint_questions.count() == 5
    assert ConstraintQuestion.objects.count() == 13
    assert task0.title == "semantic visual simultaneous localization and mapping"

    reports = Report.objects.filter(system__name="deepsynth-example")
    assert reports.count() == 4
    assert reports.get(task=task0).format == "text"
    assert reports.get(task=task0).text == rows[0]["survey_result"].strip()

    again = run_import("deepsynth", release)
    assert again.counts["checklist item"] == {"unchanged": 806}
    assert again.counts["report"] == {"unchanged": 4}


def test_reimport_updates_unreviewed_items_and_keeps_reviewed_ones(release, tmp_path):
    rows = _rows(release)[:1]
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(rows[0]))
    run_import("deepsynth", path)
    group0 = Task.objects.get(key="0").checklist_groups.get(position=0)
    first, second = group0.items.order_by("position")[:2]
    second.review_status = ReviewStatus.ACCEPTED
    second.save()

    requirements = rows[0]["checklist"][0]["sub_groups"][0]["requirements"]
    requirements[0]["content"] = "The article should define semantic SLAM."
    requirements[1]["content"] = "A reviewed item is not overwritten."
    rows[0]["checklist"].pop()  # the last constraint group disappears
    path.write_text(json.dumps(rows[0]))
    result = run_import("deepsynth", path)

    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.text, first.version) == ("The article should define semantic SLAM.", 2)
    assert second.text != "A reviewed item is not overwritten." and second.version == 1
    assert result.counts["checklist group"]["removed"] == 1
    assert result.counts["constraint question"]["removed"] == 1
    assert Task.objects.get(key="0").checklist_groups.count() == 11
    revision = AuditLog.objects.get(action="import.update", object_id=first.pk, content_type__model="checklistitem")
    assert revision.before["text"] != revision.after["text"]
    assert revision.actor_label == "import:deepsynth"


# --- broken input -------------------------------------------------------------------------


def _line(**changes):
    row = {"task_id": "9", "survey_id": "2401.00009", "general_prompt": "Write a survey on X.",
           "survey_result": "Introduction\nText.",
           "checklist": [{"group_name": "G", "strict": True, "detailed_prompt": "Make a table.", "clip_factor": 0.8,
                          "weight": 1.0, "sub_groups": [{"sub_group_name": "S",
                                                         "requirements": [{"content": "Has a table.", "reward": 1.0}]}]}]}
    for key, value in changes.items():
        if key == "group":
            row["checklist"][0].update(value)
        else:
            row[key] = value
    return json.dumps(row)


@pytest.fixture
def stored(release):
    run_import("deepsynth", release)
    return model_counts()


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (_line() + "\n{\"task_id\": ", r"tasks\.jsonl, line 2, column 13: malformed JSON: expecting value$"),
        (_line(general_prompt=None), r"line 1, field 'general_prompt': required field is missing"),
        (_line(group={"strict": "yes"}), r"line 1, field 'checklist\[0\]\.strict': expected true/false, got str"),
        (_line(group={"detailed_prompt": ""}), r"line 1, field 'checklist\[0\]\.detailed_prompt': must not be empty"),
        (_line(group={"weight": -1}), r"line 1, field 'checklist\[0\]\.weight': must be non-negative"),
        (_line(group={"clip_factor": 0}), r"line 1, field 'checklist\[0\]\.clip_factor': must be positive"),
        (_line(group={"sub_groups": [{"sub_group_name": "S", "requirements": [{"content": 3}]}]}),
         r"field 'checklist\[0\]\.sub_groups\[0\]\.requirements\[0\]\.content': expected a string, got int"),
        (_line() + "\n" + _line(), r"line 2, field 'task_id': duplicate task id '9', first seen at line 1"),
        (_line(checklist={"not": "a list"}), r"line 1, field 'checklist': expected a list, got dict"),
        ("\x00\x01\x02 garbage", r"line 1: contains NUL bytes"),
    ],
)
def test_broken_input_is_rejected(tmp_path, stored, content, match):
    path = tmp_path / "tasks.jsonl"
    path.write_text(content, encoding="utf-8")
    assert_rejected("deepsynth", path, match=match)


def test_oversized_line(tmp_path, stored, settings):
    settings.IMPORT_MAX_LINE_BYTES = 1_000
    path = tmp_path / "tasks.jsonl"
    path.write_text(_line() + "\n" + _line(task_id="10", survey_result="x" * 2_000), encoding="utf-8")
    assert_rejected("deepsynth", path, match=r"line 2: line longer than the 1,000-byte limit")


def test_deeply_nested_json(tmp_path, stored):
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"task_id": "1", "x": ' + "[" * 200 + "]" * 200 + "}", encoding="utf-8")
    assert_rejected("deepsynth", path, match=r"line 1: JSON nested deeper than 64 levels")


def test_items_and_groups_counts_unchanged_by_rejection(tmp_path, stored):
    assert ChecklistItem.objects.count() == 806 and ChecklistGroup.objects.count() == 49


def test_reimport_keeps_a_curated_survey_title(release):
    run_import("deepsynth", release)
    survey = Task.objects.get(protocol="deepsynth", key="0").survey
    assert survey.title == "arXiv:2209.06428"  # the release has no title
    survey.title = "Semantic Visual SLAM: A Survey"
    survey.save()
    assert run_import("deepsynth", release).counts["survey"] == {"unchanged": 4}
    survey.refresh_from_db()
    assert survey.title == "Semantic Visual SLAM: A Survey"


def test_task_file_without_generated_surveys(tmp_path):
    # Upstream's data/DeepSynth-Eval_tasks.jsonl: integer task ids, no survey_result, no eval_result.
    lines = []
    for task_id in (0, 1):
        row = json.loads(_line(task_id=task_id, survey_id=f"2209.0642{task_id}"))
        del row["survey_result"]
        lines.append(json.dumps(row))
    path = tmp_path / "DeepSynth-Eval_tasks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run_import("deepsynth", path)

    assert result.counts["task"] == {"created": 2}
    assert result.counts["checklist item"] == {"created": 2}
    assert "report" not in result.counts and not result.systems
    assert sorted(Task.objects.filter(protocol="deepsynth").values_list("key", flat=True)) == ["0", "1"]


def test_the_repository_as_cloned(datasets, tmp_path):
    """The clone's root: every ``data/*.jsonl`` (here the example file; the tasks file is the same shape)."""
    clone = tmp_path / "DeepSynth-Eval"
    (clone / "data").mkdir(parents=True)
    shutil.copy(datasets / "deepsynth-eval" / "example_gen_result.jsonl", clone / "data")
    (clone / "data" / "notes.txt").write_text("x", encoding="utf-8")
    (clone / "README.md").write_text("# DeepSynth-Eval\n", encoding="utf-8")

    result = run_import("deepsynth", clone)

    assert Task.objects.filter(protocol="deepsynth").count() == 4
    assert result.counts["file"] == {"read": 1}
    assert "data/notes.txt: ignored (not a .jsonl task file)" in result.messages
