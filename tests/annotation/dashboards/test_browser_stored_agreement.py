"""A curator watches the agreement page of a large project in a real browser, at 1366 × 768: the
stored figures with when they were computed, marked while a worker computes new ones, and the
section updating by itself once they are stored."""

import pytest
from django.utils import timezone

from annotation.dashboards import inter_annotator as iaa
from annotation.models import AnnotationItem
from annotation.tasks import refresh_project_agreement
from core.models import WorkerHeartbeat
from tests.annotation_factories import agreement_project, annotator, curator, members_add, token

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
LABELS = ("correct", "omitted", "incorrect")


def test_the_section_shows_when_figures_were_computed_and_updates_by_itself(
        page, live_server, login, screenshot, monkeypatch):
    from annotation.loop.labels import label_submit

    monkeypatch.setattr(iaa, "INLINE_LABELS", 0)  # a large project: its figures are a worker's
    # the test is the worker: it runs the task itself when it wants the figures stored
    monkeypatch.setattr(refresh_project_agreement, "apply_async", lambda *args, **kwargs: None)
    monkeypatch.setattr(iaa, "POLL_SECONDS", 1)
    owner = curator("cur")
    owner.set_password("pw-for-tests")
    owner.save()
    users = [annotator("ann-1"), annotator("ann-2")]
    project = agreement_project(owner, users, labels=[LABELS[n % 3] for n in range(12)], overlap=3, blind=False,
                                name="grades at scale")
    items = list(AnnotationItem.objects.filter(project=project).order_by("position", "id"))
    for n, item in enumerate(items):
        for k, user in enumerate(users):
            label_submit(item=item, annotator=user, value={"label": LABELS[(n + k * (n % 4 == 0)) % 3]},
                         client_token=token())
    page.set_viewport_size({"width": 1366, "height": 768})
    login("cur", "pw-for-tests")

    # no worker alive: the page says so, and computes here when the curator asks
    page.goto(f"{live_server.url}/dashboards/agreement/")
    row = page.locator(f'#iaa tr[data-project="{project.pk}"]')
    assert row.get_attribute("data-state") == "no_worker"
    assert "not computed yet" in row.inner_text() and "no worker is running" in row.inner_text()
    page.locator("#iaa-section").scroll_into_view_if_needed()
    screenshot("dashboards-agreement-stored-no-worker")
    row.get_by_role("button", name="compute here now").click()
    page.wait_for_selector(f'#iaa tr[data-project="{project.pk}"][data-state="current"]')

    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="w@h", pid=1, started_at=now, last_seen=now)
    late = annotator("ann-late")
    members_add(project, owner, [late])
    label_submit(item=items[0], annotator=late, value={"label": "correct"}, client_token=token())
    page.goto(f"{live_server.url}/dashboards/agreement/")
    assert row.get_attribute("data-state") == "updating"
    assert "computed" in row.locator(".db-computed").inner_text()
    text = row.inner_text()
    assert "of 24 labels" in text and "25 labels now: new figures are due from a worker" in text
    page.locator("#iaa-section").scroll_into_view_if_needed()
    screenshot("dashboards-agreement-stored-updating")

    refresh_project_agreement(project.pk)  # the worker stores new figures; the page is not reloaded
    page.wait_for_selector(f'#iaa tr[data-project="{project.pk}"][data-state="current"]', timeout=10_000)
    row = page.locator(f'#iaa tr[data-project="{project.pk}"]')
    assert row.locator("td.num").nth(1).inner_text() == "25"
    assert page.locator("#iaa-section[data-polling]").count() == 0  # current: it stops asking
    page.locator("#iaa-section").scroll_into_view_if_needed()
    screenshot("dashboards-agreement-stored-current")
