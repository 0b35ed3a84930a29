"""The htmx panel's "everything proposed for this task" section, loaded when it is opened."""

import pytest
from playwright.sync_api import expect

from tests.annotation_factories import ProfileFactory, checklist_task, verify_project
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests"  # UserFactory's


def test_the_task_material_loads_when_opened(page, live_server, login, screenshot):
    owner = ProfileFactory(user=UserFactory(username="owner"), role="curator").user
    reviewer = ProfileFactory(user=UserFactory(username="reviewer")).user
    task, items = checklist_task(3)
    project = verify_project(owner, [reviewer], tasks=[task])
    login("reviewer", PASSWORD)
    page.goto(f"{live_server.url}/annotate/{project.pk}/")
    first = page.locator(".ws-item").get_attribute("data-item")
    page.keyboard.press("a")
    page.keyboard.press("Enter")
    expect(page.locator(f'.ws-item[data-item="{first}"]')).to_have_count(0)  # CSP: no JS strings to evaluate
    expect(page.locator(".ws-flash")).to_contain_text("Saved your label")
    lazy = page.locator(".ws-task-items details.ws-material-lazy")
    expect(lazy).to_be_visible()
    expect(lazy.locator(".ws-material")).not_to_contain_text(items[0].text)  # nothing loaded yet
    lazy.locator("summary").first.click()
    for item in items:
        expect(lazy.locator(".ws-material")).to_contain_text(item.text)
    current = page.locator(".ws-item").get_attribute("data-item")
    expect(lazy.locator("li.current")).to_have_count(1)
    screenshot("verify-task-material")
    assert current != first
