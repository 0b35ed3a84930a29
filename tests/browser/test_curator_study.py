"""A curator's study set-up in real Chromium at 1366×768: import the DeepSynth example, read a
task's curation status and review its proposals alone (accept, edit, reject) until it is curated,
make a task set and freeze it as a pilot (its other tasks are still in review), compare versions,
configure a judge and test it. Screenshots in test-artifacts/screenshots/, and axe-core finds no
WCAG 2 A/AA violation on any page of it.

The import job runs in a background thread through the real task function, as a worker would.
"""

import pytest
from playwright.sync_api import expect

from annotation.services.solo_review import proposal_review_solo
from benchmark.models import ChecklistItem, ImportJob, Task, TaskSet
from core.models import AuditLog
from benchmark.tasks import run_import_job
from scoring.models import JudgeConfig
from tests.annotation_factories import curator
from tests.support.axe import assert_accessible
from tests.support.browser import SCREENSHOTS
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
    page.set_viewport_size({"width": 1366, "height": 768})
    login("curator", "pw-for-tests")
    expect(page.locator("#study-steps li").first).to_contain_text("Import tasks and reports")  # home: the steps

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

    # --- a task's curation, reviewed alone -------------------------------------------------------
    task = Task.objects.filter(protocol="deepsynth").order_by("key").first()
    page.goto(f"{live_server.url}/benchmark/tasks/{task.pk}/")
    blockers = page.locator("#curation-blockers")
    expect(blockers).to_contain_text("are not yet accepted, edited or rejected")
    expect(page.locator("#survey-title")).not_to_contain_text("arXiv:")  # the topic once, not the id twice
    page.screenshot(path=str(SCREENSHOTS / "study-task-curation-viewport.png"))  # as it first shows
    assert_accessible(page, "task page with its curation card")
    rows = page.locator("#solo-review > li")
    first, second, third = (rows.nth(i).get_attribute("id") for i in range(3))
    page.click(f"#{first} button[value=accept]")
    expect(page.locator(".messages")).to_contain_text("accepted")
    page.click(f"#{second} summary")
    editable = page.locator(f"#{second} textarea").first
    editable.fill("Please write a survey of semantic visual SLAM, from object detection to semantic maps.")
    page.click(f"#{second} button[value=edit]")
    expect(page.locator(".messages")).to_contain_text("edited")
    page.click(f"#{third} button[value=reject]")
    expect(page.locator(".messages")).to_contain_text("rejected")
    assert list(AuditLog.objects.filter(action__startswith="review.").order_by("pk").values_list(
        "action", flat=True)) == ["review.accepted", "review.edited", "review.rejected"]
    # the rest through the same service, all but one: the last decision in the browser curates the task
    open_items = list(ChecklistItem.objects.filter(group__task=task, review_status="proposed").order_by("pk"))
    from annotation.models import VERIFY_TARGETS

    for kind, (model, path) in VERIFY_TARGETS.items():
        for row in model.objects.filter(**{path: task}, review_status="proposed").order_by("pk"):
            if not (kind == "checklist_item" and row.pk == open_items[-1].pk):
                proposal_review_solo(kind=kind, pk=row.pk, decision="accept", expected_version=row.version,
                                     actor=user)
    page.reload()
    expect(page.locator("#curation-blockers")).to_contain_text("1 of ")
    page.click("#solo-review > li >> nth=0 >> button[value=accept]")
    expect(page.locator(".messages")).to_contain_text("the task is now curated")
    expect(page.locator("#curation-status")).to_contain_text("Curated")
    task.refresh_from_db()
    assert task.status == Task.Status.CURATED
    screenshot("study-task-curated")
    assert_accessible(page, "curated task")

    page.click("nav >> text=Task sets")
    page.click("#new-taskset")
    page.select_option("#task-filter select[name=protocol]", "deepsynth")
    page.click("#task-filter button")
    expect(page.locator("#task-count")).to_contain_text(f"{created} task")
    page.fill("input[name=name]", "DeepSynth pilot")
    assert_accessible(page, "new task set")
    page.click("#create-taskset")
    expect(page.locator("h1")).to_contain_text("DeepSynth pilot")
    # the other tasks are still in review: a final freeze is not offered, a pilot one is, with what it means
    expect(page.locator("#freeze-readiness")).to_contain_text(f"{created - 1} of {created}")
    expect(page.locator("#freeze-button")).to_have_count(0)
    expect(page.locator("#history-note")).to_contain_text("export with history right after freezing")
    screenshot("study-taskset-before-freeze")
    assert_accessible(page, "task set before freezing")
    page.click("#freeze-pilot-button")
    expect(page.locator("#taskset-facts")).to_contain_text("frozen")
    expect(page.locator("#pilot-mark")).to_have_text("pilot")
    expect(page.locator(".messages")).to_contain_text("frozen as a pilot version")
    expect(page.locator("#history-note")).to_contain_text("With history: available")
    screenshot("study-taskset-pilot")
    assert_accessible(page, "pilot task set")
    first = TaskSet.objects.get(name="DeepSynth pilot", version=1)
    assert first.is_frozen and first.pilot and first.tasks.count() == created
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
