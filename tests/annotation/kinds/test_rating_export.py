"""A rating project's scores in the native annotation export (JSONL and CSV, blind to the
system for its annotators) and in the Hugging Face export of its task set."""

import io
import json
import zipfile

import pytest
import yaml

from annotation.models import AnnotationItem, Label
from annotation.services.exports import annotations_bundle_write, export_file, export_request
from annotation.services.projects import project_create
from annotation.tasks import run_export
from benchmark.services.tasksets import taskset_create, taskset_freeze
from tests.annotation_factories import annotator, curator, label_all, members_add
from tests.benchmark.exporters.conftest import load_dataset  # noqa: F401  (the fixture)
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.fixture
def world():
    owner, ana, ben = curator("owner"), annotator("ana"), annotator("ben")
    task = TaskFactory(protocol="surveylens", status="curated")  # a task set freezes curated tasks
    for n in range(2):
        ReportFactory(task=task, system=SystemFactory(name=f"s{n}"))
    project = project_create(name="ratings", kind="rating", created_by=owner, tasks=[task],
                             criteria=["coverage", "structure"], overlap=2)
    members_add(project, owner, [ana, ben])
    first, second = AnnotationItem.objects.filter(project=project).order_by("position")
    label_all(first, [ana, ben], {"scores": {"coverage": 4, "structure": 3}, "rationale": "broad"},
              {"scores": {"coverage": 5, "structure": 3}})
    label_all(second, [ana], {"scores": {"coverage": 2, "structure": 2}})
    return {"owner": owner, "ana": ana, "ben": ben, "project": project, "task": task, "first": first,
            "second": second}


def bundle(user, project_id, fmt):
    out = io.BytesIO()
    annotations_bundle_write(user=user, project_id=project_id, fmt=fmt, out=out)
    archive = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    return {name: archive.read(name).decode("utf-8") for name in archive.namelist()}


def test_native_export_holds_the_scores_and_hides_the_report_from_its_raters(world):
    stored = list(Label.objects.filter(project=world["project"]).order_by("created_at", "pk"))
    rows = [json.loads(line) for line in bundle(world["owner"], world["project"].pk, "jsonl")["labels.jsonl"].splitlines()]
    assert [(r["project_kind"], r["target_kind"], r["value"]) for r in rows] == [
        ("rating", "report", label.value) for label in stored]
    assert [r["target_id"] for r in rows] == [label.item.target_id for label in stored]  # curators: the report
    csv_text = bundle(world["owner"], world["project"].pk, "csv")["labels.csv"]
    assert '""coverage"": 4' in csv_text or '"coverage": 4' in csv_text
    # ben rated the first report only, in a blind study open until it closes: no report ids
    mine = [json.loads(line) for line in bundle(world["ben"], world["project"].pk, "jsonl")["labels.jsonl"].splitlines()]
    assert [(r["annotator"], r["target_id"]) for r in mine] == [("ben", None)]


def test_huggingface_export_holds_the_scores(world, load_dataset, tmp_path):  # noqa: F811
    task_set = taskset_freeze(task_set=taskset_create(name="rated", tasks=[world["task"]]), actor=world["owner"])
    job = export_request(user=world["owner"], kind="taskset",
                         parameters={"task_set": task_set.pk, "format": "huggingface", "include_labels": True})
    run_export(job.pk)
    job.refresh_from_db()
    assert job.error == "", job.error
    folder = tmp_path / "hf"
    with zipfile.ZipFile(export_file(job=job)) as archive:
        archive.extractall(folder)
    labels = load_dataset(folder, "labels")["test"].to_list()
    stored = Label.objects.filter(project=world["project"]).order_by("created_at", "pk")
    assert [yaml.safe_load(r["value"]) for r in labels] == [label.value for label in stored]
