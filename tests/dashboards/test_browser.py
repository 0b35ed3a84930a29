"""A curator looks at the dashboards in a real browser (Debian chromium via Playwright)."""

import pytest

from tests.dashboards.builders import agreement_setup, deepsynth_run, preferences

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_curator_reads_leaderboard_agreement_and_chart(page, live_server, login, screenshot, tmp_path):
    run, systems = deepsynth_run(n_tasks=6)
    preferences(systems=systems, n_tasks=4)
    agreement_setup(n_verdicts=6)  # creates the curator "cur"
    login("cur", "pw-for-tests")

    page.goto(f"{live_server.url}/dashboards/leaderboard/?protocol=deepsynth")
    table = page.locator("#leaderboard")
    assert table.is_visible()
    assert table.locator("thead").inner_text().split("\t")[2:6] == ["Overall", "General", "Constraint", "Precision"]
    assert table.locator("tbody tr").count() == 3
    assert page.locator("#leaderboard .db-sig").count() >= 1
    assert page.locator("#human-side tbody tr").count() == 3
    shot = screenshot("dashboards-leaderboard")
    assert shot.stat().st_size > 20_000

    with page.expect_download() as info:
        page.click("#leaderboard-csv")
    download = info.value
    target = tmp_path / download.suggested_filename
    download.save_as(target)
    assert download.suggested_filename == "leaderboard-deepsynth.csv"
    lines = target.read_text().splitlines()
    assert lines[0].startswith("system,metric,mean,ci95_low,ci95_high") and len(lines) == 1 + 3 * 4

    page.click("nav.db-tabs >> text=Agreement")
    page.wait_for_selector("#judge-agreement")
    assert page.locator("#judge-agreement tbody tr").count() == 1
    assert page.locator(".db-confusion").is_visible()
    assert page.locator("#iaa").inner_text().count("judge check") == 1
    screenshot("dashboards-agreement")

    page.click("nav.db-tabs >> text=Verdict chart")
    svg = page.locator("svg#chart-verdicts")
    svg.wait_for()
    assert svg.locator("rect title").count() >= 9
    assert svg.get_attribute("role") == "img"
    assert "correct:" in svg.locator("rect title").first.text_content()
    screenshot("dashboards-verdict-chart")

    page.click("nav.db-tabs >> text=Human ranking")
    page.wait_for_selector("#human-ranking")
    screenshot("dashboards-human")
