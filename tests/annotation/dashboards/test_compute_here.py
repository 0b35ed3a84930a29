"""The agreement page's "compute here now": only while no worker is alive (the worker computes the
figures otherwise), and per project at most once every ``COMPUTE_HERE_EVERY_SECONDS``."""

import pytest
from django.core.cache import cache
from django.urls import reverse

from annotation.dashboards import views_compute as views
from annotation.models import ProjectStatistics
from core.models import WorkerHeartbeat
from tests.annotation.dashboards.test_stored_agreement import _oracle, _project, _worker_alive, large, sent  # noqa: F401
from tests.annotation_factories import annotator, curator


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def test_compute_here_is_refused_while_a_worker_is_alive(db, large, sent, client):
    owner = curator("w-boss")
    project, _ = _project(owner, [annotator("w-1"), annotator("w-2")])
    _worker_alive()
    client.force_login(owner)
    page = client.get(reverse("dashboards:agreement")).content.decode()
    assert 'data-state="updating"' in page and "compute here now" not in page  # not offered
    response = client.post(reverse("dashboards:agreement_compute_here"), {"project": project.pk})
    assert response.status_code == 409 and "A worker is running" in response.content.decode()
    assert not ProjectStatistics.objects.filter(project=project, values__isnull=False).exists()


def test_compute_here_is_rate_limited_per_project(db, large, sent, client, monkeypatch):
    owner = curator("r-boss")
    first, _ = _project(owner, [annotator("r-1"), annotator("r-2")], name="first")
    second, _ = _project(owner, [annotator("r-3"), annotator("r-4")], name="second")
    client.force_login(owner)
    compute = reverse("dashboards:agreement_compute_here")
    computed = []
    real = views.project_agreement_refresh
    monkeypatch.setattr(views, "project_agreement_refresh", lambda **kw: computed.append(kw) or real(**kw))
    assert client.post(compute, {"project": first.pk}).status_code == 302
    assert ProjectStatistics.objects.get(project=first).values == _oracle(first)
    again = client.post(compute, {"project": first.pk})
    assert again.status_code == 429 and again["Retry-After"] == str(views.COMPUTE_HERE_EVERY_SECONDS)
    assert "computed here less than 5 minutes ago" in again.content.decode()
    assert client.post(compute, {"project": second.pk}).status_code == 302  # another project is not held back
    assert [kw["project_id"] for kw in computed] == [first.pk, second.pk]
    cache.delete(f"agreement-compute-here:{first.pk}")  # the window passed
    assert client.post(compute, {"project": first.pk}).status_code == 302
    assert not WorkerHeartbeat.objects.exists()
