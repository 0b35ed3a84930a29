"""The rating workspace in a real browser at 1366×768, by keyboard only: a digit per criterion,
Tab to the next, Enter to submit; the system stays anonymous; an out-of-scale score is refused
on its field with nothing stored; axe's WCAG 2 A/AA rules hold."""

import pytest
from playwright.sync_api import expect

from annotation.models import AnnotationItem, Label, Role
from annotation.services.projects import membership_add, project_create
from tests.annotation_factories import ProfileFactory
from tests.browser.test_annotation_workspace import PASSWORD, report_text, wait_item
from tests.factories import ReportFactory, SystemFactory, TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_rating_by_keyboard(page, live_server, login, screenshot):
    from tests.support.axe import assert_accessible

    owner = ProfileFactory(user=UserFactory(username="curator"), role=Role.CURATOR).user
    expert = UserFactory(username="expert1")
    expert.set_password(PASSWORD)
    expert.save()
    ProfileFactory(user=expert, role=Role.ANNOTATOR)
    task = TaskFactory(protocol="surveylens", key="radar-survey", title="Radar data representations")
    for n, angle in enumerate(("point clouds", "tensors")):
        ReportFactory(task=task, system=SystemFactory(name=f"secret-system-{n}"), text=report_text(angle, "[1]"))
    project = project_create(
        name="Expert ratings", kind="rating", created_by=owner, tasks=[task],
        criteria=["coverage", "structure", "relevance"],
        scale={"min": 1, "max": 5, "anchors": {"1": "poor", "3": "adequate", "5": "excellent"}},
        guidelines="Score each criterion from 1 (poor) to 5 (excellent).",
    )
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)

    login("expert1", PASSWORD)
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/annotate/{project.pk}/")
    first = wait_item(page, None)
    scores = page.locator("input[data-score]")
    expect(scores).to_have_count(3)
    expect(page.locator("[data-role=report]")).to_contain_text("Radar representations for driving")
    expect(page.locator(".ws-item")).not_to_contain_text("secret-system")
    expect(scores.first).to_be_focused()
    screenshot("rating-1-before")
    assert_accessible(page, "rating workspace, before scoring")

    # An out-of-scale score: refused on its field, nothing stored, the typed scores kept.
    page.keyboard.type("4")
    page.keyboard.press("Tab")
    page.keyboard.type("9")
    page.keyboard.press("Tab")
    page.keyboard.type("5")
    page.keyboard.press("Enter")
    expect(page.locator(".ws-score .error")).to_have_count(1)
    expect(page.locator(".ws-score .error")).to_contain_text("5")
    assert not Label.objects.exists()
    expect(scores.first).to_have_value("4")
    expect(page.locator("input[data-score=structure]")).to_be_focused()  # the refused field, to retype
    screenshot("rating-1-refused")

    page.keyboard.press("Control+a")
    page.keyboard.type("3")
    page.keyboard.press("Enter")
    second = wait_item(page, first)
    label = Label.objects.get()
    assert label.value == {"scores": {"coverage": 4, "structure": 3, "relevance": 5}, "rationale": ""}
    assert label.item_id == int(first)
    expect(page.locator("input[data-score]").first).to_be_focused()
    for digit in "253":
        page.keyboard.type(digit)
        page.keyboard.press("Tab")
    page.keyboard.type("Loose structure, relevant throughout.")  # Tab from the last score: the rationale
    screenshot("rating-2-typed")
    page.locator("[data-submit]").click()
    expect(page.locator(f'.ws-item[data-item="{second}"]')).to_have_count(0)
    assert Label.objects.count() == 2
    assert Label.objects.get(item_id=int(second)).value == {
        "scores": {"coverage": 2, "structure": 5, "relevance": 3}, "rationale": "Loose structure, relevant throughout."}
    assert not AnnotationItem.objects.filter(project=project, labels_done=0).exists()
    screenshot("rating-done")
