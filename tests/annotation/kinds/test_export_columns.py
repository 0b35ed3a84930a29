"""A kind's ``export_columns`` in the annotation export: a one-project export spreads them into
``value_<field>`` columns, read from the value as the exporting user may see it."""

import csv
import io
import json
import zipfile

import pytest

from annotation.exporters import LABEL_COLUMNS
from annotation.kinds import kind_of
from annotation.models import AnnotationItem, Label
from annotation.services.exports import annotations_bundle_write
from annotation.services.projects import project_create
from tests.annotation_factories import agreement_project, annotator, curator, label_all, members_add
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db


def exported(user, project_id, fmt):
    out = io.BytesIO()
    annotations_bundle_write(user=user, project_id=project_id, fmt=fmt, out=out)
    return zipfile.ZipFile(io.BytesIO(out.getvalue())).read(f"labels.{fmt}").decode("utf-8")


def test_a_rating_project_exports_its_scores_and_rationale_in_columns_of_their_own():
    owner, ana = curator("owner"), annotator("ana")
    task = TaskFactory(protocol="surveylens")
    for n in range(2):
        ReportFactory(task=task, system=SystemFactory(name=f"s{n}"))
    project = project_create(name="ratings", kind="rating", created_by=owner, tasks=[task],
                             criteria=["coverage", "structure"], overlap=1)
    members_add(project, owner, [ana])
    first, second = AnnotationItem.objects.filter(project=project).order_by("position")
    label_all(first, [ana], {"scores": {"coverage": 4, "structure": 3}, "rationale": "=SUM(A1) is broad"})
    label_all(second, [ana], {"scores": {"coverage": 2, "structure": 1}})
    rows = list(csv.DictReader(io.StringIO(exported(owner, project.pk, "csv"))))
    assert tuple(rows[0]) == LABEL_COLUMNS + ("value_scores", "value_rationale")
    assert kind_of(project).export_columns == ("scores", "rationale")
    stored = list(Label.objects.filter(project=project).order_by("created_at", "pk"))
    assert [json.loads(row["value_scores"]) for row in rows] == [label.value["scores"] for label in stored]
    assert [row["value_rationale"] for row in rows] == ["'=SUM(A1) is broad", ""]  # a formula stays text
    lines = [json.loads(line) for line in exported(owner, project.pk, "jsonl").splitlines()]
    assert [line["value_scores"] for line in lines] == [label.value["scores"] for label in stored]


def test_an_all_projects_export_keeps_the_value_as_json_alone():
    owner, ana = curator("owner"), annotator("ana")  # ``curator``: a global curator, who may export all
    project = agreement_project(owner, [ana], labels=["correct"])
    label_all(AnnotationItem.objects.get(project=project), [ana], {"label": "correct"})
    header = next(csv.reader(io.StringIO(exported(owner, None, "csv"))))
    assert tuple(header) == LABEL_COLUMNS


def test_blind_mode_leaves_a_hidden_field_empty_for_the_annotator_and_not_for_the_curator():
    owner, ana = curator("owner"), annotator("ana")
    project = agreement_project(owner, [ana], labels=["correct", "omitted"], blind=True, reveal="close")
    item = AnnotationItem.objects.filter(project=project).order_by("position").first()
    label_all(item, [ana], {"label": "correct"})
    assert "judge_correct" in Label.objects.get(item=item).value  # the server derived it from the verdict
    theirs = list(csv.DictReader(io.StringIO(exported(ana, project.pk, "csv"))))
    assert [(row["value_label"], row["value_judge_correct"]) for row in theirs] == [("correct", "")]
    curators = list(csv.DictReader(io.StringIO(exported(owner, project.pk, "csv"))))
    assert [row["value_judge_correct"] for row in curators] == [
        str(Label.objects.get(item=item).value["judge_correct"])]
