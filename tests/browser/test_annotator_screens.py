"""The annotator's screens on a 1366×768 laptop (issue #30), in real Chromium: what is in view on
arrival, without scrolling. Pairwise: both reports side by side with at least 300 px of their text
visible each (not covered by the decision bar), the bibliography folded, the decision bar in view.
Agreement and verify: the decision controls in view; after an agreement label the judge's verdict
appears in view and takes the focus. The guidelines open on the first item and fold after; the
pages pass axe-core's WCAG 2 A/AA rules. Screenshots (the viewport, as the annotator sees it
first) land in ``test-artifacts/screenshots/screen-*.png``.

Pairwise reports are real DeepScholar-bench system outputs (``datasets/``), long enough that
their boxes, not their text, decide what is visible.
"""

import re
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import AnnotationItem, Label, Role
from annotation.services.projects import membership_add, project_create, project_update
from core.workers import worker_heartbeat_beat
from scoring.models import Verdict
from tests.annotation_factories import ProfileFactory, deepscholar_agreement_project
from tests.factories import ChecklistGroupFactory, ReportFactory, SystemFactory, TaskFactory, UserFactory
from tests.support.axe import assert_accessible
from tests.support.browser import SCREENSHOTS

from .test_annotation_workspace import build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT = {"width": 1366, "height": 768}
PASSWORD = "pw-for-tests"
OUTPUTS = Path(__file__).resolve().parents[2] / "datasets" / "deepscholar-bench" / "system_outputs"
GUIDELINES = (
    "## How to judge\n\nRead **both reports** before choosing. Judge what the report *says*, not its length.\n\n"
    "- Coverage: the main lines of work are there.\n- Citations: each claim cites a real source."
)


@pytest.fixture
def open_as(browser, live_server):
    """A signed-in page at 1366×768 for a user; a worker's heartbeat keeps the "no worker"
    banner away, as in a running installation."""
    contexts = []

    def sign_in(username: str):
        context = browser.new_context(viewport=VIEWPORT)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(f"{live_server.url}/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        return page

    yield sign_in
    for context in contexts:
        context.close()


def go(page, url: str) -> None:
    worker_heartbeat_beat(hostname="worker@test", pid=1, started_at=timezone.now())
    page.goto(url)


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"screen-{name}.png"))


def box(page, selector: str) -> dict:
    found = page.locator(selector)
    expect(found).to_have_count(1)
    rect = found.bounding_box()
    assert rect is not None, f"{selector} is not displayed"
    return rect


def in_view(page, selector: str) -> dict:
    """The element's box lies wholly inside the viewport (no scrolling needed to reach it)."""
    rect = box(page, selector)
    height = page.viewport_size["height"]
    assert rect["y"] >= 0 and rect["y"] + rect["height"] <= height + 0.5, (selector, rect)
    assert rect["x"] >= 0 and rect["x"] + rect["width"] <= page.viewport_size["width"] + 0.5, (selector, rect)
    return rect


def visible_height(page, selector: str, *, covered_by: str) -> float:
    """How many pixels of the element are on screen and not under ``covered_by`` (a bar drawn
    over the bottom of the page)."""
    rect, cover = box(page, selector), box(page, covered_by)
    bottom = min(rect["y"] + rect["height"], page.viewport_size["height"])
    if cover["y"] < bottom and cover["x"] < rect["x"] + rect["width"] and rect["x"] < cover["x"] + cover["width"]:
        bottom = min(bottom, cover["y"])
    return bottom - max(rect["y"], 0)


def _users():
    curator = ProfileFactory(user=UserFactory(username="curator"), role=Role.CURATOR).user
    annotator = ProfileFactory(user=UserFactory(username="annotator1")).user
    return curator, annotator


def real_pairwise(curator, annotator):
    task = TaskFactory(protocol="deepscholar", key="deepscholar-0", title="Related work for TaxAgent")
    for name, path in (("storm", "storm/0/storm_gen_article_polished.md"),
                       ("search-ai", "search_ai_gpt_4.1/0/answer.md"),
                       ("deepscholar-base", "deepscholar-base/0/intro.md")):
        ReportFactory(task=task, system=SystemFactory(name=name), text=(OUTPUTS / path).read_text(encoding="utf-8"))
    project = project_create(name="Related work, head to head", kind="pairwise", created_by=curator, tasks=[task],
                             guidelines=GUIDELINES)
    membership_add(project=project, user=annotator, role=Role.ANNOTATOR, actor=curator)
    return project


def test_pairwise_both_reports_and_the_decision_in_view_on_arrival(open_as, live_server):
    curator, annotator = _users()
    project = real_pairwise(curator, annotator)
    page = open_as("annotator1")
    go(page, f"{live_server.url}/annotate/{project.pk}/")

    # The first item: the guidelines are open over it, rendered markdown; g folds them.
    guidelines = page.locator("[data-role=guidelines]")
    expect(guidelines).to_have_attribute("open", "")
    expect(guidelines.locator("strong").first).to_have_text("both reports")
    in_view(page, "[data-role=guidelines] .ws-guidelines-panel")
    shot(page, "pairwise-guidelines-open")
    assert_accessible(page, "pairwise workspace, guidelines open")
    page.keyboard.press("g")
    expect(guidelines).not_to_have_attribute("open", "")

    for side in ("left", "right"):
        seen = visible_height(page, f"[data-role=report-{side}]", covered_by="[data-role=decision]")
        assert seen >= 300, f"report {side}: {seen:.0f} px of text visible"
    left, right = box(page, "[data-role=report-left]"), box(page, "[data-role=report-right]")
    assert abs(left["y"] - right["y"]) < 1 and left["x"] + left["width"] <= right["x"]  # side by side
    decision = in_view(page, "[data-role=decision]")
    shot(page, "pairwise-arrival")
    assert decision["height"] <= 130, decision  # a compact bar
    expect(page.locator("[data-role=decision] button[type=submit][data-submit]")).to_be_in_viewport()
    for details in page.locator(".ws-pair details.ws-bib").all():
        expect(details).not_to_have_attribute("open", "")  # bibliographies folded
    shot(page, "pairwise-arrival")
    assert_accessible(page, "pairwise workspace")

    # Each report scrolls on its own: scrolling the left one moves neither the right one nor the page.
    left_body = page.locator("[data-role=report-left]")
    left_body.hover()
    page.mouse.wheel(0, 600)
    page.wait_for_function("() => document.querySelector('[data-role=report-left]').scrollTop > 0")
    assert page.evaluate("() => document.querySelector('[data-role=report-right]').scrollTop") == 0
    assert page.evaluate("() => window.scrollY") == 0

    # The second item, after a label by keyboard: the guidelines stay folded, the layout holds.
    first = page.locator(".ws-item").get_attribute("data-item")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    expect(page.locator(f'.ws-item[data-item="{first}"]')).to_have_count(0)
    expect(page.locator(".ws-flash")).to_contain_text("Saved your label")
    expect(guidelines).not_to_have_attribute("open", "")
    for side in ("left", "right"):
        assert visible_height(page, f"[data-role=report-{side}]", covered_by="[data-role=decision]") >= 300
    in_view(page, "[data-role=decision]")
    shot(page, "pairwise-second-item")
    assert Label.objects.get(annotator=annotator).guidelines_version == 1

    # A reload: the guidelines were seen, they stay folded; the top menu has no Runs or Dashboards
    # (they answer 403 while the annotator labels blind).
    go(page, f"{live_server.url}/annotate/{project.pk}/")
    expect(page.locator("[data-role=guidelines]")).not_to_have_attribute("open", "")
    expect(page.locator(".topbar nav")).not_to_contain_text("Dashboards")
    expect(page.locator(".topbar nav")).not_to_contain_text("Runs")

    # Skip the shown item, then find both in "my work"; the skipped one is offered again on request.
    page.keyboard.press("s")
    expect(page.locator(".ws-flash")).to_contain_text("Skipped item")
    page.click("text=My work")
    expect(page.locator("[data-testid=my-labels-list] tbody tr")).to_have_count(1)
    expect(page.locator("[data-testid=my-labels-list]")).to_contain_text("v1")
    expect(page.locator("[data-testid=my-skips] tbody tr")).to_have_count(1)
    shot(page, "my-work")
    assert_accessible(page, "my work")
    page.click("#revisit-skipped button")
    expect(page.locator(".ws-flash")).to_contain_text("1 skipped item offered again")


def test_verify_decision_in_view_on_arrival_and_general_group_label_accessible(open_as, live_server):
    world = build_world()
    verify = world["verify"]
    verify.tasks.get().survey.__class__.objects.filter(pk=verify.tasks.get().survey_id).update(abstract=(
        "Radar is robust in adverse weather and darkness, which makes it a\nvaluable sensor for "
        "autonomous driving.\n\nThis survey reviews radar data representations\nfor deep learning."
    ))
    project_update(project=verify, actor=world["curator"], guidelines=GUIDELINES)
    # a group rejected earlier: its row in "everything proposed" is struck through, its labels legible
    ChecklistGroupFactory(task=verify.tasks.get(), name="Old general group", review_status="rejected")
    page = open_as("annotator1")
    go(page, f"{live_server.url}/annotate/{verify.pk}/")
    page.keyboard.press("Escape")  # folds the guidelines the first item opens
    expect(page.locator("[data-role=guidelines]")).not_to_have_attribute("open", "")
    seen = 0
    while True:
        item = page.locator(".ws-item").get_attribute("data-item")
        in_view(page, "[data-role=decision]")
        expect(page.locator("[data-role=decision] [data-submit]")).to_be_in_viewport(ratio=1)
        shot(page, f"verify-{seen + 1}")
        assert_accessible(page, f"verify workspace, item {seen + 1}")
        material = page.locator(".ws-task-items details.ws-material-lazy")
        if material.count():  # an htmx panel loads it when opened
            material.locator("summary").click()
            expect(page.locator(".ws-task-items .ws-ti").first).to_be_visible()
        page.locator(".ws-task-items details.ws-ti:has(.status.rejected)").first.scroll_into_view_if_needed()
        assert_accessible(page, f"verify workspace, item {seen + 1}, every proposal of the task shown")
        page.evaluate("() => window.scrollTo(0, 0)")
        page.locator(".ws-item").focus()  # away from the summary clicked (Enter there would fold it)
        if seen == 0:  # the abstract's hard line ends are reflowed into one paragraph
            abstract = page.locator("[data-testid=survey-abstract]")
            expect(abstract.locator("p")).to_have_count(2)
            assert "which makes it a valuable sensor for autonomous driving." in abstract.locator("p").first.text_content()
        seen += 1
        if seen == 3:
            break
        page.keyboard.press("a")
        page.keyboard.press("Enter")
        expect(page.locator(f'.ws-item[data-item="{item}"]')).to_have_count(0)


def test_agreement_decision_in_view_and_the_reveal_in_view_with_focus(open_as, live_server):
    curator, annotator = _users()
    project = deepscholar_agreement_project(curator, [annotator], guidelines=GUIDELINES)
    page = open_as("annotator1")
    go(page, f"{live_server.url}/annotate/{project.pk}/")
    page.keyboard.press("g")
    for n in range(1, 4):
        item_id = page.locator(".ws-item").get_attribute("data-item")
        verdict = Verdict.objects.get(pk=AnnotationItem.objects.get(pk=item_id).target_id)
        expect(page.locator("[data-testid=judge-verdict]")).to_have_count(0)
        in_view(page, "[data-role=decision]")
        for part in page.locator(".ws-judged-text").all():  # rendered markdown, no raw **
            assert "**" not in part.inner_text()
        shot(page, f"agreement-{n}-before")
        assert_accessible(page, f"agreement item {n}, before labelling")
        page.locator("[data-role=decision] input[name=label]").first.focus()
        page.keyboard.press("Escape")
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        reveal = page.locator("[data-testid=judge-verdict]")
        expect(reveal).to_be_visible()
        expect(reveal).to_be_focused()
        in_view(page, "[data-testid=judge-verdict] .ws-proposal-head")
        expect(page.locator(".ws-flash")).to_be_in_viewport()
        assert verdict.label in reveal.inner_text().lower()
        shot(page, f"agreement-{n}-revealed")
        assert_accessible(page, f"agreement item {n}, revealed")
        page.keyboard.press("Enter")  # next item
        expect(page.locator(f'.ws-item[data-item="{item_id}"]')).to_have_count(0)
        if page.locator(".ws-done").count():
            break


def test_a_hold_that_runs_out_while_the_item_is_shown_says_so(open_as, live_server):
    curator, annotator = _users()
    project = real_pairwise(curator, annotator)
    page = open_as("annotator1")
    page.clock.install()  # the page's clock, so the hold (15 minutes) can run out in the test
    go(page, f"{live_server.url}/annotate/{project.pk}/")
    hold = page.locator(".ws-item-head .ws-hold")
    expect(hold).to_contain_text("reserved for you until")
    page.clock.fast_forward("16:00")
    expect(hold).to_have_class(re.compile("ws-hold-expired"))
    expect(hold).to_contain_text("your hold ran out at")
    shot(page, "pairwise-hold-expired")
    assert_accessible(page, "pairwise workspace, hold ran out")
