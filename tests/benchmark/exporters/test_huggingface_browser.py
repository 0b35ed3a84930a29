"""A curator exports a frozen task set as a Hugging Face dataset from its page, with its labels,
downloads the zip and loads it with ``datasets`` (the job runs in a thread through the real
task function, as a worker would)."""

import io
import zipfile

import pytest

from annotation.models import AnnotationItem, ExportJob
from annotation.tasks import run_export
from benchmark.importers.catalogue import run_import
from benchmark.models import Task
from benchmark.services.tasksets import taskset_create, taskset_freeze
from tests.annotation_factories import annotator, curator, label_all, verify_project
from tests.support.workers import deliver_on_threads

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_thread(monkeypatch):
    threads = deliver_on_threads(monkeypatch, "annotation.tasks.run_export", run_export)
    yield threads
    for thread in threads:
        thread.join(timeout=60)


def test_a_curator_exports_a_frozen_set_as_a_dataset_with_labels(page, live_server, login, screenshot, datasets,
                                                                 settings, tmp_path, worker_thread, load_dataset):
    settings.VAR_DIR = tmp_path / "var"
    run_import("deepsynth", datasets / "deepsynth-eval" / "example_gen_result.jsonl")
    user = curator("curator")
    user.set_password("pw-for-tests")
    user.save()
    tasks = Task.objects.filter(protocol="deepsynth").order_by("key")
    ann1 = annotator("ann1")
    project = verify_project(user, [ann1], tasks=[tasks[0]], name="check DeepSynth")
    label_all(AnnotationItem.objects.filter(project=project).order_by("position").first(), [ann1],
              {"decision": "accept"})
    task_set = taskset_freeze(task_set=taskset_create(name="DeepSynth v1", tasks=tasks), allow_uncurated=True)

    login("curator", "pw-for-tests")
    page.goto(f"{live_server.url}/benchmark/task-sets/{task_set.pk}/")
    page.select_option("select[name=format]", "huggingface")
    page.check("input[name=include_labels]")
    screenshot("exports-taskset-huggingface")
    page.click("#export-form button[type=submit]")
    page.wait_for_url("**/benchmark/exports/")
    job = ExportJob.objects.get()
    page.wait_for_selector(f"#export-{job.pk}[data-status=done]", timeout=60_000)
    screenshot("exports-list-huggingface-done")
    with page.expect_download() as info:
        page.locator(f"#export-{job.pk} a.download").click()
    download = info.value
    assert download.suggested_filename == "taskset-deepsynth-v1-v1-huggingface-labels.zip"
    folder = tmp_path / "dataset"
    with zipfile.ZipFile(io.BytesIO(open(download.path(), "rb").read())) as archive:
        archive.extractall(folder)
    assert load_dataset(folder)["test"]["task_id"] == [f"deepsynth/{t.key}" for t in tasks]
    assert load_dataset(folder, "labels")["test"]["annotator"] == ["ann1"]
