"""Payloads stored through the API in user-supplied fields must not become executable markup."""

from html.parser import HTMLParser

from django.test import Client
from django.urls import reverse

from tests.api.conftest import client_for
from tests.security.xss_payloads import ALL, PAYLOADS


class _Scan(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") and "probe" in value:
                self.problems.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action", "formaction") and value.strip().lower().startswith("javascript:"):
                self.problems.append(f"<{tag} {name}={value!r}>")
        if tag in ("script", "iframe", "svg", "details") and any("probe" in (v or "") for _, v in attrs):
            self.problems.append(f"<{tag}> from a payload")
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and "probe" in data:
            self.problems.append(f"<script> containing {data[:60]!r}")


def scan(html: str) -> list[str]:
    parser = _Scan()
    parser.feed(html)
    return parser.problems


def plant(world) -> dict:
    """Store every payload in report text, checklist item text, a nugget and a system name via the API."""
    curator = client_for(world.users["curator"])
    system = curator.post(reverse("api:system-list"), {"name": PAYLOADS[1][:200], "description": ALL},
                          format="json")
    assert system.status_code == 201, system.content
    response = curator.post(reverse("api:report-list"),
                            {"task": world.task.pk, "system": system.json()["id"], "text": ALL}, format="json")
    assert response.status_code == 201, response.content
    item = world.objs["checklist-item"]
    response = curator.patch(reverse("api:checklist-item-detail", kwargs={"pk": item.pk}),
                             {"text": ALL, "expected_version": item.version}, format="json")
    assert response.status_code == 200
    nugget = world.objs["nugget"]
    curator.patch(reverse("api:nugget-detail", kwargs={"pk": nugget.pk}),
                  {"text": ALL, "expected_version": nugget.version}, format="json")
    from benchmark.models import Report

    report = Report.objects.get(system_id=system.json()["id"])
    return {
        "report": reverse("benchmark:report_detail", kwargs={"report_id": report.pk}),
        "task": reverse("benchmark:task_detail", kwargs={"task_id": world.task.pk}),
        "task_b": reverse("benchmark:task_detail", kwargs={"task_id": item.group.task_id}),
        "tasks": reverse("benchmark:task_list"),
    }


def test_scanner_catches_raw_payloads():
    assert len(scan(ALL)) >= 8


def test_pages_showing_payloads_contain_no_executable_markup(world):
    pages = plant(world)
    client = Client()
    client.force_login(world.users["curator"])
    for name, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert scan(html) == [], f"{name} ({url}) has executable payload markup"
    assert "probe" in client.get(pages["report"]).content.decode()  # the text is shown, inert
