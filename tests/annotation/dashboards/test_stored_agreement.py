"""Stored inter-annotator agreement (``ProjectStatistics``): a worker's figures equal the inline
computation on the same labels, a new label / undo / relabel / declared level makes them stale,
many labels cost one computation, the page says when they were computed and polls while new
ones are due, and nobody sees stored figures of a project they may not see."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.dashboards import inter_annotator as iaa
from annotation.dashboards.agreement import curated_projects, project_ratings, ratings_stats
from annotation.dashboards.selectors import jsonable
from annotation.models import AnnotationItem, AnnotationProject, ProjectStatistics, Role
from annotation.services.agreement import DEBOUNCE_SECONDS, agreement_statistics_settle
from annotation.loop.labels import label_submit
from annotation.loop.undo import label_undo_last
from annotation.services.values import label_numbers
from annotation.tasks import refresh_project_agreement
from core.models import WorkerHeartbeat
from tests.annotation_factories import agreement_project, annotator, curator, members_add, token

N_VERDICTS = 30
LABELS = ("correct", "omitted", "incorrect")


@pytest.fixture
def sent(monkeypatch):
    """The messages asking a worker for figures: (project id, countdown in seconds)."""
    found = []

    def apply_async(args, countdown=0, **kwargs):
        found.append((args[0], countdown))

    monkeypatch.setattr(refresh_project_agreement, "apply_async", apply_async)
    return found


@pytest.fixture
def large(monkeypatch):
    """Every project counts as large: its figures are a worker's."""
    monkeypatch.setattr(iaa, "INLINE_LABELS", 0)


def _worker_alive():
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="w@h", pid=1, started_at=now, last_seen=now)


def _project(owner, users, *, name="stored", **options):
    """Verdicts labelled by ``users`` (some disagreements), one item left open for a late annotator."""
    project = agreement_project(owner, users, labels=[LABELS[n % 3] for n in range(N_VERDICTS)],
                                overlap=len(users) + 1, name=name, blind=False, **options)
    items = list(AnnotationItem.objects.filter(project=project).order_by("position", "id"))
    for n, item in enumerate(items):
        for k, user in enumerate(users):
            label = LABELS[(n + (k if n % 4 == 0 else 0)) % 3]
            label_submit(item=item, annotator=user, value={"label": label}, client_token=token())
    return project, items


def _label(item, user, label="correct"):
    label_submit(item=item, annotator=user, value={"label": label}, client_token=token())


def _row(project):
    return iaa.inter_annotator(user=project.created_by)["projects"][0]


def _oracle(project) -> dict:
    """``ratings_stats`` run here on the project's labels, as an inline read computes it."""
    [row] = curated_projects(None, with_fingerprint=True, only=project.pk)
    ratings = project_ratings(row)
    numbers = label_numbers(level=row["label_level"], label_set=row["label_set"], labels=ratings.categories)
    return jsonable(ratings_stats(ratings, level=row["label_level"], numbers=numbers))


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_a_workers_figures_equal_the_inline_computation(db, monkeypatch, sent, level):
    owner = curator("st-boss")
    users = [annotator(f"st-{n}") for n in range(3)]
    project, _ = _project(owner, users, label_level=level)
    inline = _row(project)  # small: computed in the read
    assert inline["statistics"]["state"] == "current" and inline["stats"]["n_labels"] == 3 * N_VERDICTS
    if level == "ordinal":
        assert "kappa_linear" in inline["stats"]["pairs"][0]

    monkeypatch.setattr(iaa, "INLINE_LABELS", 0)
    _worker_alive()
    waiting = agreement_statistics_settle(iaa.inter_annotator(user=owner))["projects"][0]
    assert waiting["stats"] is None and waiting["statistics"]["state"] == "updating"
    assert sent == [(project.pk, 0)]  # never computed: at once

    assert refresh_project_agreement(project.pk) == "refreshed"  # what the worker runs
    stored = ProjectStatistics.objects.get(project=project)
    assert stored.values == _oracle(project) and stored.requested_at is None and stored.seconds > 0
    served = _row(project)
    assert served["statistics"]["state"] == "current"
    assert served["statistics"]["computed_at"] == stored.computed_at
    assert served["stats"] == inline["stats"]  # the same figures, the same names
    assert refresh_project_agreement(10**9) == "missing"


def test_a_new_label_an_undo_a_relabel_and_the_declared_level_each_make_the_figures_stale(db, large, sent):
    owner = curator("v-boss")
    users = [annotator(f"v-{n}") for n in range(2)]
    late = annotator("v-late")
    project, items = _project(owner, users)
    members_add(project, owner, [late])
    _worker_alive()
    refresh_project_agreement(project.pk)
    first = _row(project)
    assert first["statistics"]["state"] == "current"

    def stale_then_refreshed():
        row = _row(project)
        assert row["statistics"]["state"] == "updating"
        assert row["stats"] is not None  # the stored figures meanwhile, marked with what they are of
        refresh_project_agreement(project.pk)
        fresh = _row(project)
        assert fresh["statistics"]["state"] == "current"
        assert fresh["stats"] == iaa.named_stats(_oracle(project), {u.pk: u.username for u in [*users, late]})
        return fresh

    _label(items[0], late, "correct")  # a new label
    added = stale_then_refreshed()
    assert added["stats"]["n_labels"] == first["stats"]["n_labels"] + 1
    assert added["statistics"]["of_labels"] == added["statistics"]["n_labels"] == 2 * N_VERDICTS + 1

    label_undo_last(annotator=late, project=project)  # the undo: back to the first figures
    assert stale_then_refreshed()["stats"] == first["stats"]

    _label(items[0], late, "incorrect")  # undo, then a different label: same count, newer label
    relabelled = stale_then_refreshed()
    assert relabelled["stats"] != added["stats"] and relabelled["stats"]["n_labels"] == added["stats"]["n_labels"]

    AnnotationProject.objects.filter(pk=project.pk).update(label_level="ordinal")  # what the figures read of it
    assert stale_then_refreshed()["stats"]["level"] == "ordinal"


def test_many_labels_cost_one_computation(db, large, sent, client):
    owner = curator("d-boss")
    users = [annotator(f"d-{n}") for n in range(2)]
    late = annotator("d-late")
    project, items = _project(owner, users)
    members_add(project, owner, [late])
    _worker_alive()
    client.force_login(owner)
    refresh_project_agreement(project.pk)  # computed just now

    for item in items:  # labels arriving while the curator's page polls
        _label(item, late)
        assert client.get(reverse("dashboards:agreement_inter_annotator")).status_code == 200
    assert len(sent) == 1  # one message, however many labels and polls
    [(project_id, countdown)] = sent
    assert project_id == project.pk and DEBOUNCE_SECONDS - 5 < countdown <= DEBOUNCE_SECONDS  # not before a minute
    refresh_project_agreement(project.pk)  # one computation reads them all
    assert _row(project)["stats"]["n_labels"] == 3 * N_VERDICTS

    # a request whose worker died is taken for lost after a while and made again
    label_undo_last(annotator=late, project=project)
    client.get(reverse("dashboards:agreement_inter_annotator"))
    assert len(sent) == 2
    client.get(reverse("dashboards:agreement_inter_annotator"))
    assert len(sent) == 2
    ProjectStatistics.objects.filter(project=project).update(requested_at=timezone.now() - timedelta(hours=1))
    client.get(reverse("dashboards:agreement_inter_annotator"))
    assert len(sent) == 3


def test_a_workers_recovery_asks_for_the_figures_once_labels_change_without_a_page_view(db, large, sent):
    from core.jobs import jobs_recover

    owner = curator("r-boss")
    users = [annotator(f"r-{n}") for n in range(2)]
    late = annotator("r-late")
    project, items = _project(owner, users, name="recovered")
    members_add(project, owner, [late])
    assert jobs_recover(lost=[])["agreement_figures_asked"] == 1  # never computed: asked for
    assert [project_id for project_id, _ in sent] == [project.pk]
    assert jobs_recover(lost=[])["agreement_figures_asked"] == 0  # pending: no second message
    refresh_project_agreement(project.pk)
    assert jobs_recover(lost=[])["agreement_figures_asked"] == 0  # current: nothing to do

    _label(items[0], late)  # nobody opens the page
    assert jobs_recover(lost=[])["agreement_figures_asked"] == 1
    (project_id, countdown) = sent[-1]
    assert project_id == project.pk and DEBOUNCE_SECONDS - 5 < countdown <= DEBOUNCE_SECONDS
    refresh_project_agreement(project.pk)
    assert ProjectStatistics.objects.get(project=project).values == _oracle(project)


def test_a_small_projects_figures_are_left_to_its_reader(db, sent):
    from core.jobs import jobs_recover

    _project(curator("s-boss"), [annotator("s-1"), annotator("s-2")], name="small")
    assert jobs_recover(lost=[])["agreement_figures_asked"] == 0 and sent == []


def test_a_broker_that_refuses_leaves_the_page_serving_and_asks_again(db, large, monkeypatch, client):
    owner = curator("b-boss")
    project, _ = _project(owner, [annotator("b-1"), annotator("b-2")])
    _worker_alive()

    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(refresh_project_agreement, "apply_async", refuse)
    client.force_login(owner)
    response = client.get(reverse("dashboards:agreement"))
    assert response.status_code == 200 and 'data-state="updating"' in response.content.decode()
    assert ProjectStatistics.objects.get(project=project).requested_at is None  # asked again next time


def test_the_page_shows_when_the_figures_were_computed_and_polls_while_new_ones_are_due(db, large, sent, client):
    owner = curator("p-boss")
    project, _ = _project(owner, [annotator("p-1"), annotator("p-2")])
    client.force_login(owner)
    fragment = reverse("dashboards:agreement_inter_annotator")

    # no worker alive: the page says so and offers to compute here
    page = client.get(reverse("dashboards:agreement")).content.decode()
    assert 'data-state="no_worker"' in page and "no worker is running" in page and "not computed yet" in page
    assert f'hx-get="{fragment}" hx-trigger="every {iaa.POLL_NO_WORKER_SECONDS}s"' in page
    compute = reverse("dashboards:agreement_compute_here")
    assert f'action="{compute}"' in page and f'name="project" value="{project.pk}"' in page
    assert client.post(compute, {"project": "x"}).status_code == 400
    assert client.post(compute, {"project": project.pk}).status_code == 302
    stored = ProjectStatistics.objects.get(project=project)
    assert stored.values == _oracle(project)

    page = client.get(reverse("dashboards:agreement")).content.decode()
    assert 'data-state="current"' in page and "data-polling" not in page
    assert f'data-computed-at="{stored.computed_at.isoformat()}"' in page
    shown = f"{stored.computed_at:%Y-%m-%d %H:%M:%S} UTC"
    assert f'computed <time datetime="{stored.computed_at.isoformat()}">{shown}</time>' in page

    # a new label with a worker alive: the stored figures, marked, and the section polls
    _worker_alive()
    item = AnnotationItem.objects.filter(project=project).order_by("position").first()
    late = annotator("p-late")
    members_add(project, owner, [late])
    _label(item, late)
    section = client.get(fragment).content.decode()
    assert 'id="iaa-section"' in section
    assert f'hx-get="{fragment}" hx-trigger="every {iaa.POLL_SECONDS}s"' in section
    assert 'data-state="updating"' in section and "new figures are due from a worker" in section
    assert f"of {2 * N_VERDICTS} labels" in section and f"{2 * N_VERDICTS + 1} labels now" in section

    # the API carries the same state
    api = client.get(reverse("api:dashboard-agreement")).json()["iaa"]["projects"][0]["statistics"]
    assert api["state"] == "updating" and api["n_labels"] == 2 * N_VERDICTS + 1
    assert "computed_here" not in client.get(reverse("api:dashboard-agreement")).json()["iaa"]


def test_nobody_sees_stored_figures_of_a_project_they_may_not_see(db, large, sent, client):
    owner = curator("x-boss")
    users = [annotator("x-1"), annotator("x-2")]
    project, _ = _project(owner, users, name="secret grades")
    refresh_project_agreement(project.pk)
    before = ProjectStatistics.objects.get(project=project)
    fragment = reverse("dashboards:agreement_inter_annotator")
    compute = reverse("dashboards:agreement_compute_here")

    # an annotator of the project, and the curator of another project only
    other_curator = annotator("x-other")
    other, _ = _project(owner, [annotator("x-3"), annotator("x-4")], name="other grades")
    members_add(other, owner, [other_curator], role=Role.CURATOR)
    for user in (users[0], other_curator):
        client.force_login(user)
        section = client.get(fragment).content.decode()
        assert "secret grades" not in section and f'data-project="{project.pk}"' not in section
        assert client.post(compute, {"project": project.pk}).status_code == 404
        api = client.get(reverse("api:dashboard-agreement")).json()["iaa"]["projects"]
        assert project.pk not in [p["id"] for p in api]
    assert ProjectStatistics.objects.get(project=project).computed_at == before.computed_at  # not recomputed
    client.force_login(other_curator)
    assert "other grades" in client.get(fragment).content.decode()

    # an annotator still labelling a blind project: no dashboard at all, stored or not
    blind_one = annotator("x-blind")
    blind = agreement_project(owner, [blind_one], name="blind grades", blind=True)
    client.force_login(blind_one)
    for url in (fragment, reverse("dashboards:agreement")):
        assert client.get(url).status_code == 403
    assert client.post(compute, {"project": project.pk}).status_code == 403
    assert client.get(reverse("api:dashboard-agreement")).status_code == 403
