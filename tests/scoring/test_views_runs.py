"""The evaluation run pages: permissions, the new-run form, live progress, cancel/resume, score cards."""

import re
from datetime import timedelta

import pytest
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone

from core.models import WorkerHeartbeat
from scoring.metrics import checklist_scores, threshold_from_clip_factor
from scoring.models import EvaluationRun, JudgeConfig, LLMCall, RunJob, ScoreCard
from scoring.services.run_finish import run_finalize
from scoring.services.runs import job_execute, run_create, run_start
from tests.annotation_factories import annotator, curator
from tests.factories import ReportFactory, TaskFactory
from tests.scoring.services.fakes import ScriptedJudge, deepsynth_runs, systems

pytestmark = pytest.mark.django_db
Job = RunJob.Status


@pytest.fixture
def setup():
    """Two DeepSynth tasks × two systems (4 reports, 4 jobs), an offline judge configuration."""
    return deepsynth_runs(systems(2))


@pytest.fixture
def curator_client(client):
    client.force_login(curator("cur"))
    return client


@pytest.fixture
def annotator_client(client):
    client.force_login(annotator("ann"))
    return client


def started_run(setup) -> EvaluationRun:
    run = run_create(protocol="deepsynth", judge_config=setup["config"], systems=setup["systems"],
                     tasks=[c.task for c in setup["checklists"]])
    return run_start(run=run, enqueue=False)


def job_ids(run) -> list[int]:
    return list(run.jobs.order_by("pk").values_list("pk", flat=True))


def text_of(response, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</', response.content.decode())
    assert match, f"#{element_id} is missing"
    return match.group(1).strip()


# --- permissions -------------------------------------------------------------------------------


def test_anonymous_users_are_sent_to_the_login_page(client, setup):
    run = started_run(setup)
    for url in (reverse("runs:list"), reverse("runs:new"), reverse("runs:detail", args=[run.pk]),
                reverse("runs:progress", args=[run.pk])):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    response = client.post(reverse("runs:cancel", args=[run.pk]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    run.refresh_from_db()
    assert run.status == "running"


def test_an_annotator_reads_runs_but_cannot_start_cancel_or_resume_them(annotator_client, setup, sent):
    run = started_run(setup)
    for url in (reverse("runs:list"), reverse("runs:detail", args=[run.pk]), reverse("runs:progress", args=[run.pk])):
        assert annotator_client.get(url).status_code == 200, url
    detail = annotator_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="cancel-run"' not in detail and 'id="resume-run"' not in detail
    assert 'id="new-run"' not in annotator_client.get(reverse("runs:list")).content.decode()

    assert annotator_client.get(reverse("runs:new")).status_code == 403
    post = {"protocol": "deepsynth", "judge_config": setup["config"].pk, "systems": [s.pk for s in setup["systems"]],
            "tasks": [setup["checklists"][0].task.pk]}
    assert annotator_client.post(reverse("runs:new"), post).status_code == 403
    assert EvaluationRun.objects.count() == 1

    assert annotator_client.post(reverse("runs:cancel", args=[run.pk])).status_code == 403
    run.refresh_from_db()
    assert run.status == "running" and run.jobs.filter(status=Job.PENDING).count() == 4
    assert annotator_client.post(reverse("runs:resume", args=[run.pk])).status_code == 403
    assert sent == []


def test_actions_refuse_get(curator_client, setup):
    run = started_run(setup)
    assert curator_client.get(reverse("runs:cancel", args=[run.pk])).status_code == 405
    assert curator_client.get(reverse("runs:resume", args=[run.pk])).status_code == 405
    assert curator_client.get(reverse("runs:detail", args=[run.pk + 1000])).status_code == 404
    assert curator_client.post(reverse("runs:cancel", args=[run.pk + 1000])).status_code == 404


# --- the new-run form --------------------------------------------------------------------------


def _post(client, data):
    return client.post(reverse("runs:new"), data)


def test_the_form_starts_a_run_and_enqueues_its_jobs(curator_client, setup, sent, django_capture_on_commit_callbacks):
    tasks = [c.task for c in setup["checklists"]]
    data = {"name": "pilot", "protocol": "deepsynth", "judge_config": setup["config"].pk,
            "systems": [s.pk for s in setup["systems"]], "tasks": [t.pk for t in tasks]}
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(curator_client, data)
    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("runs:detail", args=[run.pk])
    assert (run.name, run.protocol, run.status, run.created_by.username) == ("pilot", "deepsynth", "running", "cur")
    assert set(run.tasks.all()) == set(tasks) and set(run.systems.all()) == set(setup["systems"])
    assert sorted(sent) == sorted(("execute", pk) for pk in job_ids(run)) and len(sent) == 4


@pytest.mark.django_db(transaction=True)  # the commit, and with it the send, happens inside the request
def test_the_form_keeps_a_run_the_broker_did_not_take_and_says_so(curator_client, setup, monkeypatch):
    from kombu.exceptions import OperationalError

    def down(job_id):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("scoring.tasks.execute_job.delay", down)
    data = {"protocol": "deepsynth", "judge_config": setup["config"].pk,
            "systems": [s.pk for s in setup["systems"]], "tasks": [c.task.pk for c in setup["checklists"]]}
    response = _post(curator_client, data)
    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("runs:detail", args=[run.pk])
    assert (run.status, run.jobs_unsent) == ("running", True)
    page = curator_client.get(response["Location"]).content.decode()
    assert "cannot be reached" in page and "Connection refused" in page


def test_the_form_offers_what_fits_the_protocol_and_htmx_swaps_the_choices(curator_client, setup):
    rb_task = TaskFactory(protocol="reportbench", key="2312.04861")
    rb_system = ReportFactory(task=rb_task).system
    page = curator_client.get(reverse("runs:new")).content.decode()
    assert "2312.04861" not in page and setup["checklists"][0].task.key in page
    assert rb_system.label not in page and "scripted-judge" in page and "[heuristic]" in page
    fragment = curator_client.get(reverse("runs:new"), {"protocol": "reportbench"}, HTTP_HX_REQUEST="true")
    body = fragment.content.decode()
    assert fragment.status_code == 200 and "<html" not in body and body.lstrip().startswith('<div id="run-choices">')
    assert "2312.04861" in body and rb_system.label in body
    assert setup["checklists"][0].task.key not in body and setup["systems"][0].label not in body


@pytest.mark.parametrize(
    "change, field, message",
    [
        ({"systems": []}, "systems", "choose at least one system to evaluate"),
        ({"tasks": []}, "task_set", "choose a task set or at least one task"),
        ({"judge_config": ""}, "judge_config", "This field is required."),
        ({"protocol": "nope"}, "protocol", "Select a valid choice. nope is not one of the available choices."),
    ],
)
def test_the_form_shows_errors_next_to_the_fields_and_creates_nothing(curator_client, setup, change, field, message):
    data = {"protocol": "deepsynth", "judge_config": setup["config"].pk,
            "systems": [s.pk for s in setup["systems"]], "tasks": [setup["checklists"][0].task.pk], **change}
    response = _post(curator_client, data)
    assert response.status_code == 400
    assert response.context["form"].errors[field] == [message]
    html = response.content.decode()
    field_html = html[html.index(f'id="field-{field}"'):]
    assert f'id="errors-{field}"' in field_html[:field_html.index("</div>")]
    assert not EvaluationRun.objects.exists() and not RunJob.objects.exists()


def test_the_form_refuses_foreign_tasks_systems_without_reports_and_both_task_kinds(curator_client, setup):
    from benchmark.models import TaskSet

    base = {"protocol": "deepsynth", "judge_config": setup["config"].pk, "systems": [s.pk for s in setup["systems"]]}
    foreign = TaskFactory(protocol="reportbench")
    response = _post(curator_client, {**base, "tasks": [foreign.pk]})
    assert response.context["form"].errors["tasks"] == [f"task {foreign.pk} is not a task of the chosen protocol"]

    idle = systems(3)[2]
    response = _post(curator_client, {**base, "systems": [idle.pk], "tasks": [setup["checklists"][0].task.pk]})
    assert response.context["form"].errors["systems"] == [
        f"system {idle.pk} has no report on a task of the chosen protocol"]

    task_set = TaskSet.objects.create(name="pilot")
    task_set.tasks.set([setup["checklists"][0].task])
    response = _post(curator_client, {**base, "task_set": task_set.pk, "tasks": [setup["checklists"][1].task.pk]})
    assert response.context["form"].errors["task_set"] == ["choose either a task set or tasks, not both"]
    assert not EvaluationRun.objects.exists()


def test_a_refusal_of_run_create_lands_on_its_field(curator_client, setup):
    """Each system has reports, but not on the chosen task: the service refuses, nothing is stored."""
    lonely = TaskFactory(protocol="deepsynth", key="lonely")
    only_there = ReportFactory(task=lonely).system
    data = {"protocol": "deepsynth", "judge_config": setup["config"].pk, "systems": [only_there.pk],
            "tasks": [setup["checklists"][0].task.pk]}
    response = _post(curator_client, data)
    assert response.status_code == 400
    assert response.context["form"].errors["systems"] == [
        "none of these systems has a report on these tasks: nothing to evaluate"]
    assert not EvaluationRun.objects.exists() and not RunJob.objects.exists()


# --- live progress -----------------------------------------------------------------------------


def test_the_progress_fragment_of_a_running_run(curator_client, setup, django_assert_max_num_queries):
    run = started_run(setup)
    judge = ScriptedJudge(setup["config"])
    first, *rest = job_ids(run)
    assert job_execute(job_id=first, judge=judge, enqueue=False) == "done"
    start = timezone.now() - timedelta(seconds=40)
    RunJob.objects.filter(pk=first).update(started_at=start, finished_at=start + timedelta(seconds=25))
    RunJob.objects.filter(pk=rest[0]).update(status=Job.RUNNING, started_at=timezone.now())
    RunJob.objects.filter(pk=rest[1]).update(status=Job.FAILED, error="JudgeError: the endpoint said 500",
                                             started_at=start, finished_at=start + timedelta(seconds=5))

    with django_assert_max_num_queries(10):
        response = curator_client.get(reverse("runs:progress", args=[run.pk]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "<html" not in body
    assert 'hx-trigger="every 2s"' in body and f'hx-get="{reverse("runs:progress", args=[run.pk])}"' in body
    assert text_of(response, "run-status") == "Running"
    assert text_of(response, "fig-done") == "1 / 4"
    assert (text_of(response, "fig-failed"), text_of(response, "fig-running"), text_of(response, "fig-pending")) == (
        "1", "1", "1")
    # ETA = the run's pace (first start to last settled end, 25 s, over 2 settled jobs: 12.5 s)
    # × 2 jobs left = 25 s
    assert text_of(response, "fig-eta") == "25 s"
    # The scripted judge answered two calls (one per checklist group), each costing 0.01.
    assert len(judge.calls) == 2
    tokens_in = sum(100 * len(c.variables["items"]) + 1 for c in judge.calls)
    tokens_out = sum(10 * len(c.variables["items"]) for c in judge.calls)
    assert text_of(response, "fig-calls") == "2"
    assert text_of(response, "fig-tokens") == f"{tokens_in} / {tokens_out}"
    assert text_of(response, "fig-cost") == "$0.0200"
    assert 'id="failed-jobs"' in body and "JudgeError: the endpoint said 500" in body
    assert 'id="system-cards"' not in body  # no score before the run has finished
    assert 'id="cancel-run"' in body and 'id="resume-run"' not in body  # resume only once the run stopped


def test_polling_stops_once_the_run_has_finished(curator_client, setup):
    run = started_run(setup)
    judge = ScriptedJudge(setup["config"])
    for pk in job_ids(run):
        job_execute(job_id=pk, judge=judge, enqueue=False)
    run_finalize(run=run)
    response = curator_client.get(reverse("runs:progress", args=[run.pk]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "hx-trigger" not in body and 'id="fig-eta"' not in body
    assert text_of(response, "run-status") == "Finished" and text_of(response, "fig-done") == "4 / 4"
    assert 'id="system-cards"' in body and 'id="report-cards"' in body  # the poll that sees the end brings the scores
    assert 'id="cancel-run"' not in body and 'id="resume-run"' not in body


# --- cancel and resume -------------------------------------------------------------------------


def test_cancel_and_resume_through_the_page(curator_client, setup, sent, django_capture_on_commit_callbacks):
    run = started_run(setup)
    first, *rest = job_ids(run)
    job_execute(job_id=first, judge=ScriptedJudge(setup["config"]), enqueue=False)

    response = curator_client.post(reverse("runs:cancel", args=[run.pk]), follow=True)
    assert response.redirect_chain == [(reverse("runs:detail", args=[run.pk]), 302)]
    assert f"Run #{run.pk} cancelled." in response.content.decode()
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert dict(run.jobs.values_list("pk", "status")) == {first: Job.DONE, **{pk: Job.CANCELLED for pk in rest}}
    assert text_of(response, "fig-cancelled") == "3" and 'id="resume-run"' in response.content.decode()

    again = curator_client.post(reverse("runs:cancel", args=[run.pk]), follow=True)
    assert f"run #{run.pk} is cancelled; only a pending or running run can be cancelled" in again.content.decode()
    run.refresh_from_db()
    assert run.status == "cancelled"

    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(reverse("runs:resume", args=[run.pk]), follow=True)
    assert f"Run #{run.pk} resumed." in response.content.decode()
    run.refresh_from_db()
    assert run.status == "running"
    assert dict(run.jobs.values_list("pk", "status")) == {first: Job.DONE, **{pk: Job.PENDING for pk in rest}}
    assert sorted(sent) == [("execute", pk) for pk in rest]
    assert 'hx-trigger="every 2s"' in response.content.decode()


# --- score cards -------------------------------------------------------------------------------


def test_the_finished_run_shows_every_metric_of_its_score_cards(curator_client, setup, django_assert_max_num_queries):
    cl = setup["checklists"][0]
    g, c = cl.general_items, cl.constraint_items
    labels = {g[0].id: "correct", g[1].id: "correct", g[2].id: "omitted", g[3].id: "incorrect", c[4].id: "omitted",
              c[0].id: "incorrect"}
    run = started_run(setup)
    judge = ScriptedJudge(setup["config"], labels=labels)
    for pk in job_ids(run):
        job_execute(job_id=pk, judge=judge, enqueue=False)
    run = run_finalize(run=run)
    assert run.status == "finished"

    # Independently: DeepSynth-Eval on the same labels (1 correct, 0 omitted, -1 incorrect).
    score = {"correct": 1, "omitted": 0, "incorrect": -1}
    theta = threshold_from_clip_factor(len(c), 0.8)  # the constraint group's clip factor
    general = [score[labels.get(i.id, "correct")] for i in g]
    constraint = [score[labels.get(i.id, "correct")] for i in c]
    scripted = checklist_scores([
        {"kind": "general", "verdicts": general, "threshold": None},
        {"kind": "constraint", "verdicts": constraint, "threshold": theta},
    ])
    perfect = checklist_scores([{"kind": "general", "verdicts": [1] * 4},
                                {"kind": "constraint", "verdicts": [1] * 5, "threshold": theta}])
    a = setup["systems"][0]
    stored = ScoreCard.objects.get(run=run, system=a, report__task=cl.task).metrics
    assert stored["overall"] == pytest.approx(scripted["overall"]) and stored["precision"] == pytest.approx(
        scripted["precision"])

    with django_assert_max_num_queries(14):
        response = curator_client.get(reverse("runs:detail", args=[run.pk]))
    html = response.content.decode()
    assert 'hx-trigger' not in html
    system_table = html[html.index('id="system-cards"'):html.index('id="report-cards"')]
    # metrics as rows, systems as columns: system a's cells are those marked with its name
    cells = dict(re.findall(rf'data-system="{a}" data-metric="(\w+)"[^>]*>([^<]*)</td>', system_table))
    expected_overall = (scripted["overall"] + perfect["overall"]) / 2
    assert cells["overall"] == f"{expected_overall:.1f}"
    assert cells["general"] == f"{(scripted['general'] + perfect['general']) / 2:.1f}"
    assert cells["constraint"] == f"{(scripted['constraint'] + perfect['constraint']) / 2:.1f}"
    # precision: eq. 7 pooled over both reports' mentioned items (DeepSynth §3.4), not the mean of the two
    pooled = 100 * (scripted["correct"] + perfect["correct"]) / (
        scripted["correct"] + scripted["incorrect"] + perfect["correct"] + perfect["incorrect"])
    assert cells["precision"] == f"{pooled:.1f}" != f"{(scripted['precision'] + perfect['precision']) / 2:.1f}"
    assert "Precision = <strong>pooled</strong>" in html
    assert cells["reports"] == "2"
    counts = dict(re.findall(rf'data-system="{a}" data-count="(\w+)">(\d+)</td>', system_table))
    assert counts == {"items_judged": "18", "items_failed": "0"}  # 2 reports × 9 checklist items
    headers = re.findall(r'<tr data-metric="(\w+)"', system_table)
    system_card = ScoreCard.objects.get(run=run, system=a, report=None)
    numeric = {k for k, v in system_card.metrics.items() if not isinstance(v, dict)}
    assert set(headers) == numeric and headers[:4] == ["overall", "general", "constraint", "precision"]
    assert "heuristic scores" in system_table

    report_table = html[html.index('id="report-cards"'):]
    report = ScoreCard.objects.get(run=run, system=a, report__task=cl.task).report
    assert f'href="{reverse("benchmark:report_detail", args=[report.pk])}"' in report_table
    report_row = report_table[report_table.index(f'data-report="{report.pk}"'):]
    report_cells = dict(re.findall(r'data-metric="(\w+)"[^>]*>([^<]*)</td>', report_row[:report_row.index("</tr>")]))
    assert report_cells["overall"] == f"{scripted['overall']:.1f}"
    assert "correct" not in report_cells  # one group of columns at a time: the headline metrics first
    assert len(re.findall(r"<tr data-system=", report_table)) == 4
    assert re.findall(r'data-group="([\w-]+)"', report_table) == ["headline", "counts"]
    counts_table = curator_client.get(reverse("runs:detail", args=[run.pk]), {"metrics": "counts"}).content.decode()
    counts_table = counts_table[counts_table.index('id="report-cards"'):]
    report_row = counts_table[counts_table.index(f'data-report="{report.pk}"'):]
    report_cells = dict(re.findall(r'data-metric="(\w+)"[^>]*>([^<]*)</td>', report_row[:report_row.index("</tr>")]))
    assert report_cells["correct"] == str(scripted["correct"]) and report_cells["incorrect"] == str(
        scripted["incorrect"])
    assert "overall" not in report_cells


# --- the list ----------------------------------------------------------------------------------


def test_the_run_list_is_newest_first_with_usage_and_a_bounded_query_count(curator_client, setup,
                                                                             django_assert_max_num_queries):
    openai = JudgeConfig.objects.create(name="gpt-judge", backend="openai", model="gpt-4.1-mini")
    runs = [started_run(setup) for _ in range(3)]
    judge = ScriptedJudge(setup["config"])
    for pk in job_ids(runs[0]):
        job_execute(job_id=pk, judge=judge, enqueue=False)
    for _ in range(27):
        run_create(protocol="deepsynth", judge_config=openai, systems=setup["systems"],
                   tasks=[setup["checklists"][0].task])
    with django_assert_max_num_queries(12):
        response = curator_client.get(reverse("runs:list"))
    page = response.context["page"]
    assert page.paginator.count == 30 and len(response.context["rows"]) == 25
    newest = EvaluationRun.objects.order_by("-created_at", "-pk").first()
    assert page[0] == newest and newest.judge_config == openai

    second = curator_client.get(reverse("runs:list"), {"page": 2})
    html = second.content.decode()
    row = html[html.index(f'id="run-{runs[0].pk}"'):]
    row = row[:row.index("</tr>")]
    usage = LLMCall.objects.filter(run=runs[0]).aggregate(tin=Sum("tokens_in"), tout=Sum("tokens_out"))
    assert 'value="4" max="4"' in row and ">4/4<" in row
    assert f">{len(judge.calls)}<" in row and f"{usage['tin']} / {usage['tout']}" in row
    assert "$0.0800" in row and ">heuristic</span>" in row and "2 tasks" in row
    first_page = response.content.decode()
    gpt_row = first_page[first_page.index(f'id="run-{newest.pk}"'):]
    assert ">heuristic</span>" not in gpt_row[:gpt_row.index("</tr>")]


def test_the_list_warns_when_runs_are_queued_and_no_worker_is_alive(annotator_client, setup):
    assert 'id="queued-banner"' not in annotator_client.get(reverse("runs:list")).content.decode()
    started_run(setup)
    html = annotator_client.get(reverse("runs:list")).content.decode()
    assert 'id="queued-banner"' in html and "1 run is waiting" in html
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="celery@box", pid=1, started_at=now, last_seen=now)
    assert 'id="queued-banner"' not in annotator_client.get(reverse("runs:list")).content.decode()


def test_a_pending_run_made_elsewhere_is_started_from_its_page(curator_client, setup, sent,
                                                              django_capture_on_commit_callbacks):
    from django.test import Client

    reader = Client()
    reader.force_login(annotator("ann"))
    run = run_create(protocol="deepsynth", judge_config=setup["config"], systems=setup["systems"],
                     tasks=[setup["checklists"][0].task])
    page = curator_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="start-run"' in page and 'id="resume-run"' not in page
    assert 'id="start-run"' not in reader.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert reader.post(reverse("runs:start", args=[run.pk])).status_code == 403
    run.refresh_from_db()
    assert run.status == "pending" and not sent

    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(reverse("runs:start", args=[run.pk]), follow=True)
    assert f"Run #{run.pk} started." in response.content.decode()
    run.refresh_from_db()
    assert run.status == "running" and sorted(sent) == [("execute", pk) for pk in job_ids(run)]
    again = curator_client.post(reverse("runs:start", args=[run.pk]), follow=True)
    assert f"run #{run.pk} is running; only a pending run starts" in again.content.decode()


def test_the_form_names_tasks_lacking_reports_before_starting(curator_client, setup, sent,
                                                             django_capture_on_commit_callbacks):
    partial = TaskFactory(protocol="deepsynth", key="partial")
    ReportFactory(task=partial, system=setup["systems"][0])  # the second system wrote nothing on it
    data = {"protocol": "deepsynth", "judge_config": setup["config"].pk,
            "systems": [s.pk for s in setup["systems"]],
            "tasks": [setup["checklists"][0].task.pk, partial.pk]}
    response = _post(curator_client, data)
    assert response.status_code == 400
    html = response.content.decode()
    assert f"<li><strong>partial</strong>: {setup['systems'][1].label}</li>" in html
    assert "1 task lacks reports of some chosen systems" in response.context["form"].errors["accept_missing"][0]
    assert not EvaluationRun.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        accepted = _post(curator_client, {**data, "accept_missing": "on"})
    assert accepted.status_code == 302
    assert EvaluationRun.objects.count() == 1


# --- duplicate runs (issue 38) -------------------------------------------------------------------


def _run_body(setup, **extra):
    return {"protocol": "deepsynth", "judge_config": setup["config"].pk,
            "systems": [s.pk for s in setup["systems"]], "tasks": [c.task.pk for c in setup["checklists"]], **extra}


def test_the_api_refuses_a_duplicate_of_a_running_or_finished_run_naming_it_unless_forced(curator_client, setup, sent):
    first = started_run(setup)
    response = curator_client.post("/api/runs/", _run_body(setup, start=True), content_type="application/json")
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["duplicate_of"]["id"] == first.pk and f"run #{first.pk}" in body["detail"]
    assert body["duplicate_of"]["url"] == reverse("runs:detail", args=[first.pk])
    assert EvaluationRun.objects.count() == 1
    first.status = EvaluationRun.Status.FINISHED
    first.save(update_fields=["status"])
    assert curator_client.post("/api/runs/", _run_body(setup), content_type="application/json").status_code == 409
    # another system set, another task set, or force: a new run
    fewer = _run_body(setup, systems=[setup["systems"][0].pk])
    assert curator_client.post("/api/runs/", fewer, content_type="application/json").status_code == 201
    forced = curator_client.post("/api/runs/", _run_body(setup, force=True), content_type="application/json")
    assert forced.status_code == 201 and forced.json()["id"] != first.pk
    assert EvaluationRun.objects.count() == 3


def test_a_changed_judge_configuration_or_a_cancelled_run_is_no_duplicate(curator_client, setup, sent):
    first = started_run(setup)
    first.status = EvaluationRun.Status.CANCELLED
    first.save(update_fields=["status"])
    assert curator_client.post("/api/runs/", _run_body(setup), content_type="application/json").status_code == 201
    second = EvaluationRun.objects.exclude(pk=first.pk).get()
    second.status = EvaluationRun.Status.FINISHED
    second.save(update_fields=["status"])
    config = setup["config"]
    config.prompt_version = "v2"
    config.save()  # the run was made with prompts v1: v2 is another run
    assert curator_client.post("/api/runs/", _run_body(setup), content_type="application/json").status_code == 201


def test_the_form_names_the_duplicate_and_offers_to_start_it_anyway(curator_client, setup, sent):
    first = started_run(setup)
    data = _run_body(setup, name="again")
    refused = _post(curator_client, data)
    page = refused.content.decode()
    assert refused.status_code == 400 and EvaluationRun.objects.count() == 1
    assert f"run #{first.pk}" in page and 'name="force"' in page
    assert reverse("runs:detail", args=[first.pk]) in page
    forced = _post(curator_client, {**data, "force": "on"})
    assert forced.status_code == 302 and EvaluationRun.objects.count() == 2
