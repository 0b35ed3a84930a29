"""The Hugging Face format as an export job: offered on the task-set page, the API and the
command; with labels and gold labels for curators only (the all-projects annotation rule)."""

import io
import zipfile

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from annotation.models import AnnotationItem, ExportJob, GoldLabel, Label
from annotation.services.exports import export_file, export_request
from annotation.services.projects import membership_add
from annotation.loop.settle import item_adjudicate
from annotation.tasks import run_export
from benchmark.services.tasksets import taskset_create, taskset_freeze
from tests.annotation_factories import agreement_project, annotator, checklist_task, curator, label_all, verify_project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    return settings.VAR_DIR


@pytest.fixture
def world():
    owner = curator("owner")
    ann1, ann2 = annotator("ann1"), annotator("ann2")
    task, _ = checklist_task(2, status="curated")
    project = verify_project(owner, [ann1, ann2], tasks=[task], name="verify set", overlap=2)
    first, second = AnnotationItem.objects.filter(project=project).order_by("position")
    label_all(first, [ann1, ann2], {"decision": "accept"}, {"decision": "reject", "reason": "factually_wrong"})
    first.refresh_from_db()
    item_adjudicate(item=first, curator=owner, value={"decision": "accept"}, note="ann2 misread it")
    label_all(second, [ann1], {"decision": "accept"})
    outside, _ = checklist_task(1)  # labelled, but its task is not in the set
    other = verify_project(owner, [ann1], tasks=[outside], name="other")
    label_all(AnnotationItem.objects.get(project=other), [ann1], {"decision": "reject", "reason": "duplicate"})
    task_set = taskset_freeze(task_set=taskset_create(name="with labels", tasks=[task]), actor=owner)
    return {"owner": owner, "ann1": ann1, "task": task, "project": project, "task_set": task_set}


def run(user, **parameters) -> ExportJob:
    job = export_request(user=user, kind="taskset", parameters=parameters)
    run_export(job.pk)
    job.refresh_from_db()
    return job


def unzip(job: ExportJob, folder):
    with zipfile.ZipFile(export_file(job=job)) as archive:
        archive.extractall(folder)
    return folder


def test_a_curator_exports_labels_and_gold_labels_of_the_sets_tasks(world, load_dataset, tmp_path):
    job = run(world["owner"], task_set=world["task_set"].pk, format="huggingface", include_labels=True)
    assert job.status == ExportJob.Status.DONE, job.error
    assert job.filename == "taskset-with-labels-v1-huggingface-labels.zip"
    folder = unzip(job, tmp_path / "d")
    header = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)[1])
    assert [c["config_name"] for c in header["configs"]] == [
        "tasks", "checklist_groups", "checklist_items", "labels", "gold_labels"]
    assert "drop or pseudonymise those columns" in (folder / "README.md").read_text(encoding="utf-8")
    labels = load_dataset(folder, "labels")["test"].to_list()
    stored = Label.objects.filter(project=world["project"]).order_by("created_at", "pk")
    assert [(r["label_id"], r["annotator"], r["task_id"]) for r in labels] == [
        (label.pk, label.annotator.username, f"{world['task'].protocol}/{world['task'].key}") for label in stored]
    assert len(labels) == 3  # the other project's label is on a task outside the set
    assert [yaml.safe_load(r["value"]) for r in labels] == [label.value for label in stored]
    gold = load_dataset(folder, "gold_labels")["test"].to_list()
    assert [(r["item_id"], r["decided_by"], r["note"]) for r in gold] == [
        (g.item_id, "owner", "ann2 misread it") for g in GoldLabel.objects.all()]
    tasks = load_dataset(folder)["test"]
    assert tasks["task_id"] == [f"{world['task'].protocol}/{world['task'].key}"]
    # Without the option: no labels.
    plain = run(world["owner"], task_set=world["task_set"].pk, format="huggingface")
    with zipfile.ZipFile(export_file(job=plain)) as archive:
        assert not any(n.startswith(("labels/", "gold_labels/")) for n in archive.namelist())
        assert "pseudonymise" not in archive.read("README.md").decode("utf-8")


def test_a_curator_who_labels_blind_gets_nothing_of_what_those_items_hide(world, load_dataset, tmp_path):
    watcher = curator("watcher")
    alice = annotator("alice")
    blind = agreement_project(world["owner"], [alice], name="blind one", blind=True)
    membership_add(project=blind, user=watcher, role="annotator", actor=world["owner"])
    item = AnnotationItem.objects.filter(project=blind).order_by("position").first()
    label_all(item, [alice], {"label": "correct"})
    task_set = taskset_freeze(task_set=taskset_create(name="blind set", tasks=[item.task]), allow_uncurated=True)
    job = run(watcher, task_set=task_set.pk, format="huggingface", include_labels=True)
    assert job.status == ExportJob.Status.DONE, job.error
    names = zipfile.ZipFile(export_file(job=job)).namelist()
    assert not any(n.startswith("labels/") for n in names)  # alice's label is hidden from watcher: no config
    # The project's owner, who does not label there, gets it.
    job = run(world["owner"], task_set=task_set.pk, format="huggingface", include_labels=True)
    labels = load_dataset(unzip(job, tmp_path / "owner"), "labels")["test"]
    assert labels["annotator"] == ["alice"]


def test_who_may_ask_and_what_is_refused(world):
    with pytest.raises(PermissionError, match="only curators"):
        export_request(user=world["ann1"], kind="taskset",
                       parameters={"task_set": world["task_set"].pk, "format": "huggingface", "include_labels": True})
    with pytest.raises(ValueError, match="include_labels: only the huggingface format"):
        export_request(user=world["owner"], kind="taskset",
                       parameters={"task_set": world["task_set"].pk, "format": "native", "include_labels": True})
    with pytest.raises(ValueError, match="include_history"):
        export_request(user=world["owner"], kind="taskset",
                       parameters={"task_set": world["task_set"].pk, "format": "huggingface", "include_history": True})
    unfrozen = taskset_create(name="draft", tasks=[world["task"]])
    with pytest.raises(ValueError, match="not frozen; freeze it"):
        export_request(user=world["owner"], kind="taskset",
                       parameters={"task_set": unfrozen.pk, "format": "huggingface"})
    assert not ExportJob.objects.exists()


def test_the_page_and_the_api_offer_the_format(world, client, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr("annotation.tasks.run_export.delay", lambda job_id: None)
    client.force_login(world["owner"])
    page = client.get(f"/benchmark/task-sets/{world['task_set'].pk}/").content.decode()
    assert '<option value="huggingface">' in page and 'name="include_labels"' in page
    draft = taskset_create(name="draft", tasks=[world["task"]])
    page = client.get(f"/benchmark/task-sets/{draft.pk}/").content.decode()
    assert '<option value="huggingface">' not in page and 'name="include_labels"' not in page
    response = client.post("/benchmark/exports/new/", {"kind": "taskset", "task_set": world["task_set"].pk,
                                                       "format": "huggingface", "include_labels": "1"})
    assert response.status_code == 302
    assert ExportJob.objects.get().parameters == {"task_set": world["task_set"].pk, "format": "huggingface",
                                                 "include_history": False, "include_unreviewed": False,
                                                 "include_labels": True}
    api = APIClient()
    api.force_authenticate(world["owner"])
    answer = api.post("/api/exports/", {"kind": "taskset", "task_set": world["task_set"].pk, "format": "huggingface",
                                        "include_labels": True}, format="json")
    assert answer.status_code == 202 and answer.json()["parameters"]["include_labels"] is True
    refused = api.post("/api/exports/", {"kind": "taskset", "task_set": draft.pk, "format": "huggingface"},
                       format="json")
    assert refused.status_code == 400 and "not frozen" in refused.content.decode()


def test_the_command_writes_the_folder(world, load_dataset, tmp_path, monkeypatch):
    folder = tmp_path / "out"
    call_command("export_taskset", "with labels", "--format", "huggingface", "-o", str(folder), stderr=io.StringIO())
    assert load_dataset(folder)["test"].num_rows == 1
    assert not (folder / "labels").exists()  # the command writes task content only
    with pytest.raises(CommandError, match="not an empty folder"):
        call_command("export_taskset", "with labels", "--format", "huggingface", "-o", str(folder))
    taskset_create(name="draft", tasks=[world["task"]])
    with pytest.raises(CommandError, match="not frozen"):
        call_command("export_taskset", "draft", "--format", "huggingface", "-o", str(tmp_path / "draft"))
    assert not (tmp_path / "draft").exists()
    # A failure half-way leaves no half-written dataset behind.
    monkeypatch.setattr("benchmark.exporters.huggingface.BATCH_ROWS", 1)
    monkeypatch.setattr("benchmark.exporters.huggingface._ConfigWriter.close", fails)
    with pytest.raises(CommandError, match="disk says no"):
        call_command("export_taskset", "with labels", "--format", "huggingface", "-o", str(tmp_path / "half"))
    assert not (tmp_path / "half").exists()


def fails(self):
    raise ValueError("disk says no")
