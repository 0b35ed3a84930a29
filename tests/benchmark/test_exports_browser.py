"""A curator exports a task set from its page and downloads the file when the job is done.

The job runs in a background thread through the real task function, as a worker would
(after a short queue delay, so the page shows the job waiting, then done).
"""

import hashlib

import pytest
from playwright.sync_api import expect

from benchmark.importers.catalogue import run_import
from annotation.models import ExportJob
from benchmark.models import Task
from benchmark.services.tasksets import taskset_create
from annotation.tasks import run_export
from tests.annotation_factories import curator
from tests.support.workers import deliver_on_threads

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_thread(monkeypatch):
    threads = deliver_on_threads(monkeypatch, "annotation.tasks.run_export", run_export)
    yield threads
    for thread in threads:
        thread.join(timeout=30)


def test_a_curator_exports_a_task_set_and_downloads_it(page, live_server, login, screenshot, datasets, settings,
                                                      tmp_path, worker_thread):
    settings.VAR_DIR = tmp_path
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    task_set = taskset_create(name="DeepSynth pilot", tasks=Task.objects.filter(protocol="deepsynth"))
    user = curator("curator")
    user.set_password("pw-for-tests")
    user.save()

    login("curator", "pw-for-tests")
    page.click("nav >> text=Task sets")
    page.click("text=DeepSynth pilot")
    assert "4" in page.locator("h2", has_text="Tasks (").inner_text()
    assert "First version" in page.locator("#changelog").inner_text()
    page.select_option("select[name=format]", "deepsynth")
    page.check("input[name=include_history]")
    page.check("input[name=include_unreviewed]")  # the imported tasks are drafts nobody reviewed yet
    screenshot("exports-taskset-detail")
    page.click("#export-form button[type=submit]")

    page.wait_for_url("**/benchmark/exports/")
    job = ExportJob.objects.get()
    row = page.locator(f"#export-{job.pk}")
    assert row.get_attribute("data-status") in ("queued", "running")
    screenshot("exports-list-waiting")
    page.wait_for_selector(f"#export-{job.pk}[data-status=done]", timeout=20_000)
    screenshot("exports-list-done")
    job.refresh_from_db()
    assert job.status == "done" and job.progress_done == job.progress_total == 4
    assert row.locator("progress").get_attribute("value") == "100"
    assert row.locator("code.sha256").inner_text() == job.sha256

    with page.expect_download() as info:
        row.locator("a.download").click()
    download = info.value
    assert download.suggested_filename == "taskset-deepsynth-pilot-v1-deepsynth.zip"
    data = open(download.path(), "rb").read()
    assert hashlib.sha256(data).hexdigest() == job.sha256 and len(data) == job.size
    # The finished row no longer polls.
    assert row.get_attribute("hx-trigger") is None
    assert task_set.pk == job.parameters["task_set"]

    # Delete it: the browser asks first; dismissing keeps it, accepting removes the row and the file.
    expect(page.locator(".no-exports")).to_be_hidden()
    path = tmp_path / "exports" / job.file_path
    questions = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    row.locator("button", has_text="Delete").click()
    expect(row).to_be_visible()
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    row.locator("button", has_text="Delete").click()
    expect(row).to_have_count(0)
    expect(page.locator("#export-jobs")).to_be_hidden()  # the emptied table gives way to the "none" line
    expect(page.locator(".no-exports")).to_be_visible()
    assert questions == [f"Delete export #{job.pk} and its file?"] * 2
    assert not ExportJob.objects.filter(pk=job.pk).exists() and not path.exists()
    screenshot("exports-list-deleted")
