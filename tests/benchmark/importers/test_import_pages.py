"""The import history page and the progress a running import shows on its job page."""

import pytest
from django.urls import reverse

from benchmark.models import ImportJob
from benchmark.services.imports import ProgressFile, imports_dir, import_progress
from tests.annotation_factories import annotator, curator

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path


def test_history_lists_every_job_with_who_when_source_status_and_counts(client, django_assert_max_num_queries):
    alice, bob = curator("alice"), curator("bob")
    done = ImportJob.objects.create(format="surveylens", original_name="SurveyLens.zip", requested_by=alice,
                                    status=ImportJob.Status.DONE,
                                    counts={"task": {"created": 103}, "report": {"created": 854}})
    failed = ImportJob.objects.create(format="native", original_name="tasks.jsonl", requested_by=bob,
                                      status=ImportJob.Status.FAILED,
                                      errors=[{"file": "tasks.jsonl", "line": 1, "field": "", "message": "x"}])
    client.force_login(bob)
    with django_assert_max_num_queries(6):
        page = client.get(reverse("benchmark:import_history"))
    html = page.content.decode()
    assert page.status_code == 200
    assert html.index("tasks.jsonl") < html.index("SurveyLens.zip")  # newest first
    assert f'href="{reverse("benchmark:import_detail", args=[done.pk])}">SurveyLens.zip</a>' in html
    assert "<td>alice</td>" in html and "<td>bob</td>" in html
    assert "report 854 created; task 103 created" in html
    assert "Failed (1 error)" in html
    # any curator reads any job's page (bob opens alice's)
    assert client.get(reverse("benchmark:import_detail", args=[done.pk])).status_code == 200
    assert client.get(reverse("benchmark:import_detail", args=[failed.pk])).status_code == 200


def test_history_refuses_non_curators(client):
    client.force_login(annotator("carol"))
    assert client.get(reverse("benchmark:import_history")).status_code == 403
    client.logout()
    assert client.get(reverse("benchmark:import_history")).status_code == 302


def test_a_running_job_shows_its_progress(client):
    job = ImportJob.objects.create(format="surveylens", original_name="SurveyLens.zip", requested_by=curator(),
                                   status=ImportJob.Status.RUNNING, upload_dir="abc")
    (imports_dir() / "abc").mkdir()
    progress = ProgressFile(imports_dir() / "abc")
    progress(0, 954)
    progress(407, 954)
    assert import_progress(job) == {"done": 407, "total": 954, "percent": 42}
    client.force_login(job.requested_by)
    html = client.get(reverse("benchmark:import_detail", args=[job.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert 'id="import-progress"' in html and 'max="954" value="407"' in html and "42% — 407 of 954 files" in html
    job.status = ImportJob.Status.DONE
    assert import_progress(job) is None  # an ended job shows its counts, not a bar


def test_a_job_without_progress_shows_an_indefinite_bar(client):
    job = ImportJob.objects.create(format="native", original_name="tasks.jsonl", requested_by=curator(),
                                   status=ImportJob.Status.RUNNING, upload_dir="none")
    client.force_login(job.requested_by)
    html = client.get(reverse("benchmark:import_detail", args=[job.pk])).content.decode()
    assert 'id="import-progress"' not in html and 'aria-label="Import in progress"' in html


def test_the_surveylens_excerpt_as_a_zip_reports_progress_then_its_counts(client, datasets, tmp_path, monkeypatch,
                                                                         django_capture_on_commit_callbacks):
    import shutil

    from django.core.files.uploadedfile import SimpleUploadedFile

    from benchmark.services import imports

    monkeypatch.setattr("benchmark.tasks.run_import_job.delay", lambda pk: None)
    seen = []
    original = imports.ProgressFile.__call__

    def spy(self, done, total):
        original(self, done, total)
        seen.append(imports.json.loads(self.path.read_text(encoding="utf-8")))

    monkeypatch.setattr(imports.ProgressFile, "__call__", spy)
    archive = shutil.make_archive(str(tmp_path / "SurveyLens"), "zip", datasets / "surveylens" / "repository",
                                  "results")
    client.force_login(curator())
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmark:import_new"), {
            "format": "surveylens", "file": SimpleUploadedFile("SurveyLens.zip", open(archive, "rb").read())})
    job = imports.import_execute(job_id=ImportJob.objects.get().pk)

    assert job.status == ImportJob.Status.DONE, job.errors
    assert seen[0] == {"done": 0, "total": 6} and seen[-1] == {"done": 6, "total": 6}
    assert job.counts["task"] == {"created": 1} and job.counts["processing summary"] == {"reported": 2}
    assert not (imports_dir() / "progress.json").exists() and not any(imports_dir().iterdir())
    html = client.get(reverse("benchmark:import_history")).content.decode()
    assert "SurveyLens.zip" in html and "Done" in html
