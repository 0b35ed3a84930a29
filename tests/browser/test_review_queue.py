"""Issue 38, the review queue in real Chromium at 1366×768 on the demo's DeepSynth release: a
curator opens the queue from the task page of the task with the most open proposals, presses
``a`` ten times, selects five more and rejects them in bulk with a reason — with no page
navigation — and the API then shows exactly those fifteen statuses, the reason on each rejection's
revision; ``j`` then ``e`` opens an edit with the caret at the end, the difference to the proposal
shows before saving, and exactly the saved text is stored. axe-core finds nothing on the queue.

Screenshots: test-artifacts/screenshots/review-queue-*.png (the viewport, as the curator sees it).
"""

import pytest
from django.conf import settings
from django.test import Client

from annotation.models import VERIFY_TARGETS
from annotation.selectors.review_queue import QueueFilters, review_queue_page
from benchmark.importers.catalogue import run_import
from benchmark.models import Task
from tests.annotation_factories import curator
from tests.support.axe import assert_accessible
from tests.support.browser import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT = {"width": 1366, "height": 768}
API_SEGMENT = {"prompt": "prompts", "constraint_question": "constraint-questions",
               "checklist_group": "checklist-groups", "checklist_item": "checklist-items",
               "gold_reference": "gold-references", "nugget": "nuggets", "rubric_criterion": "rubric-criteria"}


@pytest.fixture
def screen(browser, live_server):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def _shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"review-queue-{name}.png"))


def _open_counts(task) -> int:
    return review_queue_page(filters=QueueFilters(task=task), limit=1).total


def test_a_curator_decides_fifteen_proposals_by_keyboard_and_in_bulk_without_a_page_load(screen, live_server):
    run_import("deepsynth", settings.DATASETS_DIR / "deepsynth-eval" / "example_gen_result.jsonl")
    task = max(Task.objects.filter(protocol="deepsynth"), key=_open_counts)
    assert _open_counts(task) > 200  # the release's task 0 has 294
    user = curator("cur")
    base = live_server.url
    screen.goto(f"{base}/login/")
    screen.fill("input[name=username]", "cur")
    screen.fill("input[name=password]", "pw-for-tests")
    screen.click("button[type=submit]")
    screen.wait_for_url(lambda url: "/login/" not in url)
    screen.goto(f"{base}/benchmark/tasks/{task.pk}/")
    screen.click("[data-role=review-queue]")
    screen.wait_for_selector("[data-role=proposal].is-current")
    _shot(screen, "01-open")
    assert_accessible(screen, "review queue")
    first = screen.locator("[data-role=proposal]").first
    assert "is-current" in first.get_attribute("class")  # the first open proposal is current on open

    navigations = []
    screen.on("framenavigated", lambda frame: navigations.append(frame.url))
    accepted = []
    for _ in range(10):
        row = screen.locator("[data-role=proposal].is-current")
        row_id = row.get_attribute("id")
        accepted.append((row.get_attribute("data-kind"), int(row.get_attribute("data-id"))))
        screen.keyboard.press("a")
        screen.wait_for_function("id => { const r = document.getElementById(id); return r && r.dataset.status === 'accepted'"
                                 " && document.querySelector('[data-role=proposal].is-current').id !== id; }",
                                 arg=row_id)
    # the confirmation is on the decided row, in the viewport, and the cursor is on the next open row
    last = screen.locator(f"#rq-{accepted[-1][0]}-{accepted[-1][1]}")
    assert "Accepted" in last.inner_text()
    current = screen.locator("[data-role=proposal].is-current")
    assert current.get_attribute("data-status") == "proposed" and current.is_visible()
    _shot(screen, "02-ten-accepted")

    boxes = screen.locator("[data-role=proposal-select]")
    rejected = []
    for n in range(5):
        box = boxes.nth(n)
        kind, pk, _ = box.get_attribute("value").split(":")
        rejected.append((kind, int(pk)))
        box.check()
    assert not set(rejected) & set(accepted)
    screen.select_option("[data-role=reject-reason]", "duplicate")
    screen.fill("#rq-bulk-note", "same as the group's first item")
    screen.click("[data-role=bulk-reject]")
    screen.wait_for_selector(".rq-bulk-done")
    assert "5 rejected" in screen.locator("#rq-status").inner_text()
    _shot(screen, "03-bulk-rejected")
    assert navigations == []  # every decision swapped rows in place

    api = Client()
    api.force_login(user)
    for kind, pk in accepted + rejected:
        body = api.get(f"/api/{API_SEGMENT[kind]}/{pk}/").json()
        assert body["review_status"] == ("accepted" if (kind, pk) in accepted else "rejected")
    for kind, pk in rejected:
        revisions = api.get(f"/api/{API_SEGMENT[kind]}/{pk}/revisions/").json()["results"]
        reject = [r for r in revisions if r["action"] == "review.rejected"]
        assert len(reject) == 1
        assert reject[0]["after"]["review_reason"] == {"code": "duplicate", "text": "same as the group's first item"}
    decided = sum(VERIFY_TARGETS[kind][0].objects.filter(pk=pk).exclude(review_status="proposed").count()
                  for kind, pk in accepted + rejected)
    total_settled = sum(model.objects.filter(**{path: task}).exclude(review_status="proposed").count()
                        for model, path in VERIFY_TARGETS.values())
    assert decided == total_settled == 15  # exactly those fifteen, nothing else

    # j then e: the next row's edit field, focused, the caret at the end of the proposal's text
    screen.keyboard.press("j")
    screen.keyboard.press("e")
    screen.wait_for_function("() => document.activeElement.closest('.rq-edit') !== null")  # the fields come on opening
    focus = screen.evaluate("() => { const a = document.activeElement;"
                            " return {tag: a.tagName, start: a.selectionStart, end: a.selectionEnd, n: a.value.length}; }")
    assert focus["tag"] in ("TEXTAREA", "INPUT") and focus["start"] == focus["end"] == focus["n"] > 0
    row = screen.locator("[data-role=proposal].is-current")
    kind, pk = row.get_attribute("data-kind"), int(row.get_attribute("data-id"))
    original = screen.evaluate("() => document.activeElement.value")
    screen.keyboard.type(" (clarified)")
    assert "(clarified)" in row.locator(".rq-diff ins").inner_text()  # the difference, before saving
    _shot(screen, "04-edit")
    screen.keyboard.press("Control+Enter")
    screen.wait_for_function("id => document.getElementById(id).dataset.status === 'edited'", arg=row.get_attribute("id"))
    stored = VERIFY_TARGETS[kind][0].objects.get(pk=pk)
    field = "text" if hasattr(stored, "text") and stored.text.startswith(original[:20]) else "name"
    assert getattr(stored, field) == original + " (clarified)"
    assert navigations == []
