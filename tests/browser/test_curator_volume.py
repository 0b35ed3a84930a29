"""Issue 38 in real Chromium at 1366×768: the item browser (a curator filters a blind agreement
project's open items, an annotator is refused), the progress page's counts following the study
without a reload, the agreement workspace with what each label means beside the controls, and the
dashboard pages with their scope picker — axe-core (WCAG 2 A/AA) clean on each.

Screenshots: test-artifacts/screenshots/curator-volume-*.png (the viewport, as the user sees it).
"""

import pytest
from playwright.sync_api import expect

from annotation.models import AnnotationItem
from tests.annotation.dashboards.builders import agreement_setup, deepsynth_run, preferences, run_tasks
from tests.annotation_factories import agreement_project, annotator, label_all
from tests.support.axe import assert_accessible
from tests.support.browser import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT = {"width": 1366, "height": 768}


@pytest.fixture
def screen(browser, live_server):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def _login(page, base, username, password="pw-for-tests"):
    page.context.clear_cookies()
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def _shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"curator-volume-{name}.png"))


def test_item_browser_progress_label_help_and_dashboards(screen, live_server):
    project, owner, users = agreement_setup(n_verdicts=6)  # blind: curator "cur", annotators lab-1, lab-2
    fresh = agreement_project(owner, [annotator("lab-3")], labels=["correct", "omitted", "incorrect"], name="fresh")
    run, systems = deepsynth_run(n_tasks=3)
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run), source="")
    base = live_server.url

    _login(screen, base, "cur")
    screen.goto(f"{base}/annotate/{fresh.pk}/items/?status=open")
    rows = screen.locator("[data-role=item-row]")
    expect(rows.first).to_be_visible()
    assert all(status == "open" for status in
               (rows.nth(n).get_attribute("data-status") for n in range(rows.count())))
    assert "hidden while open" in screen.locator("#items").inner_text()
    _shot(screen, "01-items-open")
    assert_accessible(screen, "item browser")
    screen.goto(f"{base}/annotate/{project.pk}/items/?needs_adjudication=1")
    from annotation.selectors.workspace import adjudication_queue
    waiting = {str(row["item_id"]) for row in adjudication_queue(project=project)}  # item 1 (both overrule the judge), item 3
    shown = {screen.locator("[data-role=item-row]").nth(n).get_attribute("data-id")
             for n in range(screen.locator("[data-role=item-row]").count())}
    assert shown == waiting and len(shown) == 2
    assert_accessible(screen, "item browser, needs adjudication")

    # the progress page's counts follow a label given meanwhile, without a reload (its 20 s timer)
    lab3 = fresh.memberships.get(role="annotator").user
    screen.goto(f"{base}/annotate/{fresh.pk}/progress/")
    assert_accessible(screen, "progress")
    before = screen.locator("#progress-stats").inner_text()
    navigations = []
    screen.on("framenavigated", lambda frame: navigations.append(frame.url))
    label_all(AnnotationItem.objects.filter(project=fresh).order_by("position", "id").first(), [lab3],
              {"label": "correct"})
    screen.wait_for_function("before => document.querySelector('#progress-stats').innerText !== before",
                             arg=before, timeout=30_000)
    assert navigations == []

    for path, name in (("/dashboards/leaderboard/?protocol=deepsynth", "leaderboard"), ("/dashboards/human/", "human"),
                       ("/dashboards/agreement/", "agreement"), ("/dashboards/charts/human-vs-automated/", "vs"),
                       ("/dashboards/look-next/", "look-next"), ("/dashboards/statistics/", "statistics")):
        screen.goto(base + path)
        if name != "statistics":
            expect(screen.locator("[data-role=scope-picker]")).to_be_visible()
        assert screen.locator("#chart-empty").count() == 0, name
        _shot(screen, f"02-{name}")
        assert_accessible(screen, name)

    # the annotator: the item browser is refused; the workspace explains the labels
    _login(screen, base, "lab-3")
    response = screen.goto(f"{base}/annotate/{fresh.pk}/items/?status=open")
    assert response.status == 403
    screen.goto(f"{base}/annotate/{fresh.pk}/")
    help_block = screen.locator("[data-role=label-help]")
    expect(help_block).to_be_visible()
    assert "not about whether the judge was right" in help_block.inner_text()
    _shot(screen, "03-workspace-label-help")
    assert_accessible(screen, "agreement workspace")
