import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark import models
from benchmark.exporters.native import canonical_json, export_tasks_jsonl
from benchmark.importers import native
from benchmark.importers.base import ImportFailed, ImportResult
from benchmark.importers.catalogue import run_import
from core.models import AuditLog
from tests import factories
from tests.benchmark.exporters.sample import (
    discipline_with_criteria,
    edit_history,
    rich_task,
    row_counts,
    wipe_benchmark,
)

pytestmark = pytest.mark.django_db


def export_all(*, include_history: bool = False) -> str:
    return export_tasks_jsonl(models.Task.objects.all(), include_history=include_history)


def write(tmp_path, text: str | bytes, name: str = "tasks.jsonl"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def lines_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def jsonl(rows: list[dict]) -> str:
    return "".join(canonical_json(row) + "\n" for row in rows)


@pytest.fixture
def two_tasks():
    """Two tasks sharing a discipline, plus a third sharing the first one's survey."""
    discipline = discipline_with_criteria()
    first = rich_task("rich-1", discipline=discipline)
    rich_task("rich-2", discipline=discipline)
    shared = factories.TaskFactory(key="same-survey", survey=first.survey, protocol=models.Protocol.REPORTBENCH)
    factories.TaskPromptFactory(task=shared, level="detail", text="Detail-rich prompt.")
    return first


@pytest.mark.parametrize("include_history", [False, True])
def test_round_trip_into_an_empty_database_is_byte_identical(tmp_path, two_tasks, include_history):
    edit_history(two_tasks)
    before = export_all(include_history=include_history)
    assert ("expert-ana" in before) is include_history
    counts = row_counts()

    wipe_benchmark()
    result = run_import("native", write(tmp_path, before))

    assert export_all(include_history=include_history) == before
    assert result.counts["task"] == {"created": 3}
    assert result.counts["survey"] == {"created": 2}
    if include_history:
        assert result.counts["revision"] == {"restored": counts["AuditLog"]}
        assert row_counts() == counts
    else:
        assert row_counts() == {**counts, "AuditLog": 0}


@pytest.mark.parametrize("include_history", [False, True])
def test_reimport_creates_no_duplicates(tmp_path, two_tasks, include_history):
    edit_history(two_tasks)
    text = export_all(include_history=include_history)
    path = write(tmp_path, text)
    run_import("native", path)  # first import only renumbers positions (0, 1, 2, ...)
    counts = row_counts()

    result = run_import("native", path)

    assert row_counts() == counts
    assert export_all(include_history=include_history) == text
    assert all(set(outcomes) == {"unchanged"} for outcomes in result.counts.values()), result.counts


def test_reimport_updates_items_in_place_with_revisions(tmp_path, two_tasks):
    path = write(tmp_path, export_all())
    run_import("native", path)
    rows = lines_of(path.read_text())
    item = models.ChecklistItem.objects.get(group__task=two_tasks, group__position=0, position=1)
    removed_group = models.ChecklistGroup.objects.get(task=two_tasks, position=2)
    first = next(r for r in rows if r["key"] == "rich-1")
    first["checklist_groups"][0]["items"][1]["text"] = "Rewritten item"
    first["status"] = "in_review"
    del first["checklist_groups"][2]
    first["nuggets"].append({"text": "A new nugget", "importance": "okay", "origin": "human", "proposed_by": "ana",
                             "prompt_version": "", "review_status": "accepted"})
    for row in rows:  # the survey is shared with the third task; every line must say the same
        if row["survey"]["external_id"] == "survey-rich-1":
            row["survey"]["bibliography"].pop(0)

    result = run_import("native", write(tmp_path, jsonl(rows)))

    item.refresh_from_db()
    assert (item.text, item.version) == ("Rewritten item", 2)
    update = AuditLog.objects.get(object_id=item.pk, action="import.update")
    assert update.before["text"] != update.after["text"] == "Rewritten item"
    assert update.actor_label == "import:native" and update.note == "tasks.jsonl, line 1"
    status = AuditLog.objects.get(object_id=two_tasks.pk, content_type__model="task")
    assert status.action == "import.update"
    assert (status.before, status.after) == ({"status": "curated"}, {"status": "in_review"})
    assert not models.ChecklistGroup.objects.filter(pk=removed_group.pk).exists()
    deleted = AuditLog.objects.filter(action="import.remove").values_list("content_type__model", flat=True)
    assert sorted(deleted) == ["checklistgroup", "checklistitem", "checklistitem", "surveycitation"]
    group_deleted = AuditLog.objects.get(action="import.remove", object_id=removed_group.pk,
                                         content_type__model="checklistgroup")
    assert group_deleted.before["name"] == "Constraint A" and group_deleted.before["task_id"] == two_tasks.pk
    assert two_tasks.nuggets.count() == 3
    assert two_tasks.survey.citations.count() == 2
    assert result.counts["checklist_item"]["updated"] == 1
    assert result.counts["checklist_group"]["deleted"] == 1
    assert result.counts["nugget"]["created"] == 1
    assert export_all() == jsonl(rows)


def test_removing_a_constraint_question_repoints_and_deletes_in_order(tmp_path, two_tasks):
    path = write(tmp_path, export_all())
    run_import("native", path)
    rows = lines_of(path.read_text())
    first = rows[0]
    assert [g["constraint_question"] for g in first["checklist_groups"]] == [None, 0, 1]
    del first["constraint_questions"][0]
    del first["checklist_groups"][1]
    first["checklist_groups"][1]["constraint_question"] = 0

    result = run_import("native", write(tmp_path, jsonl(rows)))

    assert export_all() == jsonl(rows)
    # rich-2's two questions and three groups are in the file unchanged.
    assert result.counts["constraint_question"] == {"updated": 1, "deleted": 1, "unchanged": 2}
    assert result.counts["checklist_group"] == {"unchanged": 4, "updated": 1, "deleted": 1}
    assert two_tasks.constraint_questions.get().groups.get().name == "Constraint A"


def test_history_entries_are_added_once(tmp_path, two_tasks):
    edit_history(two_tasks)
    text = export_all(include_history=True)
    wipe_benchmark()
    path = write(tmp_path, text)
    run_import("native", path)
    audit_rows = AuditLog.objects.count()

    result = run_import("native", path)

    assert AuditLog.objects.count() == audit_rows
    assert "revision" not in result.counts
    user_edit = AuditLog.objects.get(note="clarified")
    assert user_edit.actor.username == "expert-ana" and user_edit.actor_label == ""
    assert AuditLog.objects.filter(actor_label="bulk-accept", actor=None).count() == 1


def test_history_of_an_export_made_before_the_action_enumeration_is_read_in_its_new_spelling(tmp_path, two_tasks):
    edit_history(two_tasks)
    text = export_all(include_history=True)
    old = text.replace('"action":"proposable.edit"', '"action":"edit"').replace(
        '"action":"review.accepted"', '"action":"review:accepted"')
    assert old != text
    wipe_benchmark()
    run_import("native", write(tmp_path, old))
    assert AuditLog.objects.get(note="clarified").action == "proposable.edit"
    assert AuditLog.objects.get(actor_label="bulk-accept").action == "review.accepted"
    assert export_all(include_history=True) == text
    audit_rows = AuditLog.objects.count()
    run_import("native", write(tmp_path, old, name="again.jsonl"))  # the old spelling matches the stored row
    assert AuditLog.objects.count() == audit_rows


def test_history_actor_without_a_user_is_kept_as_a_label(tmp_path, two_tasks):
    edit_history(two_tasks)
    text = export_all(include_history=True)
    wipe_benchmark()
    get_user_model().objects.filter(username="expert-ana").delete()

    run_import("native", write(tmp_path, text))

    assert AuditLog.objects.filter(actor_label="expert-ana", actor=None).count() == 3
    assert export_all(include_history=True) == text


def test_surveys_match_on_source_and_external_id(tmp_path, two_tasks):
    rows = lines_of(export_all())
    survey = two_tasks.survey
    for row in rows:
        row["survey"]["abstract"] = "New abstract"
    run_import("native", write(tmp_path, jsonl(rows)))
    survey.refresh_from_db()
    assert survey.abstract == "New abstract"
    assert models.Survey.objects.count() == 2


def test_a_task_moves_to_the_survey_its_line_names(tmp_path, two_tasks):
    rows = lines_of(export_all())
    moved = next(r for r in rows if r["key"] == "same-survey")
    moved["survey"] = {"title": "A topic without identity", "kind": "topic"}
    run_import("native", write(tmp_path, jsonl([moved])))
    task = models.Task.objects.get(key="same-survey")
    assert task.survey.title == "A topic without identity"
    # Re-importing finds the identity-less survey through its task instead of creating another one.
    run_import("native", write(tmp_path, jsonl([moved])))
    assert models.Survey.objects.count() == 3


def test_minimal_line_uses_model_defaults(tmp_path):
    line = {"format_version": 1, "protocol": "deepsynth", "key": "k1", "survey": {"title": "S"},
            "checklist_groups": [{"kind": "general", "name": "G", "items": [{"text": "An item"}]}]}
    result = run_import("native", write(tmp_path, jsonl([line])))
    item = models.ChecklistItem.objects.get()
    assert (item.reward, item.review_status, item.origin, item.group.weight) == (1.0, "proposed", "import", 1.0)
    assert result.counts["task"] == {"created": 1}


def test_import_native_is_atomic_when_called_directly(tmp_path, monkeypatch, two_tasks):
    monkeypatch.setattr(native, "BATCH_TASKS", 1)
    rows = lines_of(export_all())
    rows[-1]["status"] = "bogus"
    for row in rows:
        row["key"] += "-copy"
        row["survey"]["external_id"] += "-copy"
    counts = row_counts()
    with pytest.raises(ImportFailed, match="line 3, field 'status'"):
        native.import_native(write(tmp_path, jsonl(rows)), result=ImportResult())
    assert row_counts() == counts


# --------------------------------------------------------------------------- rejections


def valid_row() -> dict:
    return {
        "format_version": 1, "protocol": "deepsynth", "key": "ok-1", "title": "", "status": "draft",
        "survey": {"title": "A survey", "source": "t", "external_id": "s-1",
                   "discipline": {"taxonomy": "surveylens", "code": "CS", "name": "CS", "criteria": []}},
        "constraint_questions": [{"text": "Q?"}],
        "checklist_groups": [
            {"kind": "general", "name": "G0", "items": [{"text": "i0"}]},
            {"kind": "general", "name": "G1", "items": [{"text": "i1"}]},
            {"kind": "constraint", "name": "G2", "constraint_question": 0, "items": [{"text": "i2"}, {"text": "i3"}]},
        ],
        "gold_references": [{"bib": {"title": "Gold one", "doi": "10.1/x"}}],
    }


def second(mutate) -> list[dict]:
    """A valid first line, then a line changed by ``mutate``: the first must be rolled back too."""
    bad = valid_row()
    bad["key"], bad["survey"]["external_id"] = "bad-2", "s-2"
    mutate(bad)
    return [valid_row(), bad]


def nested(depth: int):
    value = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def drop(path):
    def mutate(row):
        target = row
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]
    return mutate


def setter(path, value):
    def mutate(row):
        target = row
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
    return mutate


REJECTIONS = {
    "missing required field": (
        second(drop(["checklist_groups", 2, "items", 0, "text"])),
        "tasks.jsonl, line 2, field 'checklist_groups[2].items[0].text': required field is missing",
    ),
    "empty required text": (
        second(setter(["survey", "title"], "  ")), "line 2, field 'survey.title': must not be empty"
    ),
    "wrong type": (
        second(setter(["checklist_groups", 0, "weight"], "heavy")),
        "line 2, field 'checklist_groups[0].weight': expected a number, got str",
    ),
    "boolean for a number": (
        second(setter(["checklist_groups", 1, "items", 0, "reward"], True)),
        "line 2, field 'checklist_groups[1].items[0].reward': expected a number, got bool",
    ),
    "list where an object belongs": (second(setter(["survey"], [])), "line 2, field 'survey': expected an object"),
    "unknown protocol": (
        second(setter(["protocol"], "mystery")), "line 2, field 'protocol': unknown protocol 'mystery'"
    ),
    "unknown choice deep down": (
        second(setter(["checklist_groups", 2, "review_status"], "maybe")),
        "line 2, field 'checklist_groups[2].review_status': unknown review status 'maybe'",
    ),
    "unknown field": (second(setter(["nuggetz"], [])), "line 2, field 'nuggetz': unknown field"),
    "unsupported format version": (
        second(setter(["format_version"], 2)), "line 2, field 'format_version': unsupported"
    ),
    "missing format version": (second(drop(["format_version"])), "line 2, field 'format_version': required field"),
    "bad date": (second(setter(["cutoff_date"], "31/01/2024")), "line 2, field 'cutoff_date': expected a date"),
    "too long": (second(setter(["key"], "k" * 201)), "line 2, field 'key': longer than 200 characters"),
    "out of range": (second(setter(["survey", "year"], 70000)), "line 2, field 'survey.year': must be between 0 and"),
    "check constraint": (
        second(setter(["checklist_groups", 0, "clip_factor"], 0)),
        "line 2, field 'checklist_groups[0].clip_factor': must be positive",
    ),
    "dangling question reference": (
        second(setter(["checklist_groups", 2, "constraint_question"], 3)),
        "line 2, field 'checklist_groups[2].constraint_question': refers to constraint_questions[3]",
    ),
    "question on a general group": (
        second(setter(["checklist_groups", 0, "constraint_question"], 0)),
        "line 2, field 'checklist_groups[0].constraint_question': only a group of kind 'constraint'",
    ),
    "same prompt level twice": (
        second(setter(["prompts"], [{"level": "general", "text": "a"}, {"level": "general", "text": "b"}])),
        "line 2, field 'prompts[1].level': prompts[0] already has level 'general'",
    ),
    "NaN": (second(setter(["extra"], {"score": float("nan")})), "line 2, field 'extra.score': NaN and Infinity"),
    "NUL escape": (second(setter(["title"], "a\x00b")), "line 2, field 'title': contains a NUL character"),
    "lone surrogate": (
        second(setter(["nuggets"], [{"text": "\ud800"}])), "line 2, field 'nuggets[0].text': contains an unpaired"
    ),
    "unknown history action": (
        second(setter(["nuggets"], [{"text": "n", "history": [{"action": "tweak", "at": "2024-01-01T10:00:00Z"}]}])),
        "line 2, field 'nuggets[0].history[0].action': unknown audit action 'tweak'; known: account.create",
    ),
    "history without offset": (
        second(setter(["nuggets"], [{"text": "n", "history": [{"action": "edit", "at": "2024-01-01T10:00:00"}]}])),
        "line 2, field 'nuggets[0].history[0].at': needs a UTC offset",
    ),
    "duplicate key": (
        [valid_row(), valid_row()],
        "line 2, field 'key': task deepsynth/ok-1 is in the file twice: on line 1 and on line 2",
    ),
    "same survey with other content": (
        [valid_row(), {**second(lambda r: None)[1], "survey": {**valid_row()["survey"], "abstract": "other"}}],
        "line 2, field 'survey': the same survey (t, s-1) is on line 1 with other content",
    ),
    "same publication twice": (
        second(setter(["gold_references"], [{"bib": {"title": "Gold one"}}, {"bib": {"title": "GOLD  one!"}}])),
        "line 2, field 'gold_references[1]': the same publication as gold_references[0]",
    ),
    "title without letters": (
        second(setter(["gold_references"], [{"bib": {"title": "?!"}}])),
        "line 2, field 'gold_references[0].bib.title': has no letters or digits",
    ),
}


@pytest.mark.parametrize("rows, expected", REJECTIONS.values(), ids=REJECTIONS.keys())
def test_rejected_lines_name_line_and_field_and_store_nothing(tmp_path, monkeypatch, rows, expected):
    monkeypatch.setattr(native, "BATCH_TASKS", 1)  # the first line is written before the second fails
    factories.TaskFactory(key="already-there")
    counts = row_counts()
    text = "".join(json.dumps(row, allow_nan=True) + "\n" for row in rows)  # \u escapes for NUL, surrogates

    with pytest.raises(ImportFailed, match=re.escape(expected)):
        run_import("native", write(tmp_path, text))

    assert row_counts() == counts


RAW_REJECTIONS = {
    "malformed JSON": (b'{"format_version": 1, "protocol": \n', "tasks.jsonl, line 2, column 35: malformed JSON: expecting value"),
    "not an object": (b"[1, 2]\n", "line 2: expected a JSON object"),
    "binary garbage": (bytes(b for b in range(256) if b != 10) + b"\n", "line 2: not UTF-8 text"),
    "NUL bytes": (b'{"a": "\x00"}\n', "line 2: contains NUL bytes"),
    "deeply nested": (json.dumps({"extra": nested(100)}).encode() + b"\n", "line 2: JSON nested deeper than 64 levels"),
    "very deeply nested": (b"[" * 2000 + b"]" * 2000 + b"\n", "line 2: JSON nested deeper than 64 levels"),
    "huge integer": (b'{"format_version": ' + b"9" * 5000 + b"}\n", "line 2: malformed JSON"),
    "oversized line": (b'{"title": "' + b"x" * 9000 + b'"}\n', "line 2: line longer than the 8,192-byte limit"),
}


@pytest.mark.parametrize("bad_line, expected", RAW_REJECTIONS.values(), ids=RAW_REJECTIONS.keys())
def test_unreadable_lines_name_the_line_and_store_nothing(tmp_path, monkeypatch, settings, bad_line, expected):
    monkeypatch.setattr(native, "BATCH_TASKS", 1)
    settings.IMPORT_MAX_LINE_BYTES = 8192
    factories.TaskFactory(key="already-there")
    counts = row_counts()
    good = canonical_json(valid_row()).encode() + b"\n"

    with pytest.raises(ImportFailed, match=re.escape(expected)):
        run_import("native", write(tmp_path, good + bad_line))

    assert row_counts() == counts


# --------------------------------------------------------------------------- query counts


def hundred_task_file(tmp_path) -> tuple:
    template = json.loads(export_tasks_jsonl([rich_task("template")]))
    wipe_benchmark()
    rows = []
    for n in range(100):
        row = json.loads(json.dumps(template))
        row["key"] = f"task-{n:03d}"
        row["survey"]["external_id"] = f"survey-{n:03d}"
        row["survey"]["arxiv_id"] = ""
        for i, gold in enumerate(row["gold_references"]):
            gold["bib"].update(title=f"Gold paper {n} {i}", arxiv_id="", doi=f"10.2000/{n}.{i}")
        rows.append(row)
    return write(tmp_path, jsonl(rows)), rows


def test_import_and_export_of_100_tasks_take_a_bounded_number_of_queries(tmp_path):
    path, rows = hundred_task_file(tmp_path)

    with CaptureQueriesContext(connection) as created:
        result = run_import("native", path)
    with CaptureQueriesContext(connection) as exported:
        text = export_all()
    with CaptureQueriesContext(connection) as reimported:
        run_import("native", path)

    assert result.counts["task"] == {"created": 100}
    assert result.counts["checklist_item"] == {"created": 600}
    assert text == path.read_text()
    # One batch of 100 tasks; the counts do not grow with the number of tasks or items.
    assert len(created) <= 45, [q["sql"][:80] for q in created]
    assert len(reimported) <= 30, [q["sql"][:80] for q in reimported]
    assert len(exported) <= 15, [q["sql"][:80] for q in exported]
    print(f"\nqueries for 100 tasks: import {len(created)}, re-import {len(reimported)}, export {len(exported)}")
