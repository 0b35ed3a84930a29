"""A blind pairwise study's workspace never loses a label to undo (issue #37): a label is final
there, so there is no Undo control and no ``u`` shortcut; ``u`` then a choice and Enter stores
the label, and nothing is ever sent to the undo URL. At the reviewers' 1366×768."""

import re

import pytest
from playwright.sync_api import expect

from django.utils import timezone

from annotation.models import Assignment, Label
from tests.annotation_factories import ProfileFactory, pairwise_project
from tests.factories import UserFactory
from tests.support.browser import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests"  # UserFactory's
UNDO = re.compile(r"/undo/?$")
SKIP = re.compile(r".*/items/\d+/skip/$")


def test_u_then_choose_and_enter_stores_the_label_in_a_blind_pairwise_study(browser, live_server):
    owner = ProfileFactory(user=UserFactory(username="owner"), role="curator").user
    annotator = ProfileFactory(user=UserFactory(username="author")).user
    project = pairwise_project(owner, [annotator], n_tasks=1, n_systems=4, name="blind head to head")
    assert project.blind
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(10_000)
    undo_requests = []
    page.on("request", lambda request: undo_requests.append(request.url) if UNDO.search(request.url) else None)
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "author")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    page.goto(f"{live_server.url}/annotate/{project.pk}/")
    expect(page.locator("#workspace .ws-item")).to_have_count(1)
    expect(page.locator('[data-key~="u"]')).to_have_count(0)  # no Undo control: a label is final here
    expect(page.locator("#ws-help")).not_to_contain_text("undo")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "blind-pairwise-no-undo.png"))

    for done in (1, 2, 3):
        shown = page.locator("#workspace > .ws-item").get_attribute("data-item")
        page.keyboard.press("u")
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        expect(page.locator(f'#workspace > .ws-item[data-item="{shown}"]')).to_have_count(0)
        expect(page.locator("#workspace > .ws-flash")).to_contain_text("Saved your label")
        for _ in range(100):  # the answer has come when the label is stored
            if Label.objects.filter(annotator=annotator, project=project).count() >= done:
                break
            page.wait_for_timeout(100)
        assert Label.objects.filter(annotator=annotator, project=project).count() == done
        assert Label.objects.filter(annotator=annotator, item_id=int(shown)).count() == 1
    page.screenshot(path=str(SCREENSHOTS / "blind-pairwise-after-three-labels.png"))
    assert undo_requests == []

    # A refused skip (the item was skipped by them before, as a second tab would have done)
    # neither moves on nor is sent again by the next Enter, which stores the label.
    skips = []
    page.on("request", lambda request: skips.append(request.url) if SKIP.search(request.url) else None)
    shown = page.locator("#workspace > .ws-item").get_attribute("data-item")
    now = timezone.now()
    Assignment.objects.create(project=project, item_id=int(shown), user=annotator, claimed_at=now, expires_at=now,
                              status=Assignment.Status.SKIPPED, ended_at=now)
    page.keyboard.press("s")
    expect(page.locator("#ws-alert")).to_contain_text("you already skipped this item")
    assert page.locator("#workspace > .ws-item").get_attribute("data-item") == shown
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    expect(page.locator(f'#workspace > .ws-item[data-item="{shown}"]')).to_have_count(0)
    for _ in range(100):
        if Label.objects.filter(annotator=annotator, item_id=int(shown)).exists():
            break
        page.wait_for_timeout(100)
    assert Label.objects.filter(annotator=annotator, item_id=int(shown)).count() == 1
    assert len(skips) == 1 and undo_requests == []
    context.close()
