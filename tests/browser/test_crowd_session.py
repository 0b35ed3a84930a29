"""A crowd worker's whole session in real Chromium at 1366×768 (issue #42): the platform's entry
link signs them in, they label their quota by keyboard (attention checks among the items, not
told apart), open an item's discussion (closed to them: the study is blind), and end on the
completion code, which sends them back to the platform. Then the curator's progress page counts
their attention checks. Every page is checked with axe-core (WCAG 2 A/AA) and photographed as
``test-artifacts/screenshots/crowd-NN-<page>.png``."""

import re
from itertools import count

import pytest
from playwright.sync_api import expect

from annotation.crowd.models import AttentionCheck, CrowdStudy, CrowdWorker
from annotation.crowd.services import attention_check_set
from annotation.models import AnnotationItem, Label
from tests.annotation_factories import pairwise_project
from tests.factories import UserFactory
from tests.support.axe import assert_accessible
from tests.support.browser import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT = {"width": 1366, "height": 768}
QUOTA = 4


def test_a_crowd_worker_labels_their_quota_and_gets_the_completion_code(browser, live_server):
    from tests.annotation_factories import ProfileFactory

    curator = ProfileFactory(user=UserFactory(username="lab-curator"), role="curator").user
    curator.set_password("curator-pass-phrase")
    curator.save()
    project = pairwise_project(curator, [], n_tasks=2, n_systems=3, name="Crowd preferences")

    numbers = count(1)
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(15_000)

    def check(name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"crowd-{next(numbers):02d}-{name}.png"))
        assert_accessible(page, name)

    # The curator opens the project to Prolific on its crowd page and copies the entry link.
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "lab-curator")
    page.fill("input[name=password]", "curator-pass-phrase")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    page.goto(f"{live_server.url}/annotate/{project.pk}/progress/")
    page.get_by_role("link", name="Open this project to a crowd platform").click()
    page.fill("#id_quota", str(QUOTA))
    page.fill("#id_check_rate", "0.25")
    page.fill("#id_completion_code", "7F3A9C")
    page.fill("#id_completion_url", f"{live_server.url}/healthz?cc={{code}}")
    check("crowd-study-form")
    page.get_by_role("button", name="Open to a crowd platform").click()
    expect(page.locator("#crowd-link")).to_have_value(re.compile(r"/join/[\w-]+/\?PROLIFIC_PID="))
    check("crowd-study-open")
    link = page.locator("#crowd-link").input_value()
    study = CrowdStudy.objects.get(project=project)
    assert (study.quota, study.check_rate, study.completion_code) == (QUOTA, 0.25, "7F3A9C")
    for item in AnnotationItem.objects.filter(project=project).order_by("-position")[:2]:
        attention_check_set(project=project, item_id=item.pk, expected={"choice": "left"}, actor=curator)
    context.close()

    # A worker arrives from Prolific, which fills in the placeholders.
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(15_000)
    worker_link = (link.replace("{{%PROLIFIC_PID%}}", "5f1e2d3c4b").replace("{{%STUDY_ID%}}", "st-1")
                   .replace("{{%SESSION_ID%}}", "se-1"))
    page.goto(worker_link)
    expect(page.locator(".ws-item")).to_have_count(1)
    assert page.url.endswith(f"/annotate/{project.pk}/")
    expect(page.locator("header nav")).to_have_count(0)  # no menu to anything else
    expect(page.locator(".ws-item-head")).not_to_contain_text("labels so far")
    check("workspace")

    page.locator(".ws-discussion summary").click()  # blind, reveals at close: the discussion stays closed
    expect(page.locator("[data-role=comments-closed]")).to_be_visible()
    page.locator("[data-role=comments-closed]").scroll_into_view_if_needed()
    check("discussion-closed")
    page.locator(".ws-discussion summary").click()

    shown = []
    for n in range(QUOTA):
        item = page.locator(".ws-item").first.get_attribute("data-item")
        shown.append(int(item))
        page.locator("body").click(position={"x": 5, "y": 300})  # the page, not a field, has the keyboard
        page.keyboard.press("1")  # the left report
        page.keyboard.press("Enter")
        if n < QUOTA - 1:
            expect(page.locator(f'.ws-item[data-item="{item}"]')).to_have_count(0)
    page.wait_for_url(f"**/annotate/{project.pk}/crowd/done/")
    expect(page.locator("[data-role=completion-code]")).to_have_text("7F3A9C")
    check("completion")
    page.locator("#crowd-stay").click()
    expect(page.locator("#crowd-countdown")).to_contain_text("You stay on this page")
    page.locator("[data-role=completion-link]").click()
    page.wait_for_url(f"{live_server.url}/healthz?cc=7F3A9C")

    worker = CrowdWorker.objects.get(worker_id="5f1e2d3c4b")
    assert worker.completed_at is not None
    assert Label.objects.filter(annotator=worker.user).count() == QUOTA
    checks = set(AttentionCheck.objects.values_list("item_id", flat=True))
    assert len(set(shown) & checks) == 1  # one check in four, in the same markup as the rest
    context.close()

    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", "lab-curator")
    page.fill("input[name=password]", "curator-pass-phrase")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    page.goto(f"{live_server.url}/annotate/{project.pk}/progress/")
    row = page.locator(f'#annotator-progress tr[data-user="{worker.user.username}"]')
    expect(row.locator("[data-stat=attention]")).to_have_text("0 of 1")
    expect(page.locator("#crowd-link")).to_have_value(
        f"{live_server.url}/join/{study.token}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
        "&SESSION_ID={{%SESSION_ID%}}")
    check("curator-progress")

    # The curator discusses a settled item (k = 1: the worker's label settled it) on its page.
    regular = next(item for item in shown if item not in checks)
    page.goto(f"{live_server.url}/annotate/{project.pk}/items/{regular}/")
    page.locator(".ws-discussion summary").click()
    page.fill(".ws-comments textarea", "Left wins on **coverage**; worth a second look?")
    page.get_by_role("button", name="Post comment").click()
    expect(page.locator(".ws-comment-list li")).to_have_count(1)
    expect(page.locator(".ws-comment-text strong")).to_have_text("coverage")
    page.locator(".ws-comment-list").scroll_into_view_if_needed()
    check("curator-discussion")
    context.close()
