"""Authorization matrix: every API route and every HTML page × every kind of user.

Routes are enumerated from the URLconf, so a route added without an entry here fails
``test_every_route_has_a_matrix_entry``. A cell is the expected status code. Unsafe requests
carry a body that is valid in shape but changes nothing harmful (or is invalid), so an allowed
user gets 200/201/400/409 and a refused one 403/404.
"""

import uuid
import weakref

from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.api.conftest import USER_KINDS, client_for

# Columns: anon, ann_a (annotator of A), ann_b (annotator of B), viewer (viewer of A), curator, admin.
READ = (403, 200, 200, 200, 200, 200)
CURATE = (403, 403, 403, 403, 400, 400)  # an empty body: curators reach validation, others are refused
PROJECT_A_READ = (403, 200, 404, 200, 200, 200)
# An item of blind project A that ann_a neither holds nor labelled: out of reach for its
# annotators and viewers, the same 404 as a missing item (#37; with a claim: test_blind_reach.py).
ITEM_A_READ = (403, 404, 404, 404, 200, 200)
ITEM_A_PAGE = (302, 404, 404, 404, 200, 200)
PAGE = (302, 200, 200, 200, 200, 200)
# Scores and rankings: closed to ann_a and ann_b, who still have items to label in blind projects
# (annotation.middleware); the viewer labels nothing.
RANKING = (403, 403, 403, 200, 200, 200)
RANKING_PAGE = (302, 403, 403, 200, 200, 200)
RANKING_POST_ONLY = (405, 403, 403, 405, 405, 405)  # the gate answers before the method check


def _pk(name):
    return lambda w: {"pk": w.objs[name].pk}


OWN_EXPORT = (403, 404, 404, 404, 200, 200)


def _export(w):
    """A finished annotation export of project A, asked for by the curator (built once per world)."""
    if "export" not in w.objs:
        from annotation.models import ExportJob
        from annotation.services.exports import export_execute, exports_dir

        job = ExportJob.objects.create(kind="annotations", parameters={"project": w.project_a.pk, "format": "jsonl"},
                                       requested_by=w.users["curator"], filename="matrix.zip")
        job = export_execute(job_id=job.pk)
        assert job.status == "done", job.error
        weakref.finalize(w, (exports_dir() / job.file_path).unlink, True)  # the file outlives the test's rollback
        w.objs["export"] = job
    return {"pk": w.objs["export"].pk}


def _fresh_export(w):
    """A finished export of its own for a deletion cell (the shared one stays for the others)."""
    from annotation.models import ExportJob

    job = ExportJob.objects.create(kind="annotations", parameters={"project": w.project_a.pk, "format": "jsonl"},
                                   requested_by=w.users["curator"], filename="matrix-delete.zip")
    return {"pk": job.pk}


def _import(w):
    """An import job the curator asked for (any curator may read its page)."""
    from benchmark.models import ImportJob

    job = ImportJob.objects.create(format="native", original_name="tasks.jsonl", requested_by=w.users["curator"])
    return {"job_id": job.pk}


def _revoked_invitation(w):
    """A revoked invitation to project A: resending or revoking it again is a 400 naming its state."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Invitation

    if "invitation" not in w.objs:
        w.objs["invitation"] = Invitation.objects.create(
            project=w.project_a, email="matrix@lab.org", token_hash="0" * 64, status="revoked",
            expires_at=timezone.now() + timedelta(days=1))
    return {"pk": w.project_a.pk, "invitation_id": w.objs["invitation"].pk}


# The curator deletes it; the admin, asking next, finds it gone.
DELETE_OWN_EXPORT = (403, 404, 404, 404, 204, 404)


PROPOSABLE = ("prompt", "constraint-question", "checklist-group", "checklist-item", "gold-reference", "nugget",
              "rubric-criterion")

# url name → list of (method, kwargs(world), body(world), expected statuses)
API = {
    "survey-list": [("get", None, None, READ)],
    "survey-detail": [("get", _pk("survey"), None, READ)],
    "bibentry-list": [("get", None, None, READ), ("post", None, {}, CURATE)],
    "bibentry-detail": [("get", _pk("bibentry"), None, READ)],
    "task-list": [("get", None, None, READ)],
    "task-detail": [("get", lambda w: {"pk": w.task.pk}, None, READ)],
    "taskset-list": [("get", None, None, READ), ("post", None, {}, CURATE)],
    "taskset-detail": [("get", lambda w: {"pk": w.task_set.pk}, None, READ)],
    "taskset-export": [("get", lambda w: {"pk": w.task_set.pk}, None, READ)],
    "system-list": [("get", None, None, READ), ("post", None, {}, CURATE)],
    "system-detail": [("get", lambda w: {"pk": w.report.system_id}, None, READ)],
    "report-list": [("get", None, None, READ), ("post", None, {}, CURATE)],
    "report-detail": [("get", lambda w: {"pk": w.report.pk}, None, READ)],
    "import": [("post", None, {}, CURATE)],
    # Export jobs: the service decides (an empty body is a 400 for everyone signed in); a job
    # is seen by its requester (the curator here) and curators, and does not exist for others.
    "export-list": [("get", None, None, READ), ("post", None, {}, (403, 400, 400, 400, 400, 400))],
    "export-detail": [("get", _export, None, OWN_EXPORT), ("delete", _fresh_export, None, DELETE_OWN_EXPORT)],
    "export-download": [("get", _export, None, OWN_EXPORT)],
    "judgeconfig-list": [("get", None, None, READ), ("post", None, {}, CURATE)],
    "judgeconfig-detail": [("get", lambda w: {"pk": w.project_a.judge_config_id}, None, READ)],
    "run-list": [("get", None, None, RANKING), ("post", None, {}, CURATE)],
    "run-detail": [("get", lambda w: {"pk": w.run_finished.pk}, None, RANKING)],
    # A finished run cannot start or be cancelled, a pending one cannot resume: 400, nothing changes.
    "run-start": [("post", lambda w: {"pk": w.run_finished.pk}, {}, CURATE)],
    "run-cancel": [("post", lambda w: {"pk": w.run_finished.pk}, {}, CURATE)],
    "run-resume": [("post", lambda w: {"pk": w.run_pending.pk}, {}, CURATE)],
    "run-progress": [("get", lambda w: {"pk": w.run_finished.pk}, None, RANKING)],
    "run-score-cards": [("get", lambda w: {"pk": w.run_finished.pk}, None, RANKING)],
    # Calibrated scores: the ranking gate; without ?project= a 400 for the rest (its curators: test_calibrated_api).
    "run-calibrated": [("get", lambda w: {"pk": w.run_finished.pk}, None, (403, 403, 403, 400, 400, 400))],
    "scorecard-list": [("get", None, None, RANKING)],
    "verdict-list": [("get", None, None, READ)],
    "project-list": [("get", None, None, READ), ("post", None, {}, CURATE)],
    # Project curators edit (an empty body changes nothing: 200); members who are not curators
    # are refused, outsiders do not see the project.
    "project-detail": [("get", lambda w: {"pk": w.project_a.pk}, None, PROJECT_A_READ),
                       ("patch", lambda w: {"pk": w.project_a.pk}, {}, (403, 403, 404, 403, 200, 200))],
    "project-members": [("get", lambda w: {"pk": w.project_a.pk}, None, (403, 403, 404, 403, 200, 200)),
                        ("post", lambda w: {"pk": w.project_a.pk}, {}, (403, 403, 404, 403, 400, 400))],
    # Invitations by e-mail: the project's curators; an empty body is a 400 naming ``emails``.
    "project-invitations": [("get", lambda w: {"pk": w.project_a.pk}, None, (403, 403, 404, 403, 200, 200)),
                            ("post", lambda w: {"pk": w.project_a.pk}, {}, (403, 403, 404, 403, 400, 400))],
    "project-invitation-resend": [("post", _revoked_invitation, {}, (403, 403, 404, 403, 400, 400))],
    "project-invitation-revoke": [("post", _revoked_invitation, {}, (403, 403, 404, 403, 400, 400))],
    # ann_b is no member of A: the curator's removal is a 400 naming the user.
    "project-member-detail": [("delete", lambda w: {"pk": w.project_a.pk, "username": "ann_b"}, None,
                               (403, 403, 404, 403, 400, 400))],
    "project-progress": [("get", lambda w: {"pk": w.project_a.pk}, None, PROJECT_A_READ)],
    "project-items": [("get", lambda w: {"pk": w.project_a.pk}, None, PROJECT_A_READ)],
    # Claims an item: labellers of A only (viewers never label, ann_b is not a member).
    "project-next": [("post", lambda w: {"pk": w.project_a.pk}, {}, (403, 200, 404, 403, 403, 403))],
    "item-detail": [("get", lambda w: {"pk": w.item_a.pk}, None, ITEM_A_READ)],
    "item-side": [("get", lambda w: {"pk": w.item_a.pk, "side": "report"}, None, ITEM_A_READ)],
    # The item is open: the curator's gold label is refused with 409; annotators and viewers do
    # not reach it (not held).
    "item-adjudicate": [("post", lambda w: {"pk": w.item_a.pk}, {"value": {"label": "correct"}},
                         (403, 404, 404, 403, 409, 409))],  # viewers never write: 403 first
    # Discussion of item A (open, blind): closed until revealed (403); ann_a holds another item and ann_b is no
    # member, and the viewer holds nothing: none reaches it (a missing item's very 404).
    "item-comments": [("get", lambda w: {"pk": w.item_a.pk}, None, (403, 404, 404, 404, 403, 403)),
                      ("post", lambda w: {"pk": w.item_a.pk}, {"text": ""}, (403, 404, 404, 404, 403, 403))],
    "notification-list": [("get", None, None, READ)],
    # Crowd study of A (it has none: 404 to its curators); a quota of 0 is refused with 400 and stores nothing.
    "project-crowd": [("get", lambda w: {"pk": w.project_a.pk}, None, (403, 403, 404, 403, 404, 404)),
                      ("put", lambda w: {"pk": w.project_a.pk}, {"quota": 0}, (403, 403, 404, 403, 400, 400))],
    "project-crowd-rotate": [("post", lambda w: {"pk": w.project_a.pk}, {}, (403, 403, 404, 403, 404, 404))],
    "project-attention-checks": [("get", lambda w: {"pk": w.project_a.pk}, None, (403, 403, 404, 403, 200, 200)),
                                 ("post", lambda w: {"pk": w.project_a.pk}, {}, (403, 403, 404, 403, 400, 400))],
    "assignment-list": [("get", None, None, READ)],
    # ann_a's own claim; everybody else cannot even see it.
    "assignment-skip": [("post", lambda w: {"pk": w.assignment_a.pk}, {}, (403, 200, 404, 403, 404, 404))],
    "label-list": [("get", None, None, READ),
                   ("post", None, lambda w: {"item": w.item_b.pk, "value": {"decision": "accept"},
                                             "client_token": str(uuid.uuid4())},
                    # ann_b holds no claim on item B: refused as a missing item (#37; with one, 201:
                    # test_blind_reach.py); curators do not label in a blind project.
                    (403, 404, 404, 403, 403, 403))],
    # Answers are refused one by one inside a 200 (tests/api/test_label_batch.py checks them);
    # viewers and anonymous users are refused the request.
    # (The answer names no item: labelling item B here would take it from the label-list row.)
    "label-batch": [("post", None, lambda w: [{"item": 10**9, "value": {"decision": "accept"},
                                               "client_token": str(uuid.uuid4())}],
                     (403, 200, 200, 403, 200, 200))],
    "goldlabel-list": [("get", None, None, READ)],
    "preference-list": [("get", None, None, READ)],
    # The dashboards' figures: any signed-in user (agreement shows only the projects one curates).
    **{f"dashboard-{name}": [("get", None, None, RANKING)] for name in (
        "leaderboard", "human", "agreement", "chart-verdicts", "chart-scores", "chart-human-vs-automated",
        "chart-recall-by-quartile", "chart-coverage-by-window", "chart-discipline-heatmap", "judge-sensitivity",
        "run-progress")},
    # Per-target judge labels would unblind agreement projects: curators only.
    "dashboard-look-next": [("get", None, None, (403, 403, 403, 403, 200, 200))],
    "token": [("post", None, {}, (400, 400, 400, 400, 400, 400))],
    "schema": [("get", None, None, READ)],
    "index": [("get", None, None, READ)],
    "docs": [("get", None, None, PAGE)],
}
for kind in PROPOSABLE:
    API[f"{kind}-list"] = [("get", None, None, READ)]
    API[f"{kind}-detail"] = [("get", _pk(kind), None, READ), ("patch", _pk(kind), {}, CURATE)]
    API[f"{kind}-review"] = [("post", _pk(kind), {}, CURATE)]
    API[f"{kind}-revisions"] = [("get", _pk(kind), None, READ)]


def _item(w):
    return {"project_id": w.project_a.pk, "item_id": w.item_a.pk}


def _project(w):
    return {"project_id": w.project_a.pk}


def _run(w):
    return {"run_id": w.run_finished.pk}


PAGES = {
    "home": [("get", None, (302, 302, 302, 200, 200, 200))],  # annotators land on their projects
    "benchmark:task_list": [("get", None, PAGE)],
    "benchmark:task_detail": [("get", lambda w: {"task_id": w.task.pk}, PAGE)],
    "benchmark:report_detail": [("get", lambda w: {"report_id": w.report.pk}, PAGE)],
    "benchmark:taskset_list": [("get", None, PAGE)],
    "benchmark:taskset_detail": [("get", lambda w: {"task_set_id": w.task_set.pk}, PAGE)],
    # Curators only; an empty form is refused with 400 and creates nothing.
    "benchmark:taskset_new": [("get", None, (302, 403, 403, 403, 200, 200)),
                              ("post", None, (302, 403, 403, 403, 400, 400))],
    # POST only, curators only; the pilot set's task is a draft, so freezing is refused and the page says so.
    "benchmark:taskset_freeze": [("get", lambda w: {"task_set_id": w.task_set.pk}, (405,) * 6),
                                 ("post", lambda w: {"task_set_id": w.task_set.pk}, (302, 403, 403, 403, 302, 302))],
    # An unfrozen set has no next version: refused with a message.
    "benchmark:taskset_new_version": [("get", lambda w: {"task_set_id": w.task_set.pk}, (405,) * 6),
                                      ("post", lambda w: {"task_set_id": w.task_set.pk},
                                       (302, 403, 403, 403, 302, 302))],
    "exports:export_list": [("get", None, PAGE)],
    # Curators only; an empty form is refused with 400 and queues nothing.
    "benchmark:import_new": [("get", None, (302, 403, 403, 403, 200, 200)),
                             ("post", None, (302, 403, 403, 403, 400, 400))],
    # any curator reads any import job (the history lists them all)
    "benchmark:import_detail": [("get", _import, (302, 403, 403, 403, 200, 200))],
    "benchmark:import_history": [("get", None, (302, 403, 403, 403, 200, 200))],
    "exports:export_create": [("get", None, (405,) * 6)],  # POST only: tests/benchmark/test_exports_browser.py
    "exports:export_row": [("get", lambda w: {"job_id": _export(w)["pk"]}, (302, 404, 404, 404, 200, 200))],
    "exports:export_download": [("get", lambda w: {"job_id": _export(w)["pk"]}, (302, 404, 404, 404, 200, 200))],
    "exports:export_delete": [("get", lambda w: {"job_id": _export(w)["pk"]}, (405,) * 6)],  # POST only: test_exports.py
    "proposals:task_propose": [("get", lambda w: {"task_id": w.task.pk}, (405,) * 6)],  # POST only: test_proposals_web
    # POST only; curators only; an empty form stores nothing (back to the task page with the message).
    "benchmark:task_survey_text": [("get", lambda w: {"task_id": w.task.pk}, (405,) * 6),
                                   ("post", lambda w: {"task_id": w.task.pk}, (302, 403, 403, 403, 302, 302))],
    # The task page's curation card (issue 30): POST only, curators only; the form without its
    # version, or a task with nothing settled, changes nothing (back to the task page with the message).
    "annotation:task_proposal_review": [
        ("get", lambda w: {"task_id": w.task.pk, "kind": "nugget", "pk": 1}, (405,) * 6),
        ("post", lambda w: {"task_id": w.task.pk, "kind": "nugget", "pk": 1}, (302, 403, 403, 403, 302, 302))],
    "annotation:task_curate": [("get", lambda w: {"task_id": w.task.pk}, (405,) * 6),
                               ("post", lambda w: {"task_id": w.task.pk}, (302, 403, 403, 403, 302, 302))],
    # The review queue (issue 38): curators only; an empty bulk form or a decision without its
    # version changes nothing (422, the row answered as it is).
    "annotation:review_queue": [("get", None, (302, 403, 403, 403, 200, 200))],
    "annotation:review_bulk": [("get", None, (405,) * 6), ("post", None, (302, 403, 403, 403, 422, 422))],
    "annotation:review_edit_fields": [("get", lambda w: {"kind": "nugget", "pk": w.objs["nugget"].pk},
                                       (302, 403, 403, 403, 200, 200))],
    "annotation:review_decide": [
        ("get", lambda w: {"kind": "nugget", "pk": w.objs["nugget"].pk}, (405,) * 6),
        ("post", lambda w: {"kind": "nugget", "pk": w.objs["nugget"].pk},
         (302, 403, 403, 403, 422, 422))],
    "annotation:project_list": [("get", None, PAGE)],
    # Curators only; an empty form is refused with 400 and creates nothing.
    "annotation:new": [("get", None, (302, 403, 403, 403, 200, 200)), ("post", None, (302, 403, 403, 403, 400, 400))],
    "annotation:edit": [("get", _project, (302, 403, 404, 403, 200, 200))],
    "annotation:members": [("get", _project, (302, 403, 404, 403, 200, 200))],
    "annotation:workspace": [("get", _project, None)],
    "annotation:progress": [("get", _project, (302, 200, 404, 200, 200, 200))],
    "annotation:my_work": [("get", _project, (302, 200, 404, 200, 200, 200))],
    "annotation:item": [("get", _item, ITEM_A_PAGE)],
    "annotation:adjudication": [("get", _project, (302, 403, 404, 403, 200, 200))],
    # The item browser (issue 38): the project's curators; an empty selection changes nothing.
    "annotation:items": [("get", _project, (302, 403, 404, 403, 200, 200))],
    "annotation:items_action": [("get", _project, (405,) * 6), ("post", _project, (302, 403, 404, 403, 302, 302))],
    "annotation:undo": [("get", _project, (405,) * 6)],
    "annotation:revisit_skipped": [("get", _project, (405,) * 6)],  # POST only: tests/annotation/loop/test_claims.py
    "annotation:label": [("get", _item, (405,) * 6)],
    "annotation:skip": [("get", _item, (405,) * 6)],
    "annotation:adjudicate": [("get", _item, (405,) * 6)],
    "annotation:add_item": [("get", _item, ITEM_A_PAGE)],
    # the discussion page (closed on this open blind item for its curators: it says so; annotators and
    # viewers do not reach it); the crowd completion page: crowd workers only
    "annotation:comments": [("get", _item, ITEM_A_PAGE)],
    "annotation:crowd_done": [("get", _project, (302, 404, 404, 404, 404, 404))],
    "annotation:crowd_study": [("get", _project, (302, 403, 404, 403, 200, 200))],
    # Curators run the blind audit; annotators and viewers are refused, outsiders see no project.
    "annotation:blind_audit": [("get", _project, (302, 403, 404, 403, 200, 200))],
    **{f"dashboards:{name}": [("get", None, RANKING_PAGE)] for name in (
        "index", "leaderboard", "human", "agreement", "chart_verdicts", "chart_scores", "chart_human_vs_auto",
        "chart_recall_quartiles", "chart_coverage_window", "chart_heatmap", "judge_sensitivity", "run_progress",
        "agreement_inter_annotator", "agreement_judge", "statistics")},
    # POST only; a form without a project is refused with 400 and computes nothing (a project the
    # user may not see is answered 404: tests/annotation/dashboards/test_stored_agreement.py).
    "dashboards:agreement_compute_here": [("get", None, RANKING_POST_ONLY),
                                          ("post", None, (302, 403, 403, 400, 400, 400))],
    # POST only (stored figures computed in the request when no worker answers): the ranking's for
    # global curators, judge vs people for whoever reads it; an empty form computes nothing.
    "dashboards:human_compute_here": [("get", None, RANKING_POST_ONLY),
                                      ("post", None, (302, 403, 403, 403, 400, 400))],
    "dashboards:judge_compute_here": [("get", None, RANKING_POST_ONLY),
                                      ("post", None, (302, 403, 403, 400, 400, 400))],
    "dashboards:look_next": [("get", None, (302, 403, 403, 403, 200, 200))],
    # POST only, curators only; an empty form (no verdict) is refused with 400 and creates nothing.
    "dashboards:look_next_project": [("get", None, RANKING_POST_ONLY), ("post", None, (302, 403, 403, 403, 400, 400))],
    "runs:list": [("get", None, RANKING_PAGE)],
    # Curators only; an empty form is refused with 400 and creates nothing.
    "runs:new": [("get", None, (302, 403, 403, 403, 200, 200)), ("post", None, (302, 403, 403, 403, 400, 400))],
    "runs:detail": [("get", _run, RANKING_PAGE)],
    "runs:judges": [("get", None, RANKING_PAGE)],
    # Curators only; an empty form is refused with 400 and stores nothing.
    "runs:judge_new": [("get", None, (302, 403, 403, 403, 200, 200)), ("post", None, (302, 403, 403, 403, 400, 400))],
    "runs:judge_edit": [("get", lambda w: {"config_id": w.project_a.judge_config_id}, (302, 403, 403, 403, 200, 200))],
    # The offline judge calls nothing: the test answers at once.
    "runs:judge_test": [("get", lambda w: {"config_id": w.project_a.judge_config_id}, RANKING_POST_ONLY),
                        ("post", lambda w: {"config_id": w.project_a.judge_config_id}, (302, 403, 403, 403, 200, 200))],
    "runs:progress": [("get", _run, RANKING_PAGE)],
    # POST only, curators only; the run is finished, so the service refuses and the page says so.
    "runs:start": [("get", _run, RANKING_POST_ONLY), ("post", _run, (302, 403, 403, 403, 302, 302))],
    "runs:cancel": [("get", _run, RANKING_POST_ONLY), ("post", _run, (302, 403, 403, 403, 302, 302))],
    "runs:resume": [("get", _run, RANKING_POST_ONLY), ("post", lambda w: {"run_id": w.run_pending.pk},
                                                (302, 403, 403, 403, 302, 302))],
    "admin:index": [("get", None, (302, 302, 302, 302, 302, 200))],
}


def _names(resolver, prefix=""):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            namespace = f"{prefix}{entry.namespace}:" if entry.namespace else prefix
            yield from _names(entry, namespace)
        elif isinstance(entry, URLPattern) and entry.name:
            yield f"{prefix}{entry.name}"


def test_every_route_has_a_matrix_entry():
    names = set(_names(get_resolver()))
    api = {n.removeprefix("api:") for n in names if n.startswith("api:")}
    pages = {n for n in names if n.split(":")[0] in ("benchmark", "annotation", "dashboards", "runs")} | {"home"}
    assert api - API.keys() == set(), "API routes without an authorization-matrix entry"
    assert API.keys() - api == set(), "matrix entries for routes that do not exist"
    assert pages - PAGES.keys() == set(), "HTML pages without an authorization-matrix entry"


MULTIPART = {"import"}  # routes that only parse multipart bodies


def _request(client, name, method, url, body):
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, body, format="multipart" if name in MULTIPART else "json")


def test_api_matrix(world):
    """One world for every cell (building it per route would dominate the run time)."""
    clients = {kind: client_for(user) for kind, user in world.users.items()}
    failures, cells = [], 0
    for name in sorted(API):
        for method, kwargs, body, expected in API[name]:
            url = reverse(f"api:{name}", kwargs=kwargs(world) if kwargs else None)
            for kind, want in zip(USER_KINDS, expected, strict=True):
                data = body(world) if callable(body) else body
                response = _request(clients[kind], name, method, url, data)
                cells += 1
                if response.status_code != want:
                    failures.append(f"{method.upper()} {url} as {kind}: {response.status_code}, expected {want}")
    assert not failures, "\n".join(failures)
    assert cells >= 6 * len(API)


WORKSPACE = (302, 200, 404, 403, 403, 403)  # GET claims an item: annotators of blind project A only


def test_page_matrix(world):
    clients = {}
    for kind, user in world.users.items():
        clients[kind] = Client()
        if user is not None:
            clients[kind].force_login(user)
    failures = []
    for name in sorted(PAGES):
        for method, kwargs, expected in PAGES[name]:
            url = reverse(name, kwargs=kwargs(world) if kwargs else None)
            for kind, want in zip(USER_KINDS, expected or WORKSPACE, strict=True):
                response = getattr(clients[kind], method)(url)
                if response.status_code != want:
                    failures.append(f"{method.upper()} {url} as {kind}: {response.status_code}, expected {want}")
    assert not failures, "\n".join(failures)
