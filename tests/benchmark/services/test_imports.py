"""Import jobs: an upload queued, run by the worker's service, ending with counts or every error."""

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from benchmark.importers.catalogue import run_import
from benchmark.models import ImportJob, Protocol, Report, Task
from benchmark.services.imports import import_execute, import_request, imports_dir
from tests.annotation_factories import annotator, curator
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return curator()


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path


def _upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data)


def _queued(owner, name, data, format_name, django_capture_on_commit_callbacks, monkeypatch) -> ImportJob:
    sent = []
    monkeypatch.setattr("benchmark.tasks.run_import_job.delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        job = import_request(user=owner, format_name=format_name, upload=_upload(name, data))
    assert sent == [job.pk] and job.status == "queued"
    return job


def test_the_deepsynth_example_imports_with_the_counts_of_a_direct_import(
        owner, datasets, django_capture_on_commit_callbacks, monkeypatch):
    source = datasets / "deepsynth-eval" / "example_gen_result.jsonl"
    job = _queued(owner, "example_gen_result.jsonl", source.read_bytes(), "deepsynth",
                  django_capture_on_commit_callbacks, monkeypatch)
    assert (imports_dir() / job.upload_dir / "example_gen_result.jsonl").read_bytes() == source.read_bytes()
    job = import_execute(job_id=job.pk, worker="w@host")
    assert job.status == "done", job.errors
    assert job.counts["task"]["created"] == Task.objects.count() > 0
    assert job.upload_dir == "" and not list(imports_dir().iterdir())  # the upload is gone once the job ends
    assert import_execute(job_id=job.pk).status == "done"  # a second message runs nothing
    again = run_import("deepsynth", source)  # a direct import now finds everything unchanged
    assert again.counts["task"] == {"unchanged": job.counts["task"]["created"]}


def test_a_bad_line_fails_the_job_naming_file_line_and_field_and_stores_nothing(
        owner, django_capture_on_commit_callbacks, monkeypatch):
    no_version = b'{"protocol": "deepsynth", "key": "t1"}\n'
    job = _queued(owner, "tasks.jsonl", no_version, "native", django_capture_on_commit_callbacks, monkeypatch)
    job = import_execute(job_id=job.pk)
    assert job.status == "failed" and len(job.errors) == 1
    error = job.errors[0]
    # the user's file name, not our copy's path
    assert (error["file"], error["line"], error["field"]) == ("tasks.jsonl", 1, "format_version"), error
    assert not Task.objects.exists()


def test_a_zip_of_a_folder_is_unpacked_and_an_unsafe_one_refused(
        owner, datasets, django_capture_on_commit_callbacks, monkeypatch):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("release/../../escape.jsonl", "{}")
    job = _queued(owner, "bad.zip", buffer.getvalue(), "native", django_capture_on_commit_callbacks, monkeypatch)
    job = import_execute(job_id=job.pk)
    assert job.status == "failed" and "unsafe path" in job.errors[0]["message"]
    assert job.errors[0]["file"] == "bad.zip"
    assert not (imports_dir().parent / "escape.jsonl").exists()

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.write(datasets / "deepsynth-eval" / "example_gen_result.jsonl", "deepsynth/example_gen_result.jsonl")
    job = _queued(owner, "deepsynth.zip", buffer.getvalue(), "deepsynth", django_capture_on_commit_callbacks,
                  monkeypatch)
    job = import_execute(job_id=job.pk)
    assert job.status == "done", job.errors
    assert job.counts["task"]["created"] == Task.objects.count() > 0


def test_refusals(owner):
    with pytest.raises(PermissionError, match="only curators import"):
        import_request(user=annotator("alice"), format_name="native", upload=_upload("a.jsonl", b""))
    with pytest.raises(ValueError, match="format: 'csv' is not one of"):
        import_request(user=owner, format_name="csv", upload=_upload("a.csv", b""))
    assert not ImportJob.objects.exists()



@pytest.mark.parametrize(("layout", "systems"), [
    (["storm/2312.04861.md"], {"storm"}),  # one system's folder, zipped bare
    (["reports/storm/2312.04861.md"], {"storm"}),  # ... inside a wrapper folder
    (["reports/storm/deepscholar/2506.02838.md"], {"storm"}),  # ... holding a protocol folder
    (["storm/2312.04861.md", "other/2312.04861.md"], {"storm", "other"}),
])
def test_a_zip_of_report_folders_reads_each_system_folder_as_a_system(
        owner, layout, systems, django_capture_on_commit_callbacks, monkeypatch):
    TaskFactory(protocol=Protocol.REPORTBENCH, key="2312.04861")
    TaskFactory(protocol=Protocol.DEEPSCHOLAR, key="2506.02838")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name in layout:
            bundle.writestr(name, "# Survey\n\nText.\n")
    job = _queued(owner, "reports.zip", buffer.getvalue(), "reports", django_capture_on_commit_callbacks, monkeypatch)
    job = import_execute(job_id=job.pk)
    assert job.status == "done", job.errors
    assert set(Report.objects.values_list("system__name", flat=True)) == systems
    assert Report.objects.count() == len(layout)


def test_the_broker_being_down_is_recorded_on_the_job(owner, monkeypatch, django_capture_on_commit_callbacks):
    def down(job_id):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr("benchmark.tasks.run_import_job.delay", down)
    with django_capture_on_commit_callbacks(execute=True):
        job = import_request(user=owner, format_name="native", upload=_upload("tasks.jsonl", b"{}\n"))
    job.refresh_from_db()
    assert job.status == "failed" and job.upload_dir == ""
    assert job.errors == [
        {"file": "", "line": None, "field": "", "message": "could not reach the task queue: connection refused"}]


def _many_entries(count: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for index in range(count):
            bundle.writestr(f"release/part-{index}.jsonl", "")
    return buffer.getvalue()


def test_a_zip_with_too_many_entries_is_refused_at_upload_and_never_unpacked(
        owner, settings, client, django_capture_on_commit_callbacks, monkeypatch):
    settings.IMPORT_MAX_ZIP_ENTRIES = 50
    with pytest.raises(ValueError, match=r"^file: many\.zip holds 51 entries; the limit is 50 \(IMPORT_MAX_ZIP_ENTRIES\)"):
        import_request(user=owner, format_name="native", upload=_upload("many.zip", _many_entries(51)))
    assert not ImportJob.objects.exists() and not list(imports_dir().iterdir())
    client.force_login(owner)
    page = client.post("/benchmark/imports/new/", {"format": "native",
                                                  "file": _upload("many.zip", _many_entries(51))})
    assert page.status_code == 400 and "many.zip holds 51 entries" in page.content.decode()
    # a job queued before the limit was lowered is refused by the worker before unpacking
    settings.IMPORT_MAX_ZIP_ENTRIES = 100
    job = _queued(owner, "late.zip", _many_entries(60), "native", django_capture_on_commit_callbacks, monkeypatch)
    settings.IMPORT_MAX_ZIP_ENTRIES = 50
    job = import_execute(job_id=job.pk)
    assert job.status == "failed" and job.errors[0]["file"] == "late.zip"
    assert job.errors[0]["message"].endswith("holds 60 entries; the limit is 50 (IMPORT_MAX_ZIP_ENTRIES)")
    assert not any(imports_dir().rglob("part-*.jsonl"))
