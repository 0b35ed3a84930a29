"""Issue 38, agreement labels explained: each label's meaning (the protocol's default, or the
project's own text) beside the controls (data-role=label-help), in the new-project preview and in
the edit form; a change is a new guidelines version with its audit row; a line naming no label of
the project is refused naming the line, nothing stored."""

import pytest
from django.urls import reverse

from annotation.label_help import DEFAULTS, label_help, label_help_parse
from annotation.models import AnnotationProject
from core.models import AuditLog
from tests.annotation_factories import agreement_project

pytestmark = pytest.mark.django_db


def test_defaults_per_step_then_per_label_and_the_projects_own_text_first():
    deepsynth = dict(label_help(labels=["correct", "omitted"], step="deepsynth.checklist_group"))
    assert deepsynth["correct"] == DEFAULTS[("deepsynth.checklist_group", "correct")]
    assert "not about the judge" in deepsynth["correct"]
    assert dict(label_help(labels=["correct"], step="reportbench.factuality"))["correct"].startswith(
        "The statement is what the cited paper says")
    own = dict(label_help(labels=["correct", "odd"], own={"correct": "Our own words."}))
    assert own == {"correct": "Our own words."}  # a label without any meaning is left out
    assert label_help_parse("correct: Right.\n\nomitted: " + DEFAULTS[(None, "omitted")],
                            labels=["correct", "omitted"]) == {"correct": "Right."}
    with pytest.raises(ValueError, match="line 2: 'wrong' is not a label"):
        label_help_parse("correct: Right.\nwrong: x", labels=["correct"])


def test_the_workspace_shows_what_each_label_means_beside_the_controls(as_user, owner, alice):
    project = agreement_project(owner, [alice])
    html = as_user(alice, hx=False).get(reverse("annotation:workspace", args=[project.pk])).content.decode()
    help_block = html.split('data-role="label-help"')[1].split("</dl>")[0]
    for label in ("correct", "omitted", "incorrect"):
        assert f"<dt>{label}</dt>" in help_block
    assert "not about whether the judge was right" in help_block or "not about the judge" in help_block


def test_the_edit_form_changes_them_as_a_new_guidelines_version(as_user, owner, alice):
    project = agreement_project(owner, [alice])
    url = reverse("annotation:edit", args=[project.pk])
    client = as_user(owner, hx=False)
    page = client.get(url).content.decode()
    assert 'name="label_help"' in page and "correct: " in page
    version = project.guidelines_version
    data = {"name": project.name, "description": "", "hold_minutes": "30", "status": "open"}
    refused = client.post(url, {**data, "label_help": "correct: fine\nverdict: no"})
    assert refused.status_code == 400 and "line 2: &#x27;verdict&#x27; is not a label" in refused.content.decode()
    assert client.post(url, {**data, "label_help": "correct: The report gets this point right."}).status_code == 302
    project.refresh_from_db()
    assert project.label_help == {"correct": "The report gets this point right."}
    assert project.guidelines_version == version + 1
    row = AuditLog.objects.filter(action="project.update", object_id=project.pk).latest("id")
    assert row.after["label_help"] == {"correct": "The report gets this point right."}
    shown = as_user(alice, hx=False).get(reverse("annotation:workspace", args=[project.pk])).content.decode()
    assert "The report gets this point right." in shown


def test_the_new_project_preview_lists_them(as_user, owner):
    from tests.annotation.web.test_curation import _create_body
    from tests.annotation_factories import checklist_task

    task, _ = checklist_task(2)
    response = as_user(owner, hx=False).post(reverse("annotation:new"), {**_create_body([task]), "action": "preview"})
    html = response.content.decode()
    assert response.status_code == 200 and 'data-role="label-help"' in html
    assert "<dt>accept</dt>" in html and "<dt>reject</dt>" in html
    assert not AnnotationProject.objects.exists()
