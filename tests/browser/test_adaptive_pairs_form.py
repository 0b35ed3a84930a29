"""A curator makes an adaptive pairwise project in real Chromium at 1366×768: the pairwise section
offers the choice, the preview says the first pairs and the budget, axe finds no WCAG 2 A/AA
violation, and the project page states the design. Screenshot in test-artifacts/screenshots/."""

import re

import pytest
from playwright.sync_api import expect

from annotation.models import AnnotationProject
from tests.annotation_factories import curator
from tests.factories import ReportFactory, SystemFactory, TaskFactory
from tests.support.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_curator_makes_an_adaptive_pairwise_project(page, live_server, login, screenshot):
    user = curator("curator")
    user.set_password("pw-for-tests")
    user.save()
    task = TaskFactory(protocol="surveylens")
    for _ in range(4):
        ReportFactory(task=task, system=SystemFactory())
    page.set_viewport_size({"width": 1366, "height": 768})
    login("curator", "pw-for-tests")
    page.goto(f"{live_server.url}/annotate/new/")
    page.check(f"input[name=tasks][value='{task.pk}']")
    page.check("input[name=kind][value=pairwise]")
    page.fill("input[name=name]", "Head to head, adaptive")
    page.select_option("select[name=pair_choice]", "adaptive")
    page.fill("input[name=uniform_share]", "0.3")
    page.fill("input[name=pairs_budget]", "8")
    page.click("#preview-button")
    expect(page.locator("#preview-adaptive")).to_contain_text("up to 8 pairs")
    page.locator("select[name=pair_choice]").scroll_into_view_if_needed()
    screenshot("adaptive-pairs-new")
    assert_accessible(page, "new adaptive pairwise project")
    page.click("#create-button")
    page.wait_for_url(re.compile(r"/annotate/\d+/"))
    project = AnnotationProject.objects.get(name="Head to head, adaptive")
    assert (project.pair_choice, project.uniform_share, project.pairs_budget) == ("adaptive", 0.3, 8)
    assert project.items.count() == 4
    page.goto(f"{live_server.url}/annotate/{project.pk}/edit/")
    expect(page.locator("#project-edit")).to_contain_text("adaptive pairs (0.30 uniform, 8 pairs in all)")
    page.goto(f"{live_server.url}/annotate/{project.pk}/progress/")
    expect(page.locator("#adaptive-design")).to_contain_text("4 / 8")
    expect(page.locator("#adaptive-design")).to_contain_text("unbalanced on purpose")
    page.locator("#adaptive-design").scroll_into_view_if_needed()
    screenshot("adaptive-pairs-progress")
    assert_accessible(page, "progress of an adaptive pairwise project")
