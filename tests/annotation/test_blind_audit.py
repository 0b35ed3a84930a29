"""The blind audit (issue #37): the known attacks, run as an annotator, at chance on seeded blind
projects; the schedule attack beats chance when the seed is the constant it used to be.

The projects' reports have a style per system (each system's own vocabulary), so the style
attack would name the systems if any report of theirs could be read with its system attached;
a second annotator reads the same systems' reports on other tasks with their systems."""

import json
import random
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.blind_audit import blind_audit
from core.blind import _RESTRICTIONS
from annotation.models import AnnotationProject, Label
from annotation.services.projects import project_create
from tests.annotation_factories import agreement_project, annotator, curator, members_add
from tests.factories import ReportFactory, SystemFactory, TaskFactory

pytestmark = pytest.mark.django_db

SECRET = 2**61 + 987654321  # a seed as ``secret_seed`` draws it, fixed so the test is deterministic
TASK_IDS = 9_100_000  # far above the sequence's ids in a test database
WORDS = ["retrieval", "graph", "agent", "benchmark", "survey", "citation", "taxonomy", "language", "model",
         "dataset", "evaluation", "reasoning", "planning", "memory", "tool", "search", "summary", "vision"]


def _styled_text(system_index: int, task_index: int) -> str:
    rng = random.Random(f"{system_index}:{task_index}")
    vocabulary = WORDS[system_index * 3:system_index * 3 + 6]  # each system its own words
    sentences = [" ".join(rng.choice(vocabulary) for _ in range(12)) + "." for _ in range(8)]
    return f"# Survey {task_index}\n\n" + "\n".join(sentences)


def _styled_pairwise(owner, users, *, n_tasks=5, n_systems=5, name="styled") -> AnnotationProject:
    systems = [SystemFactory(name=f"system-{n}") for n in range(n_systems)]
    tasks = []
    for t in range(n_tasks + 2):  # two more tasks outside the project: other reports of the same systems
        # Fixed ids: a task's schedule is seeded by the project's seed and the task's id, so
        # with ids from the database's sequence each run of the suite audits another schedule.
        task = TaskFactory(protocol="surveylens", pk=TASK_IDS + t)
        for s, system in enumerate(systems):
            ReportFactory(task=task, system=system, text=_styled_text(s, t))
        tasks.append(task)
    project = project_create(name=name, kind="pairwise", created_by=owner, tasks=tasks[:n_tasks])
    members_add(project, owner, users)
    return project


def _attacks(report) -> dict:
    return {attack["name"]: attack for attack in report["attacks"]}


def test_no_attack_beats_chance_on_a_seeded_blind_pairwise_project(monkeypatch):
    monkeypatch.setattr("annotation.services.projects.secret_seed", lambda: SECRET)
    owner, author = curator(), annotator("author")
    project = _styled_pairwise(owner, [author])
    assert project.seed == SECRET
    out = StringIO()
    call_command("blind_audit", str(project.pk), "--json", stdout=out)
    attacks = _attacks(json.loads(out.getvalue()))
    assert set(attacks) == {"schedule", "style", "verdict", "timing"}
    print(attacks)
    assert attacks["schedule"]["trials"] == 25 and attacks["style"]["trials"] == 25  # one guess per report
    assert attacks["schedule"]["chance"] == pytest.approx(0.2)
    for attack in attacks.values():
        assert not attack["beats_chance"], attack
    assert not Label.objects.exists() and not project.assignments.exists()  # the audit keeps nothing


def test_the_schedule_attack_beats_chance_when_the_seed_is_constant(monkeypatch):
    """The pre-fix behaviour (a web-form project had seed 0): the attacker rebuilds the schedule."""
    monkeypatch.setattr("annotation.services.projects.secret_seed", lambda: 0)
    owner, author = curator(), annotator("author")
    project = _styled_pairwise(owner, [author])
    attacks = _attacks(blind_audit(project=project))
    print(attacks)
    assert attacks["schedule"]["beats_chance"] and attacks["schedule"]["hits"] == attacks["schedule"]["trials"]
    assert not attacks["style"]["beats_chance"]  # every report of the compared systems stays unattributed


def test_the_style_attack_beats_chance_when_reports_are_listed_with_their_systems(monkeypatch):
    """The pre-fix behaviour of ``/api/reports/``: the compared systems' other reports readable
    with their systems, and the 4-gram nearest neighbour names the sides."""
    monkeypatch.setattr("annotation.services.projects.secret_seed", lambda: SECRET)
    monkeypatch.setitem(_RESTRICTIONS, "report", lambda reports, user: reports)
    owner, author = curator(), annotator("author")
    project = _styled_pairwise(owner, [author])
    attacks = _attacks(blind_audit(project=project))
    print(attacks)
    assert attacks["style"]["beats_chance"] and not attacks["schedule"]["beats_chance"]


def test_no_attack_beats_chance_on_a_blind_agreement_project(monkeypatch):
    monkeypatch.setattr("annotation.services.projects.secret_seed", lambda: SECRET)
    owner, alice = curator(), annotator("alice")
    project = agreement_project(owner, [alice], labels=["correct", "omitted", "incorrect"] * 8, reveal="close")
    report = blind_audit(project=project)
    attacks = _attacks(report)
    print(attacks)
    assert attacks["verdict"]["trials"] == 24 and attacks["timing"]["trials"] >= 10
    for attack in attacks.values():
        assert not attack["beats_chance"], attack
    assert not Label.objects.exists()


def test_the_verdict_attack_beats_chance_when_label_answers_carry_judge_correct(monkeypatch):
    """The pre-fix label answers: ``judge_correct`` told whether the label equalled the hidden verdict."""
    monkeypatch.setattr("annotation.blind.DERIVED_FIELDS", ())
    owner, alice = curator(), annotator("alice")
    project = agreement_project(owner, [alice], labels=["correct", "omitted", "incorrect"] * 8, reveal="close")
    attacks = _attacks(blind_audit(project=project))
    print(attacks)
    assert attacks["verdict"]["beats_chance"]


def test_the_curator_page_runs_the_audit_and_annotators_cannot(client, monkeypatch):
    monkeypatch.setattr("annotation.services.projects.secret_seed", lambda: SECRET)
    owner, author = curator(), annotator("author")
    project = _styled_pairwise(owner, [author])
    url = f"/annotate/{project.pk}/blind-audit/"
    client.force_login(author)
    assert client.post(url).status_code == 403
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert "Run the attacks" in page and '<option value="author">' in page
    answer = client.post(url, {"as": "author"})
    assert answer.status_code == 200
    html = answer.content.decode()
    for name in ("schedule", "style", "verdict", "timing"):
        assert f"<td>{name}</td>" in html
    assert "beats chance</strong>" not in html
    assert not Label.objects.exists() and not project.assignments.exists()
