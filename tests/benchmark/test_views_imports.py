"""The import pages: upload, the job's page polling while it runs, then its counts or errors."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmark.models import ImportJob, Task
from benchmark.services.imports import import_execute
from tests.annotation_factories import annotator, curator

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path, monkeypatch):
    settings.VAR_DIR = tmp_path
    monkeypatch.setattr("benchmark.tasks.run_import_job.delay", lambda pk: None)  # the test runs the job itself


def test_upload_queues_a_job_whose_page_polls_then_shows_the_counts(client, datasets, django_capture_on_commit_callbacks):
    client.force_login(curator())
    data = (datasets / "deepsynth-eval" / "example_gen_result.jsonl").read_bytes()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("benchmark:import_new"), {
            "format": "deepsynth", "file": SimpleUploadedFile("example_gen_result.jsonl", data)})
    job = ImportJob.objects.get()
    assert response["Location"] == reverse("benchmark:import_detail", args=[job.pk])
    waiting = client.get(response["Location"]).content.decode()
    assert 'hx-trigger="every 1s"' in waiting and "waiting for a worker" in waiting
    import_execute(job_id=job.pk)
    done = client.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert "every 1s" not in done and 'id="import-counts"' in done
    created = Task.objects.count()
    assert created > 0 and f'<td>task</td><td class="num">{created}</td>' in done


def test_a_failed_import_lists_its_errors(client, django_capture_on_commit_callbacks):
    client.force_login(curator())
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("benchmark:import_new"), {
            "format": "native", "file": SimpleUploadedFile("tasks.jsonl", b'{"protocol": "deepsynth"}\n')})
    job = import_execute(job_id=ImportJob.objects.get().pk)
    page = client.get(reverse("benchmark:import_detail", args=[job.pk])).content.decode()
    assert "nothing was stored" in page
    assert '<td>tasks.jsonl</td><td class="num">1</td><td>format_version</td>' in page


def test_refusals(client):
    client.force_login(annotator("alice"))
    assert client.get(reverse("benchmark:import_new")).status_code == 403
    client.force_login(curator())
    bad = client.post(reverse("benchmark:import_new"), {"format": "csv",
                                                        "file": SimpleUploadedFile("a.csv", b"x")})
    assert bad.status_code == 400 and 'id="errors-format"' in bad.content.decode()
    missing = client.post(reverse("benchmark:import_new"), {"format": "native"})
    assert missing.status_code == 400 and 'id="errors-file"' in missing.content.decode()
    assert not ImportJob.objects.exists()
