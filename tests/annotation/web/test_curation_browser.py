"""The curator creates a project and adds a member in real Chromium (screenshots in test-artifacts/)."""

import pytest

from annotation.models import AnnotationProject, ProjectMembership
from tests.annotation_factories import annotator, checklist_task, curator
from tests.support.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_curator_previews_creates_and_staffs_a_verify_project(page, live_server, login, screenshot):
    owner = curator("curator")
    owner.set_password("pw-for-tests")
    owner.save()
    annotator("alice")
    task, _ = checklist_task(3, key="topic-1", title="Graph neural networks")
    login("curator", "pw-for-tests")
    page.click("text=Annotate")
    page.click("#new-project")
    page.fill("#task-filter input[name=search]", "topic")
    page.click("#task-filter button")
    page.check("text=deepsynth/topic-1 — Graph neural networks")
    page.fill("input[name=name]", "Review topic 1")
    page.click("#preview-button")
    assert page.locator("#preview-items").inner_text() == "3"
    assert not AnnotationProject.objects.exists()
    assert page.locator("input[name=name]").input_value() == "Review topic 1"
    screenshot("curation-new-project-preview")
    assert_accessible(page, "new project with its preview")
    page.click("#create-button")
    page.wait_for_url("**/members/")
    project = AnnotationProject.objects.get(name="Review topic 1")
    assert project.items.count() == 3
    page.select_option("select[name=add-username]", "alice")
    page.click("#member-add button")
    page.wait_for_selector("#members >> text=alice")
    assert ProjectMembership.objects.get(project=project, user__username="alice").role == "annotator"
    page.fill("input[name=invite-username]", "bruno")
    page.click("#member-invite button")
    link = page.locator("#invite-link code").inner_text()
    assert link.startswith(f"{live_server.url}/invite/")
    screenshot("curation-members")
    assert_accessible(page, "members with an invitation link")
    page.click("text=Edit the project")
    assert_accessible(page, "project edit")
