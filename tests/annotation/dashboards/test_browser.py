"""A curator looks at the dashboards in a real browser (Debian chromium via Playwright)."""

import pytest

from tests.annotation.dashboards.builders import agreement_setup, deepsynth_run, preferences

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_curator_reads_leaderboard_agreement_and_chart(page, live_server, login, screenshot, tmp_path):
    run, systems = deepsynth_run(n_tasks=6)
    preferences(systems=systems, n_tasks=4, protocol="deepsynth")  # the leaderboard shows its own protocol's ranking
    agreement_setup(n_verdicts=6)  # creates the curator "cur"
    login("cur", "pw-for-tests")

    page.goto(f"{live_server.url}/dashboards/leaderboard/?protocol=deepsynth")
    table = page.locator("#leaderboard")
    assert table.is_visible()
    # metrics as rows (the protocol's headline metrics in order, then the counts), systems as columns
    assert [table.locator(f"tbody tr[data-metric={key}] th").inner_text() for key in (
        "overall", "general", "constraint", "precision")] == ["Overall", "General", "Constraint", "Precision"]
    assert table.locator("tbody tr[data-metric]").count() == 4
    assert table.locator("thead th.db-system").count() == 3
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


def test_curator_reads_heatmap_then_sends_flagged_items_to_people(page, live_server, login, screenshot):
    from annotation.models import AnnotationItem, AnnotationProject
    from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, curator
    from tests.annotation.dashboards.builders import surveylens_run
    from tests.factories import ReportFactory, TaskFactory

    surveylens_run(tasks_per_discipline=2, disciplines=("Biology", "Environmental Science", "Physics", "Medicine"))
    judge_a, judge_b = JudgeConfigFactory(name="judge A"), JudgeConfigFactory(name="judge B")
    report = ReportFactory(task=TaskFactory(protocol="deepsynth", key="flagged"))
    for target in range(6):
        VerdictFactory(report=report, judge_config=judge_a, step="deepsynth.checklist_group", target_kind="item",
                       target_id=target, label="correct", confidence=0.2 + 0.1 * target)
        VerdictFactory(report=report, judge_config=judge_b, step="deepsynth.checklist_group", target_kind="item",
                       target_id=target, label="incorrect" if target % 2 else "correct", confidence=0.9)
    curator("lead")
    login("lead", "pw-for-tests")

    page.goto(f"{live_server.url}/dashboards/")
    page.click("#dashboard-pages >> text=Discipline × system heatmap")
    svg = page.locator("svg#chart-heatmap")
    svg.wait_for()
    assert svg.get_attribute("role") == "img"
    assert svg.locator("g.cell").count() == 4 * 3
    assert svg.locator("g.cell text").first.text_content().count(".") == 1  # the value is printed in the cell
    assert page.locator("select[name=metric] option[selected]").inner_text() == "Rubric overall"
    screenshot("dashboards-heatmap")

    page.click("nav.db-tabs >> text=Look next")
    rows = page.locator("#look-next tbody tr")
    rows.first.wait_for()
    assert rows.count() == 5  # target 4: the judges agree, and A's confidence 0.6 is not below 0.6
    assert "judges disagree" in rows.first.inner_text()
    screenshot("dashboards-look-next")
    page.fill("input[name=name]", "Second opinions")
    page.click("#create-project")
    page.wait_for_url(lambda url: "/annotate/" in url)
    project = AnnotationProject.objects.get(name="Second opinions")
    assert page.url.endswith(f"/annotate/{project.pk}/progress/")
    assert "Second opinions" in page.locator("h1").inner_text()
    assert AnnotationItem.objects.filter(project=project).count() == 5
    screenshot("dashboards-look-next-project")
