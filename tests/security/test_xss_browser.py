"""Stored XSS in a real browser: pages showing payload-laden fields run none of the payloads."""

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from annotation.models import AnnotationItem, AnnotationProject, Role
from annotation.services.projects import membership_add
from tests.annotation_factories import submit_held, token
from tests.security.test_xss import plant
from tests.security.xss_payloads import ALL, PAYLOADS
from tests.support.browser import SCREENSHOTS

pytestmark = pytest.mark.django_db(transaction=True)

# Counts calls of the payloads' probe() (none must happen) before any page script runs.
PROBE = "window.__probes = []; window.probe = (id) => window.__probes.push(String(id));"

# Payload markup that made it into the DOM as markup, not text.
SCAN = """() => {
  const problems = [];
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase(), value = attr.value || '';
      if (name.startsWith('on') && value.includes('probe')) problems.push(`<${el.tagName} ${name}>`);
      if (['href', 'src', 'action', 'formaction'].includes(name) && /^\\s*javascript:/i.test(value))
        problems.push(`<${el.tagName} ${name}=${value}>`);
    }
    if (el.tagName === 'SCRIPT' && el.textContent.includes('probe')) problems.push('<script> with probe');
  }
  return {problems, probes: window.__probes};
}"""


def session_cookie(user, live_server) -> dict:
    client = Client()
    client.force_login(user)
    return {"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
            "url": live_server.url}


def plant_annotation(world) -> dict:
    """Payloads in an annotation project's name and in two disagreeing labels' notes (→ adjudication)."""
    project = world.project_a
    AnnotationProject.objects.filter(pk=project.pk).update(name=PAYLOADS[1])
    membership_add(project=project, user=world.users["ann_b"], role=Role.ANNOTATOR, actor=world.users["curator"])
    item = world.item_a
    submit_held(item=item, annotator=world.users["ann_a"], value={"label": "correct", "note": ALL},
                 client_token=token())
    submit_held(item=item, annotator=world.users["ann_b"], value={"label": "omitted", "note": ALL},
                 client_token=token())
    item.refresh_from_db()
    assert item.status != AnnotationItem.Status.OPEN  # two disagreeing labels: off to adjudication
    pid = project.pk
    return {
        "projects": reverse("annotation:project_list"),
        "workspace": reverse("annotation:workspace", kwargs={"project_id": pid}),
        "item": reverse("annotation:item", kwargs={"project_id": pid, "item_id": item.pk}),
        "progress": reverse("annotation:progress", kwargs={"project_id": pid}),
        "adjudication": reverse("annotation:adjudication", kwargs={"project_id": pid}),
        "dashboards": reverse("dashboards:index"),
        "leaderboard": reverse("dashboards:leaderboard"),
        "human": reverse("dashboards:human"),
        "agreement": reverse("dashboards:agreement"),
    }


def test_no_payload_runs_in_chromium(world, live_server, browser):
    pages = {**plant(world), **plant_annotation(world)}
    # Curators do not label in a blind project (its workspace refuses them): ann_a opens it.
    viewers = {"curator": {k: v for k, v in pages.items() if k != "workspace"},
               "ann_a": {k: pages[k] for k in ("workspace", "item", "projects", "task")}}
    dialogs = []
    for username, urls in viewers.items():
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.add_init_script(PROBE)
        context.add_cookies([session_cookie(world.users[username], live_server)])
        page = context.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        try:
            for name, url in urls.items():
                response = page.goto(live_server.url + url)
                assert response.status == 200, f"{username} {name} ({url}): {response.status}"
                assert "/login/" not in page.url
                page.mouse.move(200, 300)  # give hover handlers their chance
                page.wait_for_timeout(100)
                found = page.evaluate(SCAN)
                assert found == {"problems": [], "probes": []}, f"{username} {name} ({url}): {found}"
                if username == "curator" and name == "report":
                    assert "xss-probe-1" in page.content()  # the payload is shown, as text
                    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(SCREENSHOTS / "xss-report-detail.png"), full_page=True)
        finally:
            context.close()
    assert dialogs == []
