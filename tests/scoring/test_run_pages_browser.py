"""A curator starts a run in a real browser and watches it finish without reloading the page.

No worker runs here: the Celery messages the page's services send are caught, and the test
executes them the way a worker would (``scoring.tasks.execute_job`` / ``finalize_run``, with
the real offline judge) while the page polls."""

import pytest
from playwright.sync_api import expect

from scoring import tasks
from scoring.models import EvaluationRun, JudgeConfig, ScoreCard
from tests.annotation_factories import curator
from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, ReportFactory, SystemFactory, TaskFactory
from tests.support.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FACTS = (
    "Transformers replace recurrence with self-attention over all tokens.",
    "BERT is pre-trained with masked language modelling on BooksCorpus and Wikipedia.",
    "Sparse attention reduces the quadratic cost of attention to O(n log n).",
)


def deepsynth_task(key: str):
    task = TaskFactory(protocol="deepsynth", key=key, title=f"Efficient transformers ({key})")
    group = ChecklistGroupFactory(task=task, kind="general", name="Architectures", position=0)
    for position, fact in enumerate(FACTS):
        ChecklistItemFactory(group=group, position=position, text=f"The article should mention that {fact}")
    return task


def deliver(sent: list, kind: str) -> int:
    """Run the first caught message of this kind as a worker would; returns its argument."""
    index = next(i for i, (k, _) in enumerate(sent) if k == kind)
    _, argument = sent.pop(index)
    (tasks.execute_job if kind == "execute" else tasks.finalize_run)(argument)
    return argument


def test_a_curator_starts_a_run_and_watches_it_finish(page, live_server, login, screenshot, sent):
    curator("cur")
    judge = JudgeConfig.objects.create(name="offline-heuristic", backend=JudgeConfig.Backend.OFFLINE)
    JudgeConfig.objects.create(name="gpt", backend=JudgeConfig.Backend.OPENAI, model="gpt-4.1-mini")
    system = SystemFactory(name="SurveyX")
    chosen = [deepsynth_task("1"), deepsynth_task("2")]
    deepsynth_task("3")  # offered, not chosen
    ReportFactory(task=chosen[0], system=system, text="# Transformers\n\n" + " ".join(FACTS))
    ReportFactory(task=chosen[1], system=system, text="# Transformers\n\n" + FACTS[0] + " Nothing else is covered.")

    login("cur", "pw-for-tests")
    page.click("nav >> text=Runs")
    page.wait_for_selector("h1:has-text('Evaluation runs')")
    page.click("#new-run")
    page.select_option("select[name=judge_config]", str(judge.pk))
    expect(page.locator("[data-pick-count=tasks]")).to_have_text("0 of 3 chosen")
    page.fill("[data-pick-filter=tasks]", "nothing matches this")
    expect(page.locator("[data-pick=tasks] .pick-row:visible")).to_have_count(0)
    page.fill("[data-pick-filter=tasks]", "")
    for task in chosen:
        page.check(f"input[name=tasks][value='{task.pk}']")
    page.check(f"input[name=systems][value='{system.pk}']")
    expect(page.locator("[data-pick-count=tasks]")).to_have_text("2 of 3 chosen")
    assert_accessible(page, "new run form")
    page.fill("input[name=name]", "browser pilot")
    screenshot("runs-new-form")
    page.click("#start-run")
    page.wait_for_url(lambda url: "/runs/" in url and url.rstrip("/").split("/")[-1].isdigit())

    run = EvaluationRun.objects.get()
    assert (run.name, run.status, run.judge_config) == ("browser pilot", "running", judge)
    assert page.locator("#run-status").inner_text() == "Running"
    assert page.locator("#fig-done").inner_text() == "0 / 2"
    assert "heuristic" in page.locator(".run-meta .pill.heuristic").inner_text()
    page.evaluate("window.__samePage = true")  # a reload would drop this

    deliver(sent, "execute")
    page.wait_for_selector("#fig-done:has-text('1 / 2')", timeout=15_000)
    assert page.locator("#fig-pending").inner_text() == "1"
    assert page.locator("#system-cards").count() == 0
    screenshot("runs-detail-running")

    deliver(sent, "execute")
    assert [kind for kind, _ in sent] == ["finalize"]  # the job that settled the run asked for the scores
    deliver(sent, "finalize")
    page.wait_for_selector("#run-status:has-text('Finished')", timeout=15_000)
    assert page.evaluate("window.__samePage") is True
    assert page.locator("#fig-done").inner_text() == "2 / 2"
    assert page.locator("#run-live").get_attribute("hx-trigger") is None  # polling stopped

    card = ScoreCard.objects.get(run=run, report=None)
    overall = page.locator("#system-cards td[data-metric=overall]").inner_text()
    assert overall == f"{card.metrics['overall']:.1f}"
    assert page.locator("#report-cards tbody tr").count() == 2
    screenshot("runs-detail-finished")

    page.click("nav >> text=Runs")
    row = page.locator(f"#run-{run.pk}")
    assert "Finished" in row.inner_text() and "2/2" in row.inner_text() and "heuristic" in row.inner_text()
    screenshot("runs-list")
