"""The shared pages say what varies by kind through the kind (its templates and sentences,
``annotation.kinds.base``): the adjudication queue, the keyboard help, the blind project's reveal
line and the labels hidden until the study closes, rendered for each of the four kinds."""

import html
import re

import pytest
from django.urls import reverse

from annotation.services.projects import project_create
from tests.annotation_factories import (agreement_project, annotator, checklist_task, curator, label_all,
                                        members_add, pairwise_project, verify_project)
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db


def _rating_project(owner, users, **options):
    task = TaskFactory()
    for n in range(2):
        ReportFactory(task=task, system=SystemFactory(name=f"system-{n}"))
    project = project_create(name="rating", kind="rating", created_by=owner, tasks=[task],
                             criteria=["coverage", "structure"], **options)
    members_add(project, owner, users)
    return project


def _project(kind, owner, users):
    """A blind project of ``kind`` with k = 2 whose first item two annotators labelled apart."""
    if kind == "verify":
        task, _ = checklist_task(2)
        return verify_project(owner, users, tasks=[task], blind=True)
    if kind == "pairwise":
        return pairwise_project(owner, users, overlap=2, blind=True)
    if kind == "agreement":
        return agreement_project(owner, users, labels=["correct", "correct"], overlap=2, blind=True)
    return _rating_project(owner, users, overlap=2, blind=True)


DISAGREEING = {
    "verify": ({"decision": "accept"}, {"decision": "reject", "reason": "ambiguous", "note": "vague"}),
    "pairwise": ({"choice": "left", "reason": "clearer structure"}, {"choice": "right", "reason": "more citations"}),
    "agreement": ({"label": "correct"}, {"label": "omitted", "correction": "not in §2"}),
    "rating": ({"scores": {"coverage": 1, "structure": 2}}, {"scores": {"coverage": 5, "structure": 4}}),
}

# What each kind's own parts say on the pages (the shared parts are the same for all).
ADJUDICATION_TARGET = {
    "verify": r"<p><strong>[^<]+</strong> <span class=\"muted small\">Checklist item · version 1</span></p>",
    "pairwise": r"<p>Report \d+ vs report \d+ <span class=\"muted small\">\(leg 1\)</span></p>",
    "agreement": r"<blockquote class=\"ws-judged-text\">.*</blockquote>\s*<p><span class=\"muted\">The judge:</span>",
    "rating": r"<p>Report \d+ <span class=\"muted small\">\(system-\d\)</span></p>",
}
ADJUDICATED_WHEN = {
    "verify": "the labels disagree, or an agreed decision could not be applied.",
    "pairwise": "the labels disagree.",
    "agreement": "the labels disagree (with each other or with the judge).",
    "rating": "the labels disagree.",
}
HELP = {"verify": "Verify proposals", "pairwise": "Pairwise preferences", "agreement": "Judge verdicts",
        "rating": "Rubric ratings"}
REVEAL = {
    "verify": "Blind: others' labels and which report and system each item is about are revealed to an annotator"
              " after each label they give",
    "pairwise": "Blind: others' labels and which systems wrote the reports are revealed to an annotator when the"
                " study closes",
    "agreement": "Blind: others' labels, the judge's verdict and which report and system each item is about are"
                 " revealed to an annotator after each label they give",
    "rating": "Blind: others' labels and which report and system each item is about are revealed to an annotator"
              " when the study closes",
}
HIDDEN_UNTIL_CLOSE = {"pairwise": "Other labels and the systems stay hidden until the study closes.",
                      "rating": "Other labels stay hidden until the study closes."}  # the others reveal at each label


def text(response) -> str:
    assert response.status_code == 200
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


@pytest.fixture
def pages(client):
    def render(kind: str) -> dict[str, str]:
        owner, alice, bob, carol = curator("owner"), annotator("alice"), annotator("bob"), annotator("carol")
        project = _project(kind, owner, [alice, bob, carol])
        item = project.items.order_by("position").first()
        label_all(item, [alice, bob], *DISAGREEING[kind])
        client.force_login(owner)
        out = {"adjudication": text(client.get(reverse("annotation:adjudication", args=[project.pk]))),
               "progress": text(client.get(reverse("annotation:progress", args=[project.pk])))}
        client.force_login(carol)
        out["workspace"] = text(client.get(reverse("annotation:workspace", args=[project.pk])))
        client.force_login(alice)
        out["own item"] = text(client.get(reverse("annotation:item", args=[project.pk, item.pk])))
        return out

    return render


@pytest.mark.parametrize("kind", ["verify", "pairwise", "agreement", "rating"])
def test_each_kind_says_its_own_part_of_the_shared_pages(pages, kind):
    shown = pages(kind)
    adjudication = shown["adjudication"]
    assert re.search(ADJUDICATION_TARGET[kind], adjudication), adjudication
    assert f'<strong data-testid="adj-count">1</strong> item where {ADJUDICATED_WHEN[kind]}' in adjudication
    # verify's gold value names a reject's reason; a pairwise label's reason is the annotator's words
    assert ('class="adj-reason ws-opts"' in adjudication) == (kind == "verify")
    assert ('<p class="muted small">clearer structure</p>' in adjudication) == (kind == "pairwise")
    assert 'rows="2"' in adjudication and "rows=\"[" not in adjudication  # the note, not the page's rows
    for other, title in HELP.items():
        assert (f"<h3>{title}</h3>" in shown["workspace"]) == (other == kind), other
    assert "<h3>Adjudication</h3>" in adjudication and "<h3>Everywhere</h3>" not in adjudication
    assert REVEAL[kind] in shown["progress"]
    hidden = re.search(r'data-testid="hidden-until-close">([^<]*)<', shown["own item"])
    assert (hidden.group(1) if hidden else None) == HIDDEN_UNTIL_CLOSE.get(kind)
