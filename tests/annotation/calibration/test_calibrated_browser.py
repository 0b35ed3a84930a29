"""The "Calibrated scores" card and the planner in a real browser (Debian's chromium, 1366×768);
the screenshots land in test-artifacts/screenshots/."""

import pytest
from playwright.sync_api import expect

from annotation.models import Role
from annotation.services.projects import membership_add
from tests.annotation.calibration.test_calibrated_api import _judged, _label_sample, _project
from tests.annotation_factories import annotator, curator
from tests.support.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_curator_reads_the_card_and_plans_more_labels(page, live_server, login, screenshot):
    owner = curator("cur")
    judge, task, _, run = _judged()
    project = _project(owner, judge, task, size=40, name="Calibrate the offline judge")
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    _label_sample(project, expert)
    page.set_viewport_size({"width": 1366, "height": 768})
    login("cur", "pw-for-tests")
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    card = page.locator("#calibrated-scores")
    expect(card).to_be_visible()
    expect(card.locator("#calibrated-meaning")).to_contain_text("prediction-powered inference")
    expect(card.locator("h3[data-metric=item_reward]")).to_be_visible()
    expect(card.locator("table.calibrated").first.locator("tbody tr")).to_have_count(2)
    card.scroll_into_view_if_needed()
    screenshot("calibrated-scores-run-page")
    assert_accessible(page, "the run page with its Calibrated scores card")
    page.goto(f"{live_server.url}/dashboards/leaderboard/?protocol=deepsynth")
    expect(page.locator("#calibrated-scores")).to_be_visible()
    expect(page.locator("#calibrated-run")).to_contain_text("Calibrated scores of")
    page.locator("#calibrated-scores").scroll_into_view_if_needed()
    screenshot("calibrated-scores-leaderboard")
    page.goto(f"{live_server.url}/annotate/{project.pk}/progress/")
    expect(page.locator("#sampling-design")).to_contain_text("uniform random sample")
    # A width the planner says more labels reach: which sample the project drew depends on its id,
    # so today's widths, and the widths this population can still reach, differ from run to run.
    api = f"{live_server.url}/api/runs/{run.pk}/calibrated/?project={project.pk}&metric=item_reward"
    body = page.request.get(api).json()
    entry = next(m for m in body["metrics"] if m["metric"] == "item_reward")
    narrowest = min(row["ppi"]["high"] - row["ppi"]["low"] for row in entry["systems"])
    width = next(w for w in (round(narrowest * f, 4) for f in (0.99, 0.97, 0.94, 0.9, 0.85))
                 if any(row["more"] for row in page.request.get(f"{api}&width={w}").json()["plan"]["systems"]))
    page.select_option("select[name=plan_metric]", "item_reward")
    page.fill("input[name=plan_width]", str(width))
    page.click("#planner button[type=submit]")
    expect(page.locator("#planner-answer")).to_contain_text("more labels")
    page.locator("#planner").scroll_into_view_if_needed()
    screenshot("calibrated-planner")
