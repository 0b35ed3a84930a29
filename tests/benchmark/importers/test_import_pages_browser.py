"""The import history and a running job's progress, in Chromium."""

import pytest

from benchmark.models import ImportJob
from benchmark.services.imports import ProgressFile, imports_dir
from tests.annotation_factories import curator

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_history_links_to_a_running_job_with_its_progress(page, live_server, login, screenshot, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    user = curator("curator")
    user.set_password("pw-for-tests")
    user.save()
    ImportJob.objects.create(format="deepscholar", original_name="deepscholar-bench.zip", requested_by=user,
                             status=ImportJob.Status.DONE, counts={"task": {"created": 63}, "report": {"created": 12}})
    ImportJob.objects.create(format="native", original_name="tasks.jsonl", requested_by=user,
                             status=ImportJob.Status.FAILED,
                             errors=[{"file": "tasks.jsonl", "line": 3, "field": "key", "message": "missing"}])
    running = ImportJob.objects.create(format="surveylens", original_name="SurveyLens.zip", requested_by=user,
                                       status=ImportJob.Status.RUNNING, upload_dir="job")
    (imports_dir() / "job").mkdir()
    ProgressFile(imports_dir() / "job")(407, 954)

    login("curator", "pw-for-tests")
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/benchmark/imports/")
    rows = page.locator("#import-history tbody tr")
    assert rows.count() == 3
    assert "SurveyLens.zip" in rows.nth(0).inner_text() and "Running" in rows.nth(0).inner_text()
    assert "task 63 created" in rows.nth(2).inner_text()
    screenshot("imports-history")

    page.click("text=SurveyLens.zip")
    page.wait_for_selector("#import-progress")
    assert page.locator("#import-progress").get_attribute("value") == "407"
    assert "42% — 407 of 954 files" in page.locator("#import-status").inner_text()
    screenshot("imports-job-progress")

    ProgressFile(imports_dir() / "job")(954, 954)
    page.wait_for_selector('#import-progress[value="954"]')  # htmx polls every second
    running.status = ImportJob.Status.DONE
    running.upload_dir = ""
    running.counts = {"task": {"created": 103}}
    running.save()
    page.wait_for_selector("#import-counts")
    screenshot("imports-job-done")
