"""In real Chromium: an annotator opening a report with a remote image makes no request off the machine."""

import pytest
from django.urls import reverse

from benchmark.models import Report
from tests.annotation_factories import agreement_project, annotator, curator, hold

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REMOTE = "http://example.invalid/x.png"
TEXT = f"# Findings\n\nSee the chart below.\n\n![]({REMOTE})\n\nAnd ![a figure](https://example.invalid/y.png) too.\n"


def test_opening_a_report_with_remote_images_calls_no_one(page, live_server, login, screenshot):
    owner, reader = curator("cur"), annotator("reader")
    reader.set_password("pw-for-tests")
    reader.save()
    project = agreement_project(owner, [reader], name="remote images")
    item = project.items.order_by("position").first()
    hold(item, reader)  # a blind project's item is reached through one's own claim
    report = Report.objects.get(verdicts__pk=item.target_id)
    Report.objects.filter(pk=report.pk).update(text=TEXT)
    requests, violations = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda message: violations.append(message.text) if "Content Security Policy" in message.text
            else None)
    login("reader", "pw-for-tests")
    for path in (reverse("annotation:item", kwargs={"project_id": project.pk, "item_id": item.pk}),
                 reverse("benchmark:report_detail", kwargs={"report_id": report.pk})):
        response = page.goto(live_server.url + path)
        assert response.status == 200, path
        page.wait_for_load_state("networkidle")
        link = page.locator(f'a[href="{REMOTE}"]')
        assert link.count() == 1 and page.locator("img[src*='example.invalid']").count() == 0
        assert "Content-Security-Policy" in response.headers or "content-security-policy" in response.headers
    screenshot("remote-image-as-link")
    outside = [url for url in requests if not url.startswith(live_server.url)]
    assert outside == [] and len(requests) > 4
    assert violations == []  # nothing of ours is blocked by the policy either
