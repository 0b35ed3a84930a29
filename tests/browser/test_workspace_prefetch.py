"""The workspace holds the next item ready (issue #20): sending a label shows the next item at
once, before the server has answered; the answer brings the item after it. A request that
fails brings the sent item back as it was, with the next one behind it again."""

import re

import pytest
from playwright.sync_api import expect

from annotation.models import AnnotationItem, Assignment, Label
from tests.annotation_factories import ProfileFactory, checklist_task, verify_project
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests"  # UserFactory's
LABEL_POST = re.compile(r".*/items/\d+/label/$")


def _shown(page) -> str:
    item = page.locator("#workspace > .ws-item")
    expect(item).to_have_count(1)
    return item.get_attribute("data-item")


def _held_ready(page) -> str:
    """The item held ready behind the shown one (its section inside #ws-after's template)."""
    html = page.locator("#ws-after").inner_html()
    return re.search(r'data-item="(\d+)"', html)[1]


def test_the_next_item_shows_while_the_label_is_sent(page, live_server, login, screenshot):
    owner = ProfileFactory(user=UserFactory(username="owner"), role="curator").user
    reviewer = ProfileFactory(user=UserFactory(username="reviewer")).user
    task, _ = checklist_task(4)
    project = verify_project(owner, [reviewer], tasks=[task])
    login("reviewer", PASSWORD)
    page.goto(f"{live_server.url}/annotate/{project.pk}/")
    first, second = _shown(page), _held_ready(page)
    assert first != second

    held = []  # the label POST waits here until the test lets it through
    page.route(LABEL_POST, lambda route: held.append(route))
    page.keyboard.press("a")
    page.keyboard.press("Enter")
    expect(page.locator(f'#workspace > .ws-item[data-item="{second}"]')).to_be_visible()
    assert _shown(page) == second
    page.wait_for_timeout(100)
    assert len(held) == 1 and not Label.objects.filter(item_id=first).exists()  # shown before any answer
    screenshot("workspace-next-item-shown-while-sending")

    held[0].continue_()
    position = AnnotationItem.objects.get(pk=first).position
    expect(page.locator("#workspace > .ws-flash")).to_contain_text(f"Saved your label on item {position}.")
    expect(page.locator("#ws-after template")).to_have_count(1)
    third = _held_ready(page)
    assert third not in (first, second) and _shown(page) == second
    assert Label.objects.filter(item_id=first, annotator=reviewer).count() == 1
    assert Assignment.objects.filter(user=reviewer, status=Assignment.Status.ACTIVE).count() == 2  # shown + ready
    page.unroute(LABEL_POST)

    # The network fails: the sent item comes back with its input, the next one behind it again.
    page.route(LABEL_POST, lambda route: route.abort())
    page.keyboard.press("a")
    page.keyboard.press("Enter")
    expect(page.locator("#ws-alert")).to_contain_text("Could not reach the server")
    assert _shown(page) == second and _held_ready(page) == third
    expect(page.locator(f'#workspace .ws-item[data-item="{second}"] input[value="accept"]')).to_be_checked()
    assert not Label.objects.filter(item_id=second).exists()
    screenshot("workspace-send-failed-item-back")
    page.unroute(LABEL_POST)

    # Sent again, it goes through; the item held ready is shown at once.
    page.keyboard.press("Enter")
    expect(page.locator(f'#workspace > .ws-item[data-item="{third}"]')).to_be_visible()
    position = AnnotationItem.objects.get(pk=second).position
    expect(page.locator("#workspace > .ws-flash")).to_contain_text(f"Saved your label on item {position}.")
    assert Label.objects.filter(item_id=second, annotator=reviewer).count() == 1
    screenshot("workspace-prefetch-after-two-labels")
