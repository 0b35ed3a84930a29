"""Blind items carry no handle of a report or system before the study closes (issue 27, §1).

Every id that could name a report or a system is made distinctive (six digits starting with 9,
which nothing else in these small worlds reaches): the reports, their systems, the verdicts, the
judged rows and the pairs. An annotator of each blind kind then reads every answer the API and
the workspace give about their items — before labelling, and (where the project reveals only at
close) after labelling — and no such number, no key naming a report and no system name appears.
Closing the study reveals them; a project that says so reveals them after each label.
"""

import json
import re
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import AnnotationItem, AnnotationProject, PairwisePreference, ReportPair
from annotation.services.projects import project_create, project_update
from scoring.models import Verdict
from tests.annotation_factories import (
    JudgeConfigFactory,
    VerdictFactory,
    annotator,
    checklist_task,
    curator,
    label_all,
    members_add,
    verify_project,
)
from tests.api.conftest import client_for
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db

# A report, system, verdict, judged row or pair id here; not a fraction of a second nor part of a token.
HANDLE = re.compile(r"(?<![0-9A-Za-z.])9[0-9]{5}(?![0-9A-Za-z])")
SYSTEM_NAME = "Handlebot"
# Keys that name a report or a system; their value must be null while the item is blind.
NAMING_KEYS = {"report_id", "system", "system_label", "left_report_id", "right_report_id", "report_left",
               "report_right", "judged_id"}
BLIND_KINDS = ("verify", "pairwise", "agreement")
AT_CLOSE, AFTER_LABEL = "close", "label"  # AnnotationProject.Reveal


def _systems(n: int, offset: int) -> list:
    return [SystemFactory(id=930001 + offset + i, name=f"{SYSTEM_NAME}-{offset + i}", version="v1") for i in range(n)]


def _renumber_pairs(project) -> None:
    """Give the project's pairs distinctive ids (the items point at them by ``target_id``)."""
    offset = ReportPair.objects.filter(pk__gt=940000).count()
    for n, pair in enumerate(ReportPair.objects.filter(project=project, pk__lt=940000).order_by("pk")):
        new = 940001 + offset + n
        ReportPair.objects.filter(pk=pair.pk).update(id=new)
        AnnotationItem.objects.filter(project=project, target_kind="report_pair", target_id=pair.pk).update(
            target_id=new)


def blind_project(kind: str, owner, users, **options):
    if kind == "verify":
        task, _ = checklist_task(3)
        return verify_project(owner, users, tasks=[task], overlap=2, **options)
    task = TaskFactory(protocol="surveylens")
    offset = 10 * AnnotationProject.objects.count()  # each project's own block of distinctive ids
    if kind == "pairwise":
        for n, system in enumerate(_systems(3, offset)):
            ReportFactory(id=910001 + offset + n, task=task, system=system, text=f"# Survey\n\nText of side {n}.")
        project = project_create(name=f"pairs-{offset}", kind="pairwise", created_by=owner, tasks=[task], overlap=2,
                                 **options)
        _renumber_pairs(project)
    else:
        (system,) = _systems(1, offset)
        report = ReportFactory(id=910001 + offset, task=task, system=system, text="# Survey\n\nThe judged report.")
        judge = JudgeConfigFactory()
        for n, label in enumerate(("correct", "omitted", "correct")):
            VerdictFactory(id=920001 + offset + n, report=report, judge_config=judge, label=label,
                           target_id=950001 + offset + n)
        project = project_create(name=f"verdicts-{offset}", kind="agreement", created_by=owner, tasks=[task],
                                 judge_config=judge, overlap=2, label_set={"label": ["correct", "omitted", "incorrect"]},
                                 **options)
    members_add(project, owner, users)
    return project


def _walk(value, path="") -> list[str]:
    """Where a JSON answer names a report or a system: a naming key with a value, or a pair's or
    verdict's id (``target_id``, a target's ``id``)."""
    found = []
    if isinstance(value, dict):
        handle_target = value.get("kind") in ("report_pair", "verdict") or value.get("target_kind") in (
            "report_pair", "verdict")
        for key, field in value.items():
            # an item's own ``id`` sits beside its ``target_kind``; a target's ``id`` beside its ``kind``
            handle = handle_target and (key == "target_id" or (key == "id" and "target_kind" not in value))
            if field is not None and (key in NAMING_KEYS or handle):
                found.append(f"{path}.{key}={field!r}")
            found += _walk(field, f"{path}.{key}")
    elif isinstance(value, list):
        for n, field in enumerate(value):
            found += _walk(field, f"{path}[{n}]")
    return found


def _leaks(answers: dict[str, str]) -> dict[str, list[str]]:
    """answer name → what in it names a report or system (handles, naming keys, system names)."""
    out = {}
    for name, body in answers.items():
        found = [f"id {m.group()} in …{body[max(0, m.start() - 80):m.end() + 20]}…" for m in HANDLE.finditer(body)]
        found += [f"system name {SYSTEM_NAME}"] if SYSTEM_NAME in body else []
        if name.startswith("api"):
            found += _walk(json.loads(body))
        else:
            found += [key for key in ("left_report_id", "right_report_id", "report_id") if key in body]
        if found:
            out[name] = found
    return out


def _item_answers(user, project, item) -> dict[str, str]:
    """What the API and the workspace answer the user about ``item`` and their project."""
    api, html = client_for(user), Client()
    html.force_login(user)
    answers = {
        "api item": api.get(reverse("api:item-detail", kwargs={"pk": item.pk})),
        "api project items": api.get(reverse("api:project-items", kwargs={"pk": project.pk})),
        "api labels": api.get(reverse("api:label-list")),
        "api preferences": api.get(reverse("api:preference-list")),
        "workspace item page": html.get(reverse("annotation:item", kwargs={"project_id": project.pk,
                                                                           "item_id": item.pk})),
    }
    for side in {"pairwise": ("left", "right"), "agreement": ("report",)}.get(project.kind, ()):
        answers[f"api item {side}"] = api.get(reverse("api:item-side", kwargs={"pk": item.pk, "side": side}))
    for name, response in answers.items():
        assert response.status_code == 200, (name, response.status_code, response.content[:300])
    return {name: response.content.decode() for name, response in answers.items()}


OWN = {"verify": {"decision": "accept"}, "pairwise": {"choice": "left"}, "agreement": {"label": "correct"}}


@pytest.mark.parametrize("kind", BLIND_KINDS)
def test_a_blind_item_names_no_report_or_system_before_the_study_closes(kind):
    owner, ann, other = curator("owner"), annotator("ann"), annotator("other")
    project = blind_project(kind, owner, [ann, other])
    api, html = client_for(ann), Client()
    html.force_login(ann)
    claimed = api.post(reverse("api:project-next", kwargs={"pk": project.pk}))
    batch = api.post(reverse("api:project-next", kwargs={"pk": project.pk}) + "?count=3")
    page = html.get(reverse("annotation:workspace", kwargs={"project_id": project.pk}))
    item = AnnotationItem.objects.get(pk=claimed.json()["item"]["item"]["id"])
    label_all(item, [other], OWN[kind])  # another annotator's label: hidden too
    answers = {"api next": claimed.content.decode(), "api next?count=3": batch.content.decode(),
               "workspace (next item)": page.content.decode(), **_item_answers(ann, project, item)}
    assert _leaks(answers) == {}
    if kind == "pairwise":  # the sides' text is served through the item
        assert "Text of side" in json.loads(answers["api item left"])["text"]
        assert "Text of side" in answers["workspace item page"]

    # Labelling through the API names a side; sending report ids is refused whatever they are.
    for ids in ({"left_report_id": 910001, "right_report_id": 910002}, {"left_report_id": 1, "right_report_id": 2}):
        if kind == "pairwise":
            refused = api.post(reverse("api:label-list"), {"item": item.pk, "value": {**OWN[kind], **ids},
                                                           "client_token": str(uuid.uuid4())}, format="json")
            assert refused.status_code == 400 and "not accepted in a blind project" in refused.content.decode()
    given = api.post(reverse("api:label-list"), {"item": item.pk, "value": OWN[kind], "next": True,
                                                 "client_token": str(uuid.uuid4())}, format="json")
    assert given.status_code == 201, given.content
    if project.reveal == AT_CLOSE:  # pairwise by default: the label reveals nothing
        after = {"api label + next": given.content.decode(), **_item_answers(ann, project, item)}
        assert _leaks(after) == {}
        stored = PairwisePreference.objects.get(label__item=item, annotator=ann)  # the server resolved the side
        pair = ReportPair.objects.get(pk=item.target_id)
        assert (stored.report_left_id, stored.report_right_id, stored.choice) == (
            pair.report_left_id, pair.report_right_id, "left")
        project_update(project=project, actor=owner, status=AnnotationProject.Status.CLOSED)
        closed = _item_answers(ann, project, item)
        context = json.loads(closed["api item"])
        assert context["revealed"] is True and context["item"]["target_id"] == pair.pk
        assert {context["target"]["left"]["report_id"], context["target"]["right"]["report_id"]} == {
            pair.report_left_id, pair.report_right_id}
        assert context["target"]["left"]["system"].startswith(SYSTEM_NAME)
        assert json.loads(closed["api item left"])["report_id"] == pair.report_left_id
        own = [row for row in json.loads(closed["api labels"])["results"] if row["annotator"] == ann.pk]
        assert own[0]["value"]["left_report_id"] == pair.report_left_id
        assert {row["id"] for row in json.loads(closed["api preferences"])["results"]} == {stored.pk}


def test_closing_a_blind_study_is_final():
    owner = curator("owner")
    project = blind_project("pairwise", owner, [annotator("ann")])
    project_update(project=project, actor=owner, status=AnnotationProject.Status.CLOSED)
    with pytest.raises(ValueError, match="a closed blind study stays closed"):
        project_update(project=project, actor=owner, status=AnnotationProject.Status.OPEN)


@pytest.mark.parametrize("kind", ("pairwise", "agreement"))
def test_identities_after_a_label_hidden_by_default_in_pairwise_and_as_the_project_says(kind):
    """Pairwise projects reveal at close by default, agreement projects after the label (the
    judge's verdict is what they audit); either may say otherwise, on the API and the page."""
    owner, ann = curator("owner"), annotator("ann")
    default = blind_project(kind, owner, [ann])
    assert default.reveal == {"pairwise": AT_CLOSE, "agreement": AFTER_LABEL}[kind]
    flipped = {AT_CLOSE: AFTER_LABEL, AFTER_LABEL: AT_CLOSE}[default.reveal]
    for project in (default, blind_project(kind, owner, [ann], reveal=flipped)):
        project.refresh_from_db()
        item = project.items.order_by("position").first()
        label_all(item, [ann], OWN[kind])
        answers = _item_answers(ann, project, item)
        context = json.loads(answers["api item"])
        after_label = project.reveal == AFTER_LABEL
        assert context["revealed"] is after_label, project.reveal
        assert (_leaks(answers) == {}) is not after_label, _leaks(answers)
        if kind == "agreement":
            assert (context["judge"] is not None) is after_label
            verdict = Verdict.objects.get(pk=item.target_id)
            assert (context["target"]["report_id"] == verdict.report_id) is after_label
        html = Client()
        html.force_login(owner)
        page = html.get(reverse("annotation:edit", kwargs={"project_id": project.pk})).content.decode()
        said = {AT_CLOSE: "when the study closes", AFTER_LABEL: "after each label"}[project.reveal]
        assert said in page.lower(), page
        api = client_for(owner)
        listed = api.get(reverse("api:project-detail", kwargs={"pk": project.pk})).json()
        assert listed["reveal"] == project.reveal


def test_a_non_blind_project_keeps_its_ids_for_existing_clients():
    owner, ann = curator("owner"), annotator("ann")
    project = blind_project("pairwise", owner, [ann], blind=False)
    item = project.items.order_by("position").first()
    api = client_for(ann)
    context = api.get(reverse("api:item-detail", kwargs={"pk": item.pk})).json()
    pair = ReportPair.objects.get(pk=item.target_id)
    assert context["target"]["left"]["report_id"] == pair.report_left_id and context["item"]["target_id"] == pair.pk
    swapped = {"choice": "left", "left_report_id": pair.report_right_id, "right_report_id": pair.report_left_id}
    given = api.post(reverse("api:label-list"), {"item": item.pk, "value": swapped, "client_token": str(uuid.uuid4())},
                     format="json")
    assert given.status_code == 201 and given.json()["value"]["left_report_id"] == pair.report_right_id
