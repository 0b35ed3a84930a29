"""Issue 30, the curator's screen at 1366×768 in real Chromium: no table is wider than its box on the
dashboards, runs and exports pages (with many systems, metrics and annotator pairs), and a refused
form shows its error summary at the top, focused, each entry leading to its field.

Screenshots: test-artifacts/screenshots/screen-*.png (the viewport, as a person sees it first).
"""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import AnnotationItem, ExportJob
from tests.annotation.dashboards.builders import (agreement_setup, deepsynth_run, preferences, run_tasks,
                                                  surveylens_run)
from tests.annotation_factories import agreement_project, annotator, label_all
from tests.factories import SystemFactory
from tests.support.axe import assert_accessible
from tests.support.layout import in_viewport, wide_tables

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT = {"width": 1366, "height": 768}
LONG_SYSTEMS = ("Autosurvey-gpt-4o-2024-08-06", "Gemini Deep Research 2.5 Pro", "InteractiveSurvey (Qwen2.5-72B)",
                "Qwen-Deep-Research", "SciSage", "SurveyForge with retrieval", "SurveyX")


@pytest.fixture
def screen(browser, live_server):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def _login(page, base, username, password="pw-for-tests"):
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def _four_annotator_agreement(owner):
    """Four annotators on six judge verdicts: six Cohen's κ pairs in the per-project table."""
    users = [annotator(f"annotator-with-a-long-name-{n}") for n in range(4)]
    project = agreement_project(owner, users, labels=["correct", "omitted", "incorrect"] * 2, overlap=4,
                                name="judge check with four annotators")
    choices = ["correct", "omitted", "incorrect"]
    for n, item in enumerate(AnnotationItem.objects.filter(project=project).order_by("position", "id")):
        label_all(item, users, *({"label": choices[(n + k * (n % 2)) % 3]} for k in range(4)))
    return project


def test_no_table_is_wider_than_its_box_at_1366(screen, live_server, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    run, systems = deepsynth_run(n_tasks=6, systems=[SystemFactory(name=n) for n in LONG_SYSTEMS[:5]],
                                 name="a DeepSynth run with a long descriptive name")
    # on three of the run's tasks: the scatter's automated side is scored on the preferences' tasks only
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run)[:3])
    surveylens_run(systems=[SystemFactory(name=f"{n} (SurveyLens)") for n in LONG_SYSTEMS], name="seven systems")
    _, owner, _ = agreement_setup(n_verdicts=6)  # the curator "cur"
    four = _four_annotator_agreement(owner)
    ExportJob.objects.create(
        kind="taskset", requested_by=owner, status="done", progress_done=63, progress_total=63,
        filename="demo-deepscholar-v1-with-history-and-unreviewed-material.deepscholar.jsonl",
        file_path=str(tmp_path / "export.jsonl"), size=1_234_567, sha256="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        parameters={"task_set": 1, "format": "deepscholar"}, finished_at=timezone.now())
    base = live_server.url
    _login(screen, base, "cur")
    pages = {
        "home": "/",
        "progress": f"/annotate/{four.pk}/progress/",
        "dashboards": "/dashboards/",
        "leaderboard-deepsynth": "/dashboards/leaderboard/?protocol=deepsynth",
        "leaderboard-surveylens": "/dashboards/leaderboard/?protocol=surveylens",
        "human": "/dashboards/human/?protocol=deepsynth",
        "agreement": "/dashboards/agreement/",
        "runs": "/runs/",
        "run-detail": f"/runs/{run.pk}/",
        "exports": "/benchmark/exports/",
        "human-vs-automated": "/dashboards/charts/human-vs-automated/?metric=deepsynth:overall",
    }
    for name, path in pages.items():
        screen.goto(base + path)
        screen.wait_for_load_state("networkidle")
        screen.screenshot(path=str(_shot(f"screen-{name}")), full_page=True)
        assert wide_tables(screen) == [], name
        assert_accessible(screen, name)
    # the progress page: time per item and last activity for each of the four annotators
    screen.goto(base + pages["progress"])
    for n in range(4):
        row = screen.locator(f"#annotator-progress tr[data-user=annotator-with-a-long-name-{n}]")
        expect(row.locator("[data-stat=last-activity]")).to_contain_text("ago")
    # the scatter's labels as the browser lays them out: none covers another label or a point
    screen.goto(base + pages["human-vs-automated"])
    overlaps = screen.evaluate("""() => {
      const svg = document.querySelector("main svg");
      const boxes = [...svg.querySelectorAll("g > text")].map(t => t.getBoundingClientRect());
      const dots = [...svg.querySelectorAll("g > circle")].map(c => c.getBoundingClientRect());
      const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
      const found = [];
      boxes.forEach((a, i) => {
        boxes.slice(i + 1).forEach((b, j) => { if (hit(a, b)) found.push(`label ${i} × label ${i + 1 + j}`); });
        dots.forEach((d, j) => { if (hit(a, d)) found.push(`label ${i} × point ${j}`); });
      });
      return [boxes.length, found];
    }""")
    assert overlaps == [5, []]
    screen.goto(base + "/dashboards/leaderboard/?protocol=surveylens")
    header = screen.locator("#leaderboard thead th")
    assert header.count() == 1 + len(LONG_SYSTEMS)  # the metric column, then one per system
    assert screen.locator("#leaderboard tbody tr[data-metric]").count() == 6  # rubric_* and rams_*, 3 each
    # every number on the first screen is whole: no cell is cut by the card's edge
    card = screen.locator("#leaderboard").bounding_box()
    last = screen.locator("#leaderboard tbody tr[data-metric] td").last.bounding_box()
    assert last["x"] + last["width"] <= card["x"] + card["width"] + 1


def _shot(name):
    from tests.support.browser import SCREENSHOTS

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{name}.png"


@pytest.mark.parametrize(("path", "submit", "first_field"), [
    ("/annotate/new/", "#create-button", "name"),
    ("/runs/new/", "#start-run", "judge_config"),
    ("/benchmark/task-sets/new/", "#create-taskset", "name"),
])
def test_a_refused_form_shows_its_errors_at_the_top_focused_with_links_to_the_fields(
        screen, live_server, path, submit, first_field):
    from tests.annotation_factories import curator

    user = curator("cur")
    user.set_password("pw-for-tests")
    user.save()
    _login(screen, live_server.url, "cur")
    screen.goto(live_server.url + path)
    screen.click(submit)
    summary = screen.locator(".error-summary[role=alert]")
    expect(summary).to_be_visible()
    assert in_viewport(screen, ".error-summary"), "the summary is out of sight"
    expect(summary).to_be_focused()  # the page's script moves focus there once it has run
    links = summary.locator("a[href^='#field-']")
    assert links.count() >= 1
    targets = [link.get_attribute("href")[1:] for link in links.all()]
    assert all(screen.locator(f"#{target}").count() == 1 for target in targets)
    screen.screenshot(path=str(_shot(f"screen-refused{path.replace('/', '-').rstrip('-')}")))
    assert_accessible(screen, f"refused {path}")
    link = summary.locator(f"a[href='#field-{first_field}']")
    link.click()
    focused_in = screen.evaluate("document.activeElement.closest('[id^=field-]')?.id")
    assert focused_in == f"field-{first_field}"
    assert in_viewport(screen, f"#field-{first_field}")
