"""Annotation exports: every label, gold label and audit row, as JSONL and CSV, for those allowed."""

import csv
import hashlib
import io
import json
import zipfile

import pytest

from annotation.exporters import LABEL_COLUMNS, annotation_export_scope, csv_value
from core.models import AuditLog
from annotation.models import AnnotationItem, AnnotationProject, GoldLabel, Label
from annotation.services.projects import membership_remove
from annotation.loop.settle import item_adjudicate
from annotation.models import ExportJob
from annotation.services.exports import annotations_bundle_write, export_file, export_get, export_request
from annotation.tasks import run_export
from tests.annotation_factories import annotator, checklist_task, curator, label_all, verify_project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.fixture
def world():
    owner = curator("owner")
    ann1, ann2, outsider = annotator("ann1"), annotator("ann2"), annotator("outsider")
    task, _ = checklist_task(2)
    # A name a spreadsheet would run as a formula.
    project = verify_project(owner, [ann1, ann2], tasks=[task], name="=HYPERLINK(\"http://x\")", overlap=2)
    first, second = AnnotationItem.objects.filter(project=project).order_by("position")
    label_all(first, [ann1, ann2], {"decision": "accept"}, {"decision": "reject", "reason": "factually_wrong"})
    first.refresh_from_db()
    item_adjudicate(item=first, curator=owner, value={"decision": "accept"}, note="-1 vote was wrong")
    label_all(second, [ann1], {"decision": "accept", "note": "+ looks right, @ann2 agrees?"})
    other = verify_project(owner, [outsider], tasks=[checklist_task(1)[0]], name="other project", overlap=2)
    label_all(AnnotationItem.objects.get(project=other), [outsider], {"decision": "accept"})
    return {"owner": owner, "ann1": ann1, "ann2": ann2, "outsider": outsider, "project": project, "other": other,
            "first": first, "second": second}


def bundle(user, project_id, fmt):
    out = io.BytesIO()
    manifest = annotations_bundle_write(user=user, project_id=project_id, fmt=fmt, out=out)
    archive = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    return manifest, {name: archive.read(name).decode("utf-8") for name in archive.namelist()}


def csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_a_curator_gets_every_label_gold_label_and_audit_row_as_csv(world):
    project = world["project"]
    manifest, files = bundle(world["owner"], project.pk, "csv")
    labels = csv_rows(files["labels.csv"])
    stored = list(Label.objects.filter(project=project).order_by("created_at", "pk"))
    assert len(labels) == len(stored) == 3
    assert tuple(files["labels.csv"].splitlines()[0].split(",")) == LABEL_COLUMNS + tuple(
        f"value_{field}" for field in ("decision", "reason", "note", "edits"))  # the verify kind's fields
    for row, label in zip(labels, stored):
        assert int(row["label_id"]) == label.pk and row["annotator"] == label.annotator.username
        assert json.loads(row["value"]) == label.value  # JSON stays JSON in one column
        assert int(row["item_id"]) == label.item_id and row["target_kind"] == "checklist_item"
        assert row["project"] == "'=HYPERLINK(\"http://x\")"  # defused
        assert row["task"] == f"{label.item.task.protocol}/{label.item.task.key}"
    gold = csv_rows(files["gold_labels.csv"])
    assert [(int(g["item_id"]), json.loads(g["value"])["decision"], g["note"], g["decided_by"]) for g in gold] == [
        (world["first"].pk, "accept", "'-1 vote was wrong", "owner")]
    audit = csv_rows(files["audit_events.csv"])
    events = AuditLog.objects.filter(project_id=project.pk).order_by("created_at", "pk")
    assert [int(a["event_id"]) for a in audit] == [e.pk for e in events] and len(audit) >= 5
    assert {a["action"] for a in audit} >= {"label.submit", "item.adjudicate"}
    assert manifest["counts"] == {"labels": 3, "gold_labels": 1, "audit_events": events.count(), "comments": 0}
    assert manifest["audit_trail"] is True
    assert "outsider" not in files["labels.csv"]  # the other project stays out
    # Each file's size and hash are in the manifest.
    for name, info in manifest["files"].items():
        assert hashlib.sha256(files[name].encode()).hexdigest() == info["sha256"]


def test_csv_values_keep_json_as_text():
    assert csv_value("value", {"decision": "accept"}) == '{"decision": "accept"}'
    assert csv_value("value", None) == "null" and csv_value("note", "=1+2") == "=1+2"  # the writer defuses


def test_jsonl_rows_equal_the_stored_rows(world):
    manifest, files = bundle(world["owner"], None, "jsonl")  # a curator: every project
    labels = [json.loads(line) for line in files["labels.jsonl"].splitlines()]
    assert [(r["label_id"], r["value"], r["annotator"]) for r in labels] == [
        (label.pk, label.value, label.annotator.username)
        for label in Label.objects.order_by("project_id", "created_at", "pk")
    ]
    assert {p["name"] for p in manifest["projects"]} == {world["project"].name, "other project"}
    assert len(files["gold_labels.jsonl"].splitlines()) == GoldLabel.objects.count() == 1
    assert len(files["audit_events.jsonl"].splitlines()) == AuditLog.objects.filter(project_id__isnull=False).count()


def test_an_annotator_gets_what_blind_mode_shows_them_and_no_audit_trail(world):
    manifest, files = bundle(world["ann2"], world["project"].pk, "jsonl")
    labels = [json.loads(line) for line in files["labels.jsonl"].splitlines()]
    # ann2 labelled the first item only: both labels on it, not ann1's label on the second.
    assert sorted((r["item_id"], r["annotator"]) for r in labels) == [
        (world["first"].pk, "ann1"), (world["first"].pk, "ann2")]
    assert "audit_events.jsonl" not in files and manifest["audit_trail"] is False
    assert len(files["gold_labels.jsonl"].splitlines()) == 1


def test_outsiders_and_all_projects_are_refused(world):
    with pytest.raises(AnnotationProject.DoesNotExist, match="no annotation project"):
        annotation_export_scope(user=world["outsider"], project_id=world["project"].pk)
    with pytest.raises(PermissionError, match="only curators may export every project"):
        annotation_export_scope(user=world["ann1"], project_id=None)
    with pytest.raises(ValueError, match="^format: 'xlsx'"):
        export_request(user=world["ann1"], kind="annotations", parameters={"project": world["project"].pk,
                                                                           "format": "xlsx"})
    assert ExportJob.objects.count() == 0


def test_an_annotators_job_runs_and_the_file_is_theirs_while_they_are_members(world, monkeypatch,
                                                                             django_capture_on_commit_callbacks):
    monkeypatch.setattr("annotation.tasks.run_export.delay", lambda job_id: run_export(job_id))
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(user=world["ann1"], kind="annotations",
                             parameters={"project": world["project"].pk, "format": "csv"})
    job.refresh_from_db()
    assert job.status == "done", job.error
    assert job.progress_done == job.progress_total == 4  # ann1 sees 3 labels and 1 gold label
    assert job.filename == "annotations-hyperlink-http-x-csv.zip"
    path = export_file(job=export_get(job_id=job.pk, user=world["ann1"]))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == job.sha256
    with pytest.raises(ExportJob.DoesNotExist, match="no export"):
        export_get(job_id=job.pk, user=world["outsider"])
    assert export_get(job_id=job.pk, user=world["owner"]) == job  # curators see every job
    membership_remove(project=world["project"], user=world["ann1"], actor=world["owner"])
    with pytest.raises(ExportJob.DoesNotExist, match="no export"):
        export_get(job_id=job.pk, user=world["ann1"])


def test_labels_carry_the_design_and_inclusion_probability_hidden_from_annotators_until_a_blind_study_closes(world):
    project, first = world["project"], world["first"]
    AnnotationItem.objects.filter(pk=first.pk).update(inclusion_probability=0.25)
    AnnotationProject.objects.filter(pk=project.pk).update(sampling="uniform")
    _, files = bundle(world["owner"], project.pk, "jsonl")
    rows = [json.loads(line) for line in files["labels.jsonl"].splitlines()]
    assert {(r["item_id"], r["design"], r["inclusion_probability"]) for r in rows if r["item_id"] == first.pk} == {
        (first.pk, "uniform", 0.25)}
    assert project.blind
    _, files = bundle(world["ann2"], project.pk, "jsonl")
    rows = [json.loads(line) for line in files["labels.jsonl"].splitlines()]
    assert rows and all(r["design"] is None and r["inclusion_probability"] is None for r in rows)
    AnnotationProject.objects.filter(pk=project.pk).update(status=AnnotationProject.Status.CLOSED)
    _, files = bundle(world["ann2"], project.pk, "jsonl")
    rows = [json.loads(line) for line in files["labels.jsonl"].splitlines()]
    assert {r["inclusion_probability"] for r in rows if r["item_id"] == first.pk} == {0.25}
