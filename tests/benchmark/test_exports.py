"""Export jobs: requested, run by the real Celery task function, recorded, downloaded, refused."""

import hashlib
import io
import json
import resource
import zipfile

import pytest
from rest_framework.test import APIClient

from annotation.models import ExportJob
from annotation.services.exports import export_delete, export_request
from benchmark.models import ReviewStatus, TaskPrompt
from benchmark.services.bundles import taskset_bundle_write
from benchmark.services.history import proposable_review, proposable_update
from benchmark.services.tasksets import taskset_create, taskset_freeze, taskset_new_version, taskset_update
from annotation.tasks import run_export
from tests import factories
from tests.annotation_factories import annotator, curator
from tests.benchmark.exporters.sample import discipline_with_criteria, rich_task

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.fixture
def enqueued(monkeypatch):
    """Job ids handed to the queue; ``run_all`` runs them with the real task function."""
    sent: list[int] = []
    monkeypatch.setattr("annotation.tasks.run_export.delay", sent.append)
    return sent


def run_all(sent: list[int]) -> None:
    while sent:
        run_export(sent.pop(0))


def reportbench_task(key: str, *, n_gold: int = 3):
    """A curated task whose prompt and gold references a curator accepted (what a curated export holds)."""
    task = factories.TaskFactory(protocol="reportbench", key=key, status="curated",
                                 extra={"last_version_date": "2024-05-01"})
    TaskPrompt.objects.create(task=task, level="sentence", text=f"Write a survey on topic {key} before May 2024.",
                              review_status="accepted")
    for n in range(n_gold):
        factories.GoldReferenceFactory(task=task, position=n, review_status="accepted")
    return task


@pytest.fixture
def owner():
    return curator("ana")


def test_a_job_is_enqueued_on_commit_and_the_task_writes_the_file(owner, enqueued, var_dir,
                                                                   django_capture_on_commit_callbacks):
    tasks = [reportbench_task("2401.00001"), reportbench_task("2401.00002", n_gold=5)]
    task_set = taskset_create(name="Core set", tasks=tasks)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = export_request(user=owner, kind="taskset",
                             parameters={"task_set": task_set.pk, "format": "reportbench", "include_history": True})
    assert enqueued == [] and len(callbacks) == 1  # nothing reaches the queue before the commit
    assert job.status == "queued" and job.filename == "taskset-core-set-v1-reportbench.zip"
    callbacks[0]()
    assert enqueued == [job.pk]
    run_all(enqueued)

    job.refresh_from_db()
    assert job.status == "done", job.error
    assert (job.progress_done, job.progress_total) == (2, 2)
    assert job.started_at <= job.finished_at
    path = var_dir / "exports" / job.file_path
    data = path.read_bytes()
    assert job.size == len(data) and job.sha256 == hashlib.sha256(data).hexdigest()
    assert sorted(p.name for p in (var_dir / "exports").iterdir()) == [job.file_path]  # no temporary file left
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        gold = archive.read("reportbench_GT/2401.00002.jsonl").decode().splitlines()
        history = archive.read("history/tasks_with_history.jsonl").decode().splitlines()
    assert manifest["format"] == "reportbench" and manifest["counts"]["tasks"] == 2
    assert manifest["counts"]["gold references"] == 8 and len(gold) == 5
    assert manifest["task_set"]["name"] == "Core set" and manifest["include_history"] is True
    assert len(history) == 2 and all('"history":[' in line for line in history)
    # The live set's hash is the sha256 of its native JSONL, as freezing would store it.
    assert manifest["content_hash"] == taskset_freeze(task_set=task_set).content_hash

    # Running the task again (a redelivered message) finds the job done and leaves it alone.
    assert run_export(job.pk) == "done"
    assert run_export(10**9) == "missing"


def test_a_failure_is_recorded_with_its_reason_and_leaves_no_file(owner, enqueued, var_dir,
                                                                  django_capture_on_commit_callbacks):
    first, broken = reportbench_task("2401.00001"), reportbench_task("2401.00009")
    prompt = broken.prompts.get()
    proposable_review(obj=prompt, status=ReviewStatus.REJECTED, expected_version=prompt.version)
    task_set = taskset_create(name="broken", tasks=[first, broken])
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk, "format": "reportbench"})
    run_all(enqueued)
    job.refresh_from_db()
    assert job.status == "failed"
    # The first task's gold file was already in the zip when the second failed: nothing of it stays.
    assert "reportbench task 2401.00009 has no prompt that is not rejected" in job.error
    assert job.file_path == "" and job.sha256 == "" and job.size is None and job.finished_at
    assert list((var_dir / "exports").iterdir()) == []


def test_a_full_disk_fails_the_job_saying_so_and_leaves_no_file(owner, enqueued, var_dir,
                                                               django_capture_on_commit_callbacks):
    """A real write limit (RLIMIT_FSIZE, which Python turns into EFBIG) while the bundle is written."""
    tasks = [reportbench_task(f"2401.{n:05d}", n_gold=20) for n in range(20)]
    task_set = taskset_create(name="Large", tasks=tasks)
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk, "format": "reportbench"})
    limit = 4096
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        run_all(enqueued)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error.startswith(f"no space left to write the export in {var_dir / 'exports'} (File too large)")
    assert job.file_path == "" and list((var_dir / "exports").iterdir()) == []

    with django_capture_on_commit_callbacks(execute=True):  # the same export fits without the limit
        again = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk, "format": "reportbench"})
    run_all(enqueued)
    again.refresh_from_db()
    assert again.status == "done" and again.size > limit


def test_bad_requests_name_the_field_and_store_nothing(owner):
    task_set = taskset_create(name="ds", tasks=[rich_task()])
    with pytest.raises(ValueError, match=r"^format: ds v1 cannot be written as 'reportbench'; its formats: native"):
        export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk, "format": "reportbench"})
    with pytest.raises(ValueError, match="^task_set: no task set 999"):
        export_request(user=owner, kind="taskset", parameters={"task_set": 999})
    with pytest.raises(ValueError, match="^include_history: expected true or false"):
        export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk, "include_history": "maybe"})
    with pytest.raises(ValueError, match="^kind: 'everything'"):
        export_request(user=owner, kind="everything", parameters={})
    with pytest.raises(PermissionError, match="only curators may export task sets"):
        export_request(user=annotator("bo"), kind="taskset", parameters={"task_set": task_set.pk})
    assert ExportJob.objects.count() == 0


def test_the_changelog_lists_added_removed_and_changed_tasks_and_items(owner):
    # Each task on its own discipline: a shared one's criteria are part of every line that names it.
    kept, edited, dropped = (rich_task(key, discipline=discipline_with_criteria(key)) for key in ("a-1", "a-2", "a-3"))
    v1 = taskset_freeze(task_set=taskset_create(name="versions", tasks=[kept, edited, dropped]))
    item = edited.checklist_groups.order_by("position").first().items.order_by("position").first()
    proposable_update(obj=item, changes={"text": "A sharper requirement"}, expected_version=item.version, actor=owner)
    factories.NuggetFactory(task=edited, position=9)
    added = rich_task("a-4", discipline=discipline_with_criteria("a-4"))
    v2 = taskset_new_version(task_set=v1)
    taskset_update(task_set=v2, tasks=[kept, edited, added])
    changelog = taskset_bundle_write(task_set=v2, format_name="native", include_history=False,
                                     out=io.BytesIO())["changelog"]
    assert changelog["previous"] == {"name": "versions", "version": 1, "content_hash": v1.content_hash}
    assert changelog["added"] == [f"{added.protocol}/a-4"] and changelog["removed"] == [f"{dropped.protocol}/a-3"]
    assert changelog["unchanged"] == 1
    assert changelog["changed"] == [{
        "task": f"{edited.protocol}/a-2", "fields": [],
        "items": {"checklist_items": {"added": 0, "removed": 0, "changed": 1},
                  "nuggets": {"added": 1, "removed": 0, "changed": 0}},
    }]


def test_api_request_poll_and_download(owner, enqueued, django_capture_on_commit_callbacks):
    task_set = taskset_create(name="api set", tasks=[rich_task()])
    client = APIClient()
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/exports/", {"kind": "taskset", "task_set": task_set.pk, "format": "native"},
                               format="json")
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    assert response.json()["status"] == "queued" and response.json()["download_url"] is None
    assert client.get(f"/api/exports/{job_id}/download/").status_code == 400  # not done yet: says so

    run_all(enqueued)
    body = client.get(f"/api/exports/{job_id}/").json()
    assert body["status"] == "done" and body["percent"] == 100
    download = client.get(body["download_url"])
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="taskset-api-set-v1-native.zip"'
    assert hashlib.sha256(b"".join(download.streaming_content)).hexdigest() == body["sha256"]
    assert [j["id"] for j in client.get("/api/exports/").json()["results"]] == [job_id]

    outsider = APIClient()
    outsider.force_login(annotator("bo"))
    assert outsider.get(f"/api/exports/{job_id}/").status_code == 404
    assert outsider.get(f"/api/exports/{job_id}/download/").status_code == 404
    assert outsider.get("/api/exports/").json()["results"] == []
    refused = outsider.post("/api/exports/", {"kind": "taskset", "task_set": task_set.pk}, format="json")
    assert refused.status_code == 403
    other_curator = APIClient()
    other_curator.force_login(curator("cy"))
    assert other_curator.get(f"/api/exports/{job_id}/download/").status_code == 200
    bad = client.post("/api/exports/", {"kind": "taskset", "task_set": task_set.pk, "format": "deepscholar"},
                      format="json")
    assert bad.status_code == 400 and "format" in bad.json()


def test_the_broker_being_down_is_recorded_on_the_job(owner, monkeypatch, django_capture_on_commit_callbacks):
    def down(job_id):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr("annotation.tasks.run_export.delay", down)
    task_set = taskset_create(name="no broker", tasks=[rich_task()])
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "could not reach the task queue: connection refused"


def test_task_set_pages_show_versions_hash_changes_and_the_form_to_curators(owner, enqueued, client,
                                                                            django_capture_on_commit_callbacks):
    kept, edited = (rich_task(key, discipline=discipline_with_criteria(key)) for key in ("p-1", "p-2"))
    v1 = taskset_freeze(task_set=taskset_create(name="pages", tasks=[kept, edited]))
    item = edited.nuggets.order_by("position").first()
    proposable_update(obj=item, changes={"text": "Changed nugget"}, expected_version=item.version, actor=owner)
    v2 = taskset_new_version(task_set=v1)
    client.force_login(owner)
    page = client.get(f"/benchmark/task-sets/{v2.pk}/").content.decode()
    assert "Changes since v1" in page and "0 added · 0 removed · 1 changed · 1 unchanged" in page
    assert f"{edited.protocol}/p-2" in page and "nuggets: +0 −0 ~1" in page
    assert v1.content_hash[:12] in page and 'id="export-form"' in page
    assert "pages" in client.get("/benchmark/task-sets/").content.decode()

    # A refused export comes back as a message and queues nothing.
    response = client.post("/benchmark/exports/new/", {"kind": "taskset", "task_set": v2.pk, "format": "deepscholar"},
                           follow=True)
    assert "Export not started: format: pages v2 cannot be written as &#x27;deepscholar&#x27;" in response.content.decode()
    assert ExportJob.objects.count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/benchmark/exports/new/", {"kind": "taskset", "task_set": v2.pk, "format": "native"})
    assert response.status_code == 302 and response["Location"] == "/benchmark/exports/"
    job = ExportJob.objects.get()
    listing = client.get("/benchmark/exports/").content.decode()
    assert f'hx-get="/benchmark/exports/{job.pk}/row/"' in listing and 'hx-trigger="every 1s"' in listing
    run_all(enqueued)
    row = client.get(f"/benchmark/exports/{job.pk}/row/").content.decode()
    assert 'data-status="done"' in row and "hx-trigger" not in row and f"/benchmark/exports/{job.pk}/download/" in row

    client.force_login(annotator("bo"))
    assert 'id="export-form"' not in client.get(f"/benchmark/task-sets/{v2.pk}/").content.decode()
    assert client.get(f"/benchmark/exports/{job.pk}/row/").status_code == 404


def test_deleting_an_export_removes_its_row_and_file_and_cancels_a_queued_one(
        owner, enqueued, var_dir, django_capture_on_commit_callbacks):
    task_set = taskset_create(name="to delete", tasks=[rich_task()])
    with django_capture_on_commit_callbacks(execute=True):
        done = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
        queued = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
    run_export(enqueued.pop(0))
    done.refresh_from_db()
    path = var_dir / "exports" / done.file_path
    assert done.status == "done" and path.is_file()

    # Not the requester, not a curator: as if it did not exist; nothing changes.
    with pytest.raises(ExportJob.DoesNotExist, match="no export"):
        export_delete(job_id=done.pk, user=annotator("bo"))
    # Running: refused with the reason, kept.
    ExportJob.objects.filter(pk=queued.pk).update(status="running")
    with pytest.raises(ValueError, match="running"):
        export_delete(job_id=queued.pk, user=owner)
    ExportJob.objects.filter(pk=queued.pk).update(status="queued")

    with django_capture_on_commit_callbacks(execute=True):
        export_delete(job_id=done.pk, user=owner)
        export_delete(job_id=queued.pk, user=curator("cy"))  # any curator may
    assert not ExportJob.objects.filter(pk__in=[done.pk, queued.pk]).exists()
    assert not path.exists() and list((var_dir / "exports").iterdir()) == []
    assert run_all(enqueued) is None and enqueued == []  # the cancelled job's message finds nothing


def test_the_export_list_deletes_a_row_with_htmx_or_a_plain_form(owner, enqueued, client,
                                                                 django_capture_on_commit_callbacks):
    task_set = taskset_create(name="rows", tasks=[rich_task()])
    with django_capture_on_commit_callbacks(execute=True):
        first = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
        second = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
    run_all(enqueued)
    client.force_login(owner)
    page = client.get("/benchmark/exports/").content.decode()
    assert f'hx-post="/benchmark/exports/{first.pk}/delete/"' in page and "Delete export" in page

    swapped = client.post(f"/benchmark/exports/{first.pk}/delete/", headers={"HX-Request": "true"})
    assert swapped.status_code == 200 and swapped.content == b""  # the row is swapped away
    plain = client.post(f"/benchmark/exports/{second.pk}/delete/", follow=True)
    assert plain.redirect_chain[-1][0] == "/benchmark/exports/"
    assert f"Export #{second.pk} deleted" in plain.content.decode()
    assert not ExportJob.objects.exists()
    assert client.post(f"/benchmark/exports/{second.pk}/delete/").status_code == 404

    with django_capture_on_commit_callbacks(execute=True):
        running = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
    ExportJob.objects.filter(pk=running.pk).update(status="running")
    kept = client.post(f"/benchmark/exports/{running.pk}/delete/", headers={"HX-Request": "true"})
    assert kept.status_code == 200 and "Not deleted: export" in kept.content.decode()
    assert f'id="export-{running.pk}"' in kept.content.decode() and ExportJob.objects.filter(pk=running.pk).exists()


def test_api_deletes_an_export(owner, enqueued, django_capture_on_commit_callbacks):
    task_set = taskset_create(name="api delete", tasks=[rich_task()])
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
    client = APIClient()
    client.force_login(owner)
    ExportJob.objects.filter(pk=job.pk).update(status="running")
    refused = client.delete(f"/api/exports/{job.pk}/")
    assert refused.status_code == 400 and "running" in refused.json()["detail"]
    ExportJob.objects.filter(pk=job.pk).update(status="queued")
    assert client.delete(f"/api/exports/{job.pk}/").status_code == 204
    assert client.get(f"/api/exports/{job.pk}/").status_code == 404


def test_a_second_message_for_a_running_export_runs_nothing(owner, enqueued, var_dir,
                                                           django_capture_on_commit_callbacks):
    """Only a queued job is claimed: a message sent again (a lost worker's recovery) while
    another worker writes the job leaves that worker alone."""
    task_set = taskset_create(name="twice", tasks=[rich_task()])
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
    ExportJob.objects.filter(pk=job.pk).update(status="running", worker="other@host")
    assert run_export(job.pk) == "running"
    job.refresh_from_db()
    assert job.worker == "other@host" and job.progress_done == 0
    assert not (var_dir / "exports").exists()  # nothing written, not even the folder


@pytest.mark.parametrize("gone", ["file", "folder"])
def test_deleting_an_export_whose_file_is_gone_removes_the_row(owner, enqueued, var_dir, gone,
                                                               django_capture_on_commit_callbacks):
    import shutil

    from annotation.services.exports import exports_dir

    task_set = taskset_create(name=f"gone {gone}", tasks=[rich_task()])
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(user=owner, kind="taskset", parameters={"task_set": task_set.pk})
    run_all(enqueued)
    job.refresh_from_db()
    assert job.status == "done" and (exports_dir() / job.file_path).is_file()
    if gone == "file":
        (exports_dir() / job.file_path).unlink()
    else:
        shutil.rmtree(exports_dir())
    client = APIClient()
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/exports/{job.pk}/").status_code == 204
    assert not ExportJob.objects.filter(pk=job.pk).exists()  # no orphan row
    assert client.delete(f"/api/exports/{job.pk}/").status_code == 404  # a second delete finds nothing


def test_a_curated_export_holds_reviewed_items_of_curated_tasks_unless_asked_for_more(owner):
    kept = reportbench_task("2401.00001", n_gold=2)
    factories.GoldReferenceFactory(task=kept, position=5)  # proposed, nobody reviewed it
    draft = reportbench_task("2401.00009")
    draft.status = "draft"
    draft.save()
    task_set = taskset_create(name="Mixed", tasks=[kept, draft])

    def written(**options) -> tuple[dict, list[str]]:
        out = io.BytesIO()
        manifest = taskset_bundle_write(task_set=task_set, format_name="reportbench", include_history=False, out=out,
                                        **options)
        with zipfile.ZipFile(io.BytesIO(out.getvalue())) as archive:
            return manifest, sorted(name for name in archive.namelist() if name.startswith("reportbench_GT/"))

    manifest, files = written()
    assert files == ["reportbench_GT/2401.00001.jsonl"]
    assert manifest["counts"]["gold references"] == 2 and manifest["counts"]["tasks"] == 1
    assert manifest["counts"]["left out: unreviewed gold references"] == 1
    assert manifest["counts"]["left out: tasks not curated"] == 1
    assert manifest["include_unreviewed"] is False and manifest["content"].startswith("curated tasks only")
    manifest, files = written(include_unreviewed=True)
    assert files == ["reportbench_GT/2401.00001.jsonl", "reportbench_GT/2401.00009.jsonl"]
    assert manifest["counts"]["gold references"] == 3 + 3 and manifest["include_unreviewed"] is True
    assert "unreviewed items" in manifest["content"]
