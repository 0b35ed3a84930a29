import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark import models
from benchmark.exporters import EXPORTERS
from benchmark.exporters.native import FORMAT_VERSION, canonical_json, export_tasks_jsonl, write_tasks_jsonl
from tests import factories
from tests.benchmark.exporters.sample import discipline_with_criteria, edit_history, rich_task

pytestmark = pytest.mark.django_db


def only_line(task: models.Task, **options) -> dict:
    text = export_tasks_jsonl([task], **options)
    assert text.count("\n") == 1 and text.endswith("\n")
    return json.loads(text)


def test_the_catalogue_lists_the_native_format():
    assert EXPORTERS["native"].function is export_tasks_jsonl
    assert EXPORTERS["native"].extension == "jsonl"


def test_lines_are_canonical_json_with_unescaped_text():
    task = rich_task()
    text = export_tasks_jsonl([task])
    line = text.rstrip("\n")
    assert line == canonical_json(json.loads(line))
    assert "“survey”" in line and "🧪" in line and "\\u" not in line
    data = json.loads(line)
    assert data["format_version"] == FORMAT_VERSION
    assert list(data) == sorted(data)
    assert data["cutoff_date"] == "2024-01-31" and data["survey"]["publication_date"] == "2024-03-05"


def test_lists_are_in_position_then_id_order_and_questions_are_referenced_by_place():
    task = rich_task()
    factories.NuggetFactory(task=task, text="Tie on position 1, later id", position=1)
    data = only_line(task)
    assert [p["level"] for p in data["prompts"]] == ["general", "sentence"]
    assert [q["title"] for q in data["constraint_questions"]] == ["First", "Second"]
    groups = data["checklist_groups"]
    assert [(g["name"], g["constraint_question"]) for g in groups] == [
        ("Coverage", None), ("Constraint B", 0), ("Constraint A", 1)
    ]
    assert [i["text"][:16] for i in groups[0]["items"]] == ["Coverage: fact 2", "Coverage: fact 1", "Coverage: fact 0"]
    assert [n["text"] for n in data["nuggets"]] == ["Okay nugget", "Vital nugget ✓", "Tie on position 1, later id"]
    assert [c["key"] for c in data["survey"]["bibliography"]] == ["ref1", "ref3", "ref5"]
    assert [g["bib"]["title"] for g in data["gold_references"]] == ["Gold paper rich-1 1", "Gold paper rich-1 0"]
    assert [c["name"] for c in data["survey"]["discipline"]["criteria"]] == ["Structure", "Référencement"]
    assert [(c["name"], c["discipline"]) for c in data["rubric_criteria"]] == [
        ("Depth", None), ("Balance", {"code": "BIO", "name": "Biologie & Santé", "taxonomy": "surveylens"})
    ]


def test_items_carry_provenance_and_history_only_when_asked():
    task = rich_task()
    edit_history(task)
    assert "history" not in json.dumps(only_line(task))

    data = only_line(task, include_history=True)
    prompt = data["prompts"][0]
    assert (prompt["origin"], prompt["proposed_by"], prompt["prompt_version"], prompt["review_status"]) == (
        "llm", "gpt-4.1", "p-2", "accepted"
    )
    assert prompt["history"] == []
    edited = next(i for i in data["checklist_groups"][0]["items"] if i["text"].endswith("(edited)"))
    first, second = edited["history"]
    assert (first["action"], first["actor"], first["note"]) == ("proposable.edit", "expert-ana", "clarified")
    assert first["before"]["text"] + " (edited)" == first["after"]["text"]
    assert first["at"].endswith("+00:00") and first["at"] <= second["at"]
    assert (second["action"], second["actor"]) == ("review.accepted", "bulk-accept")
    assert data["survey"]["discipline"]["criteria"][0]["history"][0]["after"]["weight"] == 3.0


def test_tasks_are_ordered_by_protocol_then_key():
    survey = factories.SurveyFactory()
    for protocol, key in [("reportbench", "a"), ("deepsynth", "b"), ("deepsynth", "a")]:
        factories.TaskFactory(protocol=protocol, key=key, survey=survey)
    text = export_tasks_jsonl(models.Task.objects.all())
    assert [(d["protocol"], d["key"]) for d in map(json.loads, text.splitlines())] == [
        ("deepsynth", "a"), ("deepsynth", "b"), ("reportbench", "a")
    ]


def test_streaming_writer_writes_the_same_text():
    rich_task()
    out = io.StringIO()
    assert write_tasks_jsonl(models.Task.objects.all(), out, include_history=True) == 1
    assert out.getvalue() == export_tasks_jsonl(models.Task.objects.all(), include_history=True)


@pytest.mark.parametrize("include_history", [False, True])
def test_query_count_does_not_grow_with_tasks_or_items(include_history):
    discipline = discipline_with_criteria()

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            export_tasks_jsonl(models.Task.objects.all(), include_history=include_history)
        return len(captured)

    for n in range(2):
        edit_history(rich_task(f"few-{n}", discipline=discipline))
    few = queries()
    for n in range(6):
        edit_history(rich_task(f"many-{n}", discipline=discipline))
    assert queries() == few <= 13
