"""Stored judge vs people (``ProjectStatistics`` of kind ``judge_agreement``, ``judge_stored``): a
worker's figures equal the inline computation, a new label or an adjudication makes them
stale, a broker that refuses leaves the page serving, the section polls and offers "compute
here now" while no worker is alive, and a reader gets only the figures of the projects they
may see."""

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.dashboards import judge_stored
from annotation.dashboards.agreement import judge_agreement, judge_projects
from annotation.dashboards.inter_annotator import POLL_NO_WORKER_SECONDS, POLL_SECONDS
from annotation.dashboards.selectors import jsonable
from annotation.loop.settle import item_adjudicate
from annotation.models import AnnotationItem, ProjectStatistics, Role
from annotation.services.agreement import judge_statistics_settle
from annotation.tasks import refresh_judge_agreement
from core.models import WorkerHeartbeat
from tests.annotation.dashboards.test_stored_agreement import _label, _project
from tests.annotation_factories import annotator, curator, members_add

JUDGE = ProjectStatistics.Kind.JUDGE_AGREEMENT
SERVED = ("statistics", "pending", "poll_seconds")


@pytest.fixture
def sent(monkeypatch):
    """The messages asking a worker for judge figures: (scope key, countdown in seconds)."""
    found = []

    def apply_async(args, countdown=0, **kwargs):
        found.append((args[0], countdown))

    monkeypatch.setattr(refresh_judge_agreement, "apply_async", apply_async)
    return found


@pytest.fixture
def large(monkeypatch):
    monkeypatch.setattr(judge_stored, "INLINE_LABELS", 0)


def _worker_alive():
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="w@h", pid=1, started_at=now, last_seen=now)


def _read(user):
    return judge_statistics_settle(judge_stored.judge_agreement_read(user=user))


def _figures(read: dict) -> dict:
    return {k: v for k, v in read.items() if k not in SERVED}


def _oracle(user) -> dict:
    return jsonable(judge_agreement(user=user))


def _key(user) -> str:
    return judge_stored.judge_key(judge_stored.judge_parameters(judge_projects(user)))


def test_a_workers_figures_equal_the_inline_computation(db, monkeypatch, sent):
    owner = curator("je-boss")
    _project(owner, [annotator(f"je-{n}") for n in range(3)])
    inline = _read(owner)  # small: computed in the read, and stored
    assert inline["statistics"]["state"] == "current" and inline["groups"] and sent == []
    assert _figures(inline) == _oracle(owner)

    ProjectStatistics.objects.filter(kind=JUDGE).delete()
    monkeypatch.setattr(judge_stored, "INLINE_LABELS", 0)
    _worker_alive()
    waiting = _read(owner)
    assert waiting["pending"] and waiting["groups"] == [] and waiting["statistics"]["state"] == "updating"
    key = _key(owner)
    assert sent == [(key, 0)]

    assert refresh_judge_agreement(key) == "refreshed"  # what the worker runs
    stored = ProjectStatistics.objects.get(kind=JUDGE, scope=key)
    assert stored.values == _oracle(owner) and stored.requested_at is None and stored.seconds > 0
    served = _read(owner)
    assert served["statistics"]["state"] == "current" and _figures(served) == _figures(inline)
    assert refresh_judge_agreement("0" * 64) == "missing"


def test_a_new_label_and_an_adjudication_each_make_the_figures_stale(db, large, sent):
    owner = curator("js-boss")
    users = [annotator(f"js-{n}") for n in range(2)]
    late = annotator("js-late")
    project, items = _project(owner, users)
    members_add(project, owner, [late])
    _worker_alive()
    key = _key(owner)
    _read(owner)
    refresh_judge_agreement(key)
    first = _read(owner)
    assert first["statistics"]["state"] == "current"

    def stale_then_refreshed():
        row = _read(owner)
        assert row["statistics"]["state"] == "updating" and not row["pending"]  # stored figures meanwhile
        refresh_judge_agreement(key)
        fresh = _read(owner)
        assert fresh["statistics"]["state"] == "current" and _figures(fresh) == _oracle(owner)
        return fresh

    _label(items[1], late, "incorrect")  # a new label
    row = _read(owner)
    assert row["statistics"]["of_labels"] == 2 * len(items) and row["statistics"]["n_labels"] == 2 * len(items) + 1
    added = stale_then_refreshed()
    assert sum(g["n_labels"] for g in added["groups"]) == sum(g["n_labels"] for g in first["groups"]) + 1

    disputed = items[4]  # its annotators disagree (``_project``): with the late label it is complete, in dispute
    _label(disputed, late, "correct")
    labelled = stale_then_refreshed()
    disputed.refresh_from_db()
    assert disputed.status == AnnotationItem.Status.COMPLETE
    item_adjudicate(item=disputed, curator=owner, value={"label": "omitted"})  # a gold label settles the dispute
    adjudicated = stale_then_refreshed()
    assert sum(g["unresolved"] for g in adjudicated["groups"]) == sum(g["unresolved"] for g in labelled["groups"]) - 1


def test_a_broker_that_refuses_leaves_the_page_serving_and_asks_again(db, large, monkeypatch, client):
    owner = curator("jb-boss")
    _project(owner, [annotator("jb-1"), annotator("jb-2")])
    _worker_alive()

    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(refresh_judge_agreement, "apply_async", refuse)
    client.force_login(owner)
    for url in (reverse("dashboards:agreement"), reverse("dashboards:agreement_judge"),
                reverse("dashboards:agreement") + "?format=csv", reverse("api:dashboard-agreement")):
        assert client.get(url).status_code == 200, url
    section = client.get(reverse("dashboards:agreement_judge")).content.decode()
    assert 'data-state="updating"' in section and 'data-role="judge-pending"' in section
    assert not ProjectStatistics.objects.filter(kind=JUDGE, requested_at__isnull=False).exists()


def test_the_section_polls_and_offers_compute_here_only_for_the_readers_own_figures(db, large, sent, client):
    owner = curator("jp-boss")
    project, _ = _project(owner, [annotator("jp-1"), annotator("jp-2")], name="graded by the judge")
    other_curator = annotator("jp-other")
    other, _ = _project(owner, [annotator("jp-3"), annotator("jp-4")], name="other grades")
    members_add(other, owner, [other_curator], role=Role.CURATOR)
    fragment = reverse("dashboards:agreement_judge")
    compute = reverse("dashboards:judge_compute_here")
    key = _key(owner)

    client.force_login(owner)
    page = client.get(reverse("dashboards:agreement")).content.decode()
    assert 'id="judge-section"' in page and 'data-state="no_worker"' in page and "no worker is running" in page
    assert f'hx-get="{fragment}" hx-trigger="every {POLL_NO_WORKER_SECONDS}s"' in page
    assert f'action="{compute}"' in page and f'name="scope" value="{key}"' in page

    client.force_login(other_curator)  # another reader's figures: as missing, whatever is stored
    section = client.get(fragment).content.decode()
    assert "graded by the judge" not in section and key not in section
    assert client.post(compute, {"scope": key}).status_code == 404
    assert client.post(compute, {"scope": "x"}).status_code == 400

    client.force_login(owner)
    assert client.post(compute, {"scope": key}).status_code == 302
    stored = ProjectStatistics.objects.get(kind=JUDGE, scope=key)
    assert stored.values == _oracle(owner) and {g["judge"] for g in stored.values["groups"]}
    section = client.get(fragment).content.decode()
    assert 'data-state="current"' in section and "data-polling" not in section and 'id="judge-agreement"' in section

    _worker_alive()
    assert client.post(compute, {"scope": key}).status_code == 409  # a worker computes them
    item = AnnotationItem.objects.filter(project=project).order_by("position").first()
    late = annotator("jp-late")
    members_add(project, owner, [late])
    _label(item, late)
    section = client.get(fragment).content.decode()
    assert f'hx-get="{fragment}" hx-trigger="every {POLL_SECONDS}s"' in section
    assert 'data-state="updating"' in section and 'id="judge-agreement"' in section
    api = client.get(reverse("api:dashboard-agreement")).json()["judge"]
    assert api["statistics"]["state"] == "updating" and "waiting" not in api and "computed_here" not in api


def test_an_annotator_labelling_blind_reaches_no_judge_figures(db, sent, client):
    from tests.annotation_factories import agreement_project

    owner = curator("jx-boss")
    _project(owner, [annotator("jx-1"), annotator("jx-2")])
    key = _key(owner)
    client.force_login(owner)
    assert client.get(reverse("dashboards:agreement_judge")).status_code == 200  # stored by this read
    blind_one = annotator("jx-blind")
    agreement_project(owner, [blind_one], name="blind grades", blind=True)
    client.force_login(blind_one)
    for url in (reverse("dashboards:agreement_judge"), reverse("api:dashboard-agreement")):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("dashboards:judge_compute_here"), {"scope": key}).status_code == 403
