"""Stored human rankings (``ProjectStatistics`` of kind ``human_ranking``, ``human_stored``): a
worker's figures equal the inline computation on the same preferences, a new label / undo /
renamed system makes them stale, many labels cost one computation, a broker that refuses leaves
the pages serving, the pages say when the figures were computed and poll while new ones are due,
and who may see the pages is what it was."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.dashboards import human, human_stored
from annotation.dashboards.inter_annotator import POLL_NO_WORKER_SECONDS, POLL_SECONDS
from annotation.dashboards.selectors import jsonable
from annotation.loop.claims import claim_next_item
from annotation.loop.labels import label_submit
from annotation.loop.undo import label_undo_last
from annotation.models import PairwisePreference, ProjectStatistics
from annotation.services.agreement import DEBOUNCE_SECONDS, ranking_statistics_settle
from annotation.tasks import refresh_human_ranking
from benchmark.models import System
from core.models import WorkerHeartbeat
from tests.annotation.dashboards.builders import deepsynth_run, preferences, run_tasks
from tests.annotation_factories import agreement_project, annotator, curator, members_add, pairwise_project, token

RANKING = ProjectStatistics.Kind.HUMAN_RANKING
SERVED = ("statistics", "pending", "poll_seconds", "inline_preferences", "ratings", "design")


@pytest.fixture
def sent(monkeypatch):
    """The messages asking a worker for a ranking: (scope key, countdown in seconds)."""
    found = []

    def apply_async(args, countdown=0, **kwargs):
        found.append((args[0], countdown))

    monkeypatch.setattr(refresh_human_ranking, "apply_async", apply_async)
    return found


@pytest.fixture
def large(monkeypatch):
    """Every scope counts as large: its ranking is a worker's."""
    monkeypatch.setattr(human_stored, "INLINE_PREFERENCES", 0)


def _worker_alive():
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="w@h", pid=1, started_at=now, last_seen=now)


def _study(owner, users, *, name="ranked"):
    """A pairwise project (not blind: labels may be undone) whose ``users`` label every pair they
    are given, the later system mostly winning."""
    project = pairwise_project(owner, users, n_tasks=2, n_systems=3, name=name, blind=False, overlap=len(users) + 1)
    for k, user in enumerate(users):
        n = 0
        while (claim := claim_next_item(project=project, user=user)) is not None:
            choice = ("left", "right", "right", "tie")[(n + k) % 4]
            label_submit(item=claim.item, annotator=user, value={"choice": choice}, client_token=token())
            n += 1
    return project


def _label_one(project, user, choice="left"):
    claim = claim_next_item(project=project, user=user)
    label_submit(item=claim.item, annotator=user, value={"choice": choice}, client_token=token())


def _read(**options):
    """What a page or the API does: read, then store what was computed and ask for what is due."""
    return ranking_statistics_settle(human_stored.human_ranking_read(**options))


def _figures(read: dict) -> dict:
    return {k: v for k, v in read.items() if k not in SERVED}


def _oracle(**options) -> dict:
    """``human.ranking_figures`` run here on the preferences, as an inline read computes them."""
    return jsonable(human.ranking_figures(**options))


def _key(**options) -> str:
    return human_stored.ranking_key(human_stored.ranking_parameters(**options))


def _correlated():
    """Preferences on a DeepSynth run's tasks: the ranking carries correlations with its metrics."""
    run, systems = deepsynth_run()
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run))
    return {"scope": human.Scope(protocol="deepsynth")}


@pytest.mark.parametrize("options", [{}, {"by": "annotator", "prior": "weak", "cluster": "topic"}, "correlated"])
def test_a_workers_figures_equal_the_inline_computation(db, monkeypatch, sent, options):
    if options == "correlated":
        options = _correlated()
    else:
        _study(curator("eq-boss"), [annotator(f"eq-{n}") for n in range(3)])
    inline = _read(**options)  # small: computed in the read, and stored
    assert inline["statistics"]["state"] == "current" and not inline["pending"] and sent == []
    assert _figures(inline) == _oracle(**options) and inline["systems"]
    if "scope" in options:
        assert inline["correlations"]

    ProjectStatistics.objects.filter(kind=RANKING).delete()
    monkeypatch.setattr(human_stored, "INLINE_PREFERENCES", 0)
    _worker_alive()
    waiting = _read(**options)
    assert waiting["pending"] and waiting["systems"] == [] and waiting["statistics"]["state"] == "updating"
    key = _key(**options)
    assert sent == [(key, 0)]  # never computed: at once

    assert refresh_human_ranking(key) == "refreshed"  # what the worker runs
    stored = ProjectStatistics.objects.get(kind=RANKING, scope=key)
    assert stored.values == _oracle(**options) and stored.requested_at is None and stored.seconds > 0
    served = _read(**options)
    assert served["statistics"]["state"] == "current" and served["statistics"]["computed_at"] == stored.computed_at
    assert _figures(served) == _figures(inline)  # the same figures as computed inline
    assert len(sent) == 1  # current: nothing asked
    assert refresh_human_ranking("0" * 64) == "missing"


def test_a_new_label_an_undo_and_a_renamed_system_each_make_the_figures_stale(db, large, sent):
    owner = curator("v-boss")
    users = [annotator(f"v-{n}") for n in range(2)]
    late = annotator("v-late")
    project = _study(owner, users)
    members_add(project, owner, [late])
    _worker_alive()
    scope = human.Scope(project=project.pk)
    key = _key(scope=scope)
    _read(scope=scope)
    refresh_human_ranking(key)
    first = _read(scope=scope)
    n = PairwisePreference.objects.filter(project=project).count()
    assert first["statistics"]["state"] == "current" and first["statistics"]["of_preferences"] == n

    def stale_then_refreshed():
        row = _read(scope=scope)
        assert row["statistics"]["state"] == "updating"
        assert not row["pending"] and row["systems"]  # the stored figures meanwhile, marked with what they are of
        refresh_human_ranking(key)
        fresh = _read(scope=scope)
        assert fresh["statistics"]["state"] == "current"
        assert _figures(fresh) == _oracle(scope=scope)
        return fresh

    _label_one(project, late, "right")  # a new label: a new preference
    row = _read(scope=scope)
    assert row["statistics"]["of_preferences"] == n and row["statistics"]["n_preferences"] == n + 1
    added = stale_then_refreshed()
    assert added["n_comparisons"] == first["n_comparisons"] + 1

    label_undo_last(annotator=late, project=project)  # the undo deletes its preference: back to the first figures
    assert _figures(stale_then_refreshed()) == _figures(first)

    _label_one(project, late, "left")  # undo, then another label: same count, newer preference
    relabelled = stale_then_refreshed()
    assert relabelled["n_comparisons"] == added["n_comparisons"]

    system = System.objects.filter(reports__task__in=project.tasks.all()).distinct().first()
    system.display_name = "Renamed system"
    system.save()
    assert any(s["system"] == "Renamed system" for s in stale_then_refreshed()["systems"])


def test_many_labels_cost_one_computation(db, large, sent, client):
    owner = curator("d-boss")
    users = [annotator(f"d-{n}") for n in range(2)]
    late = annotator("d-late")
    project = _study(owner, users)
    members_add(project, owner, [late])
    _worker_alive()
    client.force_login(owner)
    page = f"{reverse('dashboards:human')}?project={project.pk}"
    key = _key(scope=human.Scope(project=project.pk))
    client.get(page)
    refresh_human_ranking(key)  # computed just now
    sent.clear()

    while claim_next_item(project=project, user=late) is not None:  # labels arriving while the page polls
        _label_one(project, late)
        assert client.get(page, HTTP_HX_REQUEST="true").status_code == 200
    assert len(sent) == 1  # one message, however many labels and polls
    [(asked, countdown)] = sent
    assert asked == key and DEBOUNCE_SECONDS - 5 < countdown <= DEBOUNCE_SECONDS  # not before a minute
    refresh_human_ranking(key)  # one computation reads them all
    assert _figures(_read(scope=human.Scope(project=project.pk))) == _oracle(scope=human.Scope(project=project.pk))

    # a request whose worker died is taken for lost after a while and made again
    label_undo_last(annotator=late, project=project)
    client.get(page)
    client.get(page)
    assert len(sent) == 2
    ProjectStatistics.objects.filter(kind=RANKING, scope=key).update(requested_at=timezone.now() - timedelta(hours=1))
    client.get(page)
    assert len(sent) == 3


def test_a_workers_recovery_asks_for_stored_rankings_whose_preferences_changed(db, large, sent):
    from core.jobs import jobs_recover

    owner = curator("r-boss")
    late = annotator("r-late")
    project = _study(owner, [annotator("r-1"), annotator("r-2")])
    members_add(project, owner, [late])
    scope = human.Scope(project=project.pk)
    key = _key(scope=scope)
    assert jobs_recover(lost=[])["ranking_figures_asked"] == 0  # no scope was ever asked for
    _read(scope=scope)
    assert [asked for asked, _ in sent] == [key]
    assert jobs_recover(lost=[])["ranking_figures_asked"] == 0  # pending: no second message
    refresh_human_ranking(key)
    assert jobs_recover(lost=[])["ranking_figures_asked"] == 0  # current: nothing to do

    _label_one(project, late)  # nobody opens the page
    assert jobs_recover(lost=[])["ranking_figures_asked"] == 1
    assert sent[-1][0] == key and DEBOUNCE_SECONDS - 5 < sent[-1][1] <= DEBOUNCE_SECONDS
    refresh_human_ranking(key)
    assert ProjectStatistics.objects.get(kind=RANKING, scope=key).values == _oracle(scope=scope)


def test_a_broker_that_refuses_leaves_the_pages_serving_and_asks_again(db, large, monkeypatch, client):
    owner = curator("b-boss")
    project = _study(owner, [annotator("b-1"), annotator("b-2")])
    _worker_alive()

    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(refresh_human_ranking, "apply_async", refuse)
    client.force_login(owner)
    for url in (reverse("dashboards:human"), f"{reverse('dashboards:human')}?project={project.pk}",
                reverse("dashboards:leaderboard") + "?protocol=surveylens",
                reverse("dashboards:chart_human_vs_auto") + "?protocol=surveylens",
                reverse("api:dashboard-human"), reverse("api:dashboard-chart-human-vs-automated")):
        response = client.get(url)
        assert response.status_code == 200, url
    page = client.get(reverse("dashboards:human")).content.decode()
    assert 'data-state="updating"' in page and 'data-role="ranking-pending"' in page
    assert not ProjectStatistics.objects.filter(kind=RANKING, requested_at__isnull=False).exists()  # asked again next time


def test_the_pages_show_when_the_figures_were_computed_poll_while_due_and_offer_compute_here(
        db, large, sent, client):
    owner = curator("p-boss")
    reader = annotator("p-reader")
    late = annotator("p-late")
    project = _study(owner, [annotator("p-1"), annotator("p-2")])
    members_add(project, owner, [late])
    url = reverse("dashboards:human")
    compute = reverse("dashboards:human_compute_here")
    key = _key(scope=human.Scope())

    # no worker alive: the page says so and polls; a curator may compute here, a reader may not
    client.force_login(reader)
    page = client.get(url).content.decode()
    assert 'data-state="no_worker"' in page and "no worker is running" in page and "not computed yet" in page
    assert f'hx-get="{url}" hx-trigger="every {POLL_NO_WORKER_SECONDS}s" hx-select="#human-figures"' in page
    assert f'action="{compute}"' not in page
    assert client.post(compute, {"scope": key, "next": url}).status_code == 403
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert f'action="{compute}"' in page and f'name="scope" value="{key}"' in page
    assert client.post(compute, {"scope": "x"}).status_code == 400
    assert client.post(compute, {"scope": "f" * 64}).status_code == 404
    assert client.post(compute, {"scope": key, "next": "https://elsewhere.example/"})["Location"] == url
    stored = ProjectStatistics.objects.get(kind=RANKING, scope=key)
    assert stored.values == _oracle()
    assert client.post(compute, {"scope": key, "next": url}).status_code == 429  # once per five minutes

    page = client.get(url).content.decode()
    assert 'data-state="current"' in page and "data-polling" not in page and 'id="human-ranking"' in page
    shown = f"{stored.computed_at:%Y-%m-%d %H:%M:%S} UTC"
    assert f'computed <time datetime="{stored.computed_at.isoformat()}">{shown}</time>' in page

    # a new label with a worker alive: the stored figures, marked, and the figures poll
    _worker_alive()
    assert client.post(compute, {"scope": key, "next": url}).status_code == 409  # the worker computes them
    n = PairwisePreference.objects.count()
    _label_one(project, late)
    page = client.get(url).content.decode()
    assert f'hx-get="{url}" hx-trigger="every {POLL_SECONDS}s"' in page and 'id="human-ranking"' in page
    assert 'data-state="updating"' in page and "new figures are due from a worker" in page
    assert f"of {n} preferences" in page and f"{n + 1} preferences now" in page

    # the API carries the same state
    api = client.get(reverse("api:dashboard-human")).json()
    assert api["statistics"]["state"] == "updating" and api["statistics"]["n_preferences"] == n + 1
    assert api["systems"] and "computed_here" not in api and "waiting" not in api


def test_the_leaderboard_and_the_scatter_serve_the_stored_ranking(db, large, sent, client):
    run, systems = deepsynth_run()
    preferences(systems=systems, protocol="deepsynth", tasks=run_tasks(run))
    _worker_alive()
    client.force_login(curator("l-boss"))
    board = f"{reverse('dashboards:leaderboard')}?protocol=deepsynth"
    scatter = f"{reverse('dashboards:chart_human_vs_auto')}?protocol=deepsynth"
    for url in (board, scatter):
        page = client.get(url).content.decode()
        assert 'data-role="ranking-pending"' in page and 'data-state="updating"' in page, url
    assert len(sent) == 2  # the leaderboard's side (no correlations) and the scatter's ranking
    for key, _ in sent:
        refresh_human_ranking(key)
    page = client.get(board).content.decode()
    assert 'id="human-side"' in page and "ranking-pending" not in page and "data-polling" not in page
    page = client.get(scatter).content.decode()
    assert 'id="chart-csv"' in page and "ranking-pending" not in page
    answer = client.get(reverse("api:dashboard-chart-human-vs-automated"), {"protocol": "deepsynth"}).json()
    assert answer["correlation"]["points"] and answer["statistics"]["state"] == "current"
    assert {k: v for k, v in answer.items() if k != "statistics"} == jsonable(human.human_vs_automated(
        scope=human.Scope(protocol="deepsynth")))


def test_who_may_see_the_ranking_is_unchanged(db, sent, client):
    owner = curator("x-boss")
    _study(owner, [annotator("x-1"), annotator("x-2")])
    blind_one = annotator("x-blind")
    agreement_project(owner, [blind_one], name="blind grades", blind=True)  # still labelling blind
    key = _key(scope=human.Scope())
    client.force_login(owner)
    assert client.get(reverse("dashboards:human")).status_code == 200  # stored by this read
    client.force_login(blind_one)
    for url in (reverse("dashboards:human"), reverse("dashboards:leaderboard"), reverse("dashboards:chart_human_vs_auto"),
                reverse("api:dashboard-human")):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("dashboards:human_compute_here"), {"scope": key}).status_code == 403
    client.logout()
    assert client.get(reverse("dashboards:human")).status_code == 302  # to the sign-in page
