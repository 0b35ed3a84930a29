"""A curator's study set-up in real Chromium: import the DeepSynth example, make and freeze a task
set, compare versions, configure a judge and test it. Screenshots in test-artifacts/screenshots/,
and axe-core finds no WCAG 2 A/AA violation on any page of it.

The import job runs in a background thread through the real task function, as a worker would.
"""

import pytest
from playwright.sync_api import expect

from benchmark.models import ImportJob, Task, TaskSet
from benchmark.tasks import run_import_job
from scoring.models import JudgeConfig
from tests.annotation_factories import curator
from tests.support.axe import assert_accessible
from tests.support.workers import deliver_on_threads

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def import_worker(monkeypatch):
    threads = deliver_on_threads(monkeypatch, "benchmark.tasks.run_import_job", run_import_job)
    yield threads
    for thread in threads:
        thread.join(timeout=60)


def test_a_curator_imports_freezes_compares_and_configures_a_judge(page, live_server, login, screenshot, datasets,
                                                                  settings, tmp_path, import_worker):
    settings.VAR_DIR = tmp_path
    user = curator("curator")
    user.set_password("pw-for-tests")
    user.save()
    login("curator", "pw-for-tests")

    page.click("nav >> text=Tasks")
    page.click("#import-data")
    assert_accessible(page, "import form")
    page.select_option("select[name=format]", "deepsynth")
    page.set_input_files("input[name=file]", str(datasets / "deepsynth-eval" / "example_gen_result.jsonl"))
    page.click("#import-button")
    expect(page.locator("#import-state")).to_have_text("Queued")
    expect(page.locator("#import-state")).to_have_text("Done", timeout=60_000)
    created = Task.objects.filter(protocol="deepsynth").count()
    assert created > 0 and ImportJob.objects.get().counts["task"]["created"] == created
    expect(page.locator("#import-counts tbody tr", has_text="task").first).to_contain_text(str(created))
    screenshot("study-import-done")
    assert_accessible(page, "import done")

    page.click("nav >> text=Task sets")
    page.click("#new-taskset")
    page.select_option("#task-filter select[name=protocol]", "deepsynth")
    page.click("#task-filter button")
    expect(page.locator("#task-count")).to_contain_text(f"{created} task")
    page.fill("input[name=name]", "DeepSynth pilot")
    assert_accessible(page, "new task set")
    page.click("#create-taskset")
    expect(page.locator("h1")).to_contain_text("DeepSynth pilot")
    page.check("input[name=allow_uncurated]")
    page.click("#freeze-button")
    expect(page.locator("#taskset-facts")).to_contain_text("frozen")
    first = TaskSet.objects.get(name="DeepSynth pilot", version=1)
    assert first.is_frozen and first.tasks.count() == created
    page.click("#new-version-button")
    expect(page.locator("h1")).to_contain_text("v2")
    page.select_option("#against", str(first.pk))
    page.click("#compare-form button")
    expect(page.locator("#changelog")).to_contain_text("Changes from v1 to v2")
    expect(page.locator("#changelog")).to_contain_text(f"{created} unchanged")
    screenshot("study-taskset-compare")
    assert_accessible(page, "task set v2 compared with v1")

    page.click("nav >> text=Runs")
    page.click("#judges-link")
    page.click("#new-judge")
    page.fill("input[name=name]", "offline-check")
    page.select_option("select[name=backend]", "offline")
    assert_accessible(page, "new judge configuration")
    page.click("#save-judge")
    expect(page.locator("h1")).to_contain_text("offline-check")
    page.click("#test-connection")
    expect(page.locator("#judge-test-answer")).to_contain_text("calls no endpoint")
    assert JudgeConfig.objects.get(name="offline-check").backend == "offline"
    screenshot("study-judge-tested")
    assert_accessible(page, "judge configuration tested")
    page.click("text=judges")
    expect(page.locator("#judges")).to_contain_text("offline-check")
    assert_accessible(page, "judge list")
