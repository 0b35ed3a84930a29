"""The labelling workspace through the views: claims, submit, skip, undo, errors, blind mode."""

import re
import uuid
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import AnnotationItem, Assignment, Label, PairwisePreference, Role
from tests.annotation_factories import submit_held as label_submit  # blind: on an item held (#37)
from annotation.services.projects import membership_add
from tests.annotation_factories import agreement_project, annotator, hold, pairwise_project, token
from tests.factories import ReportFactory

from .conftest import claim_of

pytestmark = pytest.mark.django_db


def url(name, project, item=None):
    args = [project.pk] if item is None else [project.pk, item.pk]
    return reverse(f"annotation:{name}", args=args)


def form_token(html: str) -> str:
    return re.search(r'name="client_token" value="([0-9a-f-]{36})"', html).group(1)


def body(response) -> str:
    return response.content.decode()


def shown_part(html: str) -> str:
    """The panel without the next item held ready behind it (``#ws-after``)."""
    return html.split('<div id="ws-after"')[0]


# --- Claiming and showing ---------------------------------------------------------------------


def test_workspace_page_claims_an_item_and_shows_the_proposal_with_its_survey(as_user, verify, alice):
    client = as_user(alice, hx=False)
    response = client.get(url("workspace", verify))
    html = body(response)
    assert response.status_code == 200
    claim = claim_of(alice, verify)
    assert f'data-item="{claim.item_id}"' in html
    assert "Source survey" in html and "Everything proposed for this task" in html
    assert 'data-key="a"' in html and 'data-key="r"' in html and 'data-key="s"' in html
    assert form_token(html)
    assert 'id="ws-help"' in html  # the ? overlay


def test_the_source_survey_panel_shows_its_abstract_outline_and_the_items_section(as_user, owner, alice):
    from tests.annotation_factories import verify_project
    from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, SurveyFactory, TaskFactory

    survey = SurveyFactory(
        arxiv_id="2307.01234", abstract="We survey radar data representations for autonomous driving.",
        outline=[[1, "Introduction"], [1, "Point clouds"]],
        content=[{"heading": "Introduction", "level": 1, "text": "Radar is robust in fog."},
                 {"heading": "Point clouds", "level": 1, "text": "Radar point clouds are sparse and noisy."}],
    )
    task = TaskFactory(survey=survey)
    group = ChecklistGroupFactory(task=task, name="Representations", review_status="accepted")
    ChecklistItemFactory(group=group, text="Explains why radar point clouds are sparse.")
    project = verify_project(owner, [alice], tasks=[task])
    html = body(as_user(alice).get(url("workspace", project)))
    assert "arXiv 2307.01234" in html
    assert re.search(r'data-testid="survey-abstract"><summary>Abstract</summary><p>We survey radar data', html)
    assert re.search(r'data-testid="survey-section" open><summary>Point clouds</summary><div class="md"><p>Radar '
                     r'point clouds are sparse and noisy.</p>', html)
    assert '<li class="lvl1 hit">Point clouds</li>' in html and '<li class="lvl1">Introduction</li>' in html
    assert 'data-testid="survey-no-text"' not in html


def test_a_survey_without_stored_text_says_so(as_user, owner, alice):
    from tests.annotation_factories import verify_project
    from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, SurveyFactory, TaskFactory

    task = TaskFactory(survey=SurveyFactory(arxiv_id="2401.00001", abstract="", outline=[], content=[]))
    ChecklistItemFactory(group=ChecklistGroupFactory(task=task, review_status="accepted"))
    project = verify_project(owner, [alice], tasks=[task])
    html = body(as_user(alice).get(url("workspace", project)))
    assert "arXiv 2401.00001" in html and 'data-testid="survey-no-text"' in html
    assert 'data-testid="survey-abstract"' not in html


def test_htmx_requests_get_the_panel_only_and_keep_the_held_claim(as_user, verify, alice):
    client = as_user(alice)
    first = client.get(url("workspace", verify))
    again = client.get(url("workspace", verify))
    assert "<html" not in body(first)
    assert 'hx-swap-oob="true"' in body(first)  # the progress line
    # the item shown and the next one, held ready behind it: both claimed once
    assert Assignment.objects.filter(user=alice, project=verify).count() == 2
    assert re.findall(r'data-item="(\d+)"', body(first))[:2] == re.findall(r'data-item="(\d+)"', body(again))[:2]


@pytest.mark.parametrize("name", ["workspace", "item", "label", "skip", "undo", "progress", "adjudication"])
def test_outsiders_get_404_everywhere(as_user, verify, name):
    outsider = annotator("mallory")
    item = verify.items.first()
    target = url(name, verify, item if name in ("item", "label", "skip") else None)
    client = as_user(outsider)
    response = client.post(target, {}) if name in ("label", "skip", "undo") else client.get(target)
    assert response.status_code == 404
    assert not Label.objects.exists()


def test_viewers_may_not_claim_items(as_user, verify, owner):
    viewer = annotator("victor")
    membership_add(project=verify, user=viewer, role=Role.VIEWER, actor=owner)
    response = as_user(viewer).get(url("workspace", verify))
    assert response.status_code == 403
    assert "may not label" in body(response)


def test_pages_need_login(client, verify):
    response = client.get(url("workspace", verify))
    assert response.status_code == 302 and "/login/" in response["Location"]


# --- Verify -----------------------------------------------------------------------------------


def test_accept_loads_the_next_item_without_a_full_page(as_user, verify, alice):
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    first = claim_of(alice, verify).item
    response = client.post(url("label", verify, first), {"client_token": form_token(html), "decision": "accept"})
    assert response.status_code == 200
    assert "<html" not in body(response)
    assert f"Saved your label on item {first.position}" in body(response)
    label = Label.objects.get(annotator=alice)
    assert label.value["decision"] == "accept"
    second = claim_of(alice, verify).item
    assert second != first and f'data-item="{second.pk}"' in body(response)
    assert '<strong data-testid="my-labels">1</strong>' in body(response)


def test_resubmitting_the_same_form_stores_one_label(as_user, verify, alice):
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    data = {"client_token": form_token(html), "decision": "accept"}
    first = client.post(url("label", verify, item), data)
    retry = client.post(url("label", verify, item), data)  # e.g. the answer to the first was lost
    assert first.status_code == retry.status_code == 200
    assert Label.objects.filter(annotator=alice).count() == 1


def test_invalid_input_comes_back_with_the_entered_values(as_user, verify, alice):
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    tok = form_token(html)
    response = client.post(url("label", verify, item), {"client_token": tok, "decision": "reject", "note": "too vague"})
    page = body(response)
    assert response.status_code == 422
    assert "value.reason" not in page and "required" in page  # the service's message, on the reason field
    assert re.search(r'value="reject" id="[^"]+" checked', page)
    assert "too vague</textarea>" in page
    assert form_token(page) == tok  # the retry stays idempotent
    assert not Label.objects.exists()


def test_other_needs_a_note(as_user, verify, alice):
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    data = {"client_token": form_token(html), "decision": "reject", "reason": "other"}
    response = client.post(url("label", verify, item), data)
    assert response.status_code == 422 and "Say what is wrong" in body(response)


def test_edit_in_place_sends_only_the_changed_fields(as_user, verify, alice):
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    target = item.project.items.model.objects.get(pk=item.pk)
    assert 'name="edit-text"' in html
    from annotation.selectors.targets import item_target

    current = item_target(target)
    data = {
        "client_token": form_token(html), "decision": "edit", "edit-text": "The report should name the radar types.",
        "edit-subgroup": current.subgroup, "edit-reward": str(current.reward),
    }
    response = client.post(url("label", verify, item), data)
    assert response.status_code == 200, body(response)
    assert Label.objects.get().value["edits"] == {"text": "The report should name the radar types."}


def test_edit_without_a_change_is_refused(as_user, verify, alice):
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    response = client.post(url("label", verify, item), {"client_token": form_token(html), "decision": "edit"})
    assert response.status_code == 422 and "changed nothing" in body(response)


def test_a_lost_item_says_so_and_keeps_the_input(as_user, verify, alice, bob, carol, owner):
    membership_add(project=verify, user=carol, role=Role.ANNOTATOR, actor=owner)
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    claim = claim_of(alice, verify)
    Assignment.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    for other in (bob, carol):  # the slots went to others, who completed the item
        label_submit(item=claim.item, annotator=other, value={"decision": "accept"}, client_token=token())
    data = {"client_token": form_token(html), "decision": "reject", "reason": "ambiguous", "note": "which radar?"}
    response = client.post(url("label", verify, claim.item), data)
    assert response.status_code == 409
    assert "already has all 2 labels" in body(response)
    assert "which radar?</textarea>" in body(response)


def test_skip_then_undo_brings_the_item_back(as_user, verify, alice):
    client = as_user(alice)
    client.get(url("workspace", verify))
    skipped = claim_of(alice, verify).item
    response = client.post(url("skip", verify, skipped))
    assert f"Skipped item {skipped.position}" in body(response)
    assert Assignment.objects.get(item=skipped, user=alice).status == Assignment.Status.SKIPPED
    assert claim_of(alice, verify).item != skipped
    undone = client.post(url("undo", verify))
    assert undone.status_code == 200
    assert f'data-item="{skipped.pk}"' in body(undone) and "Undid your skip" in body(undone)


def test_without_javascript_skip_and_undo_redirect_and_the_next_page_says_what_happened(as_user, verify, alice):
    client = as_user(alice, hx=False)
    client.get(url("workspace", verify))
    skipped = claim_of(alice, verify).item
    after_skip = client.post(url("skip", verify, skipped), follow=True)
    assert after_skip.redirect_chain[-1][0] == url("workspace", verify)
    assert f'<p class="ws-flash" role="status">Skipped item {skipped.position}.' in body(after_skip)
    after_undo = client.post(url("undo", verify), follow=True)
    assert after_undo.redirect_chain[-1][0] == url("item", verify, skipped)
    assert f'<p class="ws-flash" role="status">Undid your skip on item {skipped.position}' in body(after_undo)
    assert 'class="messages"' not in body(after_undo) or "Undid" not in body(after_undo).split("ws-flash")[0]
    shown_again = client.get(url("item", verify, skipped))
    assert "ws-flash" not in body(shown_again)  # a message is shown once


def test_undo_removes_the_label_and_shows_the_item_for_labelling_again(as_user, verify, alice):
    verify.blind = False
    verify.save(update_fields=["blind"])
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    client.post(url("label", verify, item), {"client_token": form_token(html), "decision": "accept"})
    response = client.post(url("undo", verify))
    assert not Label.objects.exists()
    assert f'data-item="{item.pk}"' in body(response) and 'name="decision"' in body(response)
    assert claim_of(alice, verify).item == item and "reserved for you until" in body(response)  # claimed again
    nothing = as_user(annotator("newbie"))
    membership_add(project=verify, user=annotator("newbie"), role=Role.ANNOTATOR, actor=verify.created_by)
    empty = nothing.post(url("undo", verify))
    assert "Nothing to undo" in body(empty) and empty["HX-Retarget"] == "#ws-alert"


def test_in_a_blind_project_a_committed_label_is_final(as_user, verify, alice):
    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    saved = client.post(url("label", verify, item), {"client_token": form_token(html), "decision": "accept"})
    assert "It is final: this project is blind." in body(saved) and "Press u to undo" not in body(saved)
    shown = body(client.get(url("item", verify, item)))
    assert "Your label is final: this project is blind." in shown and "Undo my label" not in shown
    refused = client.post(url("undo", verify))
    assert refused["HX-Retarget"] == "#ws-alert"
    assert f"your decision on item {item.position} is final: this project is blind" in body(refused)
    assert "judge" not in body(refused) and "systems" not in body(refused)
    assert Label.objects.filter(item=item, annotator=alice).exists()


def test_non_htmx_submit_redirects_to_the_next_item(as_user, verify, alice):
    client = as_user(alice, hx=False)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    response = client.post(url("label", verify, item), {"client_token": form_token(html), "decision": "accept"})
    assert response.status_code == 302 and response["Location"] == url("workspace", verify)


# --- Pairwise ---------------------------------------------------------------------------------


def test_pairwise_shows_two_anonymous_reports_with_linked_citations(as_user, owner, alice):
    project = pairwise_project(owner, [alice], n_systems=2, overlap=1)
    client = as_user(alice)
    html = body(client.get(url("workspace", project)))
    assert "Report A" in html and "Report B" in html
    for system in project.pairs.first().report_left.system, project.pairs.first().report_right.system:
        assert system.name not in html  # blind
    assert 'href="#ref-left-0"' in html and 'id="ref-left-0"' in html
    assert 'data-key="1 ArrowLeft"' in html and "data-timed" in html


def test_the_item_held_ready_is_claimed_and_as_blind_as_the_shown_one(as_user, owner, alice, bob):
    project = pairwise_project(owner, [alice, bob], n_systems=3, overlap=2)
    systems = {pair.report_left.system.name for pair in project.pairs.all()}
    shown_item = claim_of(alice, project)  # nothing claimed yet: the workspace claims both below
    assert shown_item is None
    panel = body(as_user(alice).get(url("workspace", project)))
    ready = panel.split("<template data-after>")[1]
    held = Assignment.objects.filter(user=alice, status=Assignment.Status.ACTIVE).order_by("claimed_at", "id")
    assert [str(claim.item_id) for claim in held] == re.findall(r'data-item="(\d+)"', panel)[:2]
    assert "Report A" in ready and not any(name in ready for name in systems)


def test_agreement_items_hold_no_item_ready(as_user, owner, alice):
    project = agreement_project(owner, [alice], labels=["correct"])  # the verdict follows the label
    panel = body(as_user(alice).get(url("workspace", project)))
    assert "<template data-after>" not in panel
    assert Assignment.objects.filter(user=alice, status=Assignment.Status.ACTIVE).count() == 1


def test_pairwise_shows_the_task_the_reports_answer_above_them(as_user, owner, alice):
    from benchmark.models import TaskPrompt

    project = pairwise_project(owner, [alice], n_systems=2, overlap=1)
    task = project.pairs.first().task
    TaskPrompt.objects.create(task=task, level="paragraph", text="Survey rejected wording.", review_status="rejected")
    TaskPrompt.objects.create(task=task, level="general", text="Write a survey of graph transformers.")
    html = body(as_user(alice).get(url("workspace", project)))
    assert '<p class="ws-task-prompt">Write a survey of graph transformers.</p>' in html
    assert html.index("ws-task-prompt") < html.index("Report A") and "Survey rejected wording." not in html
    assert 'class="card ws-choose ws-choose-sticky"' in html


def test_pairwise_records_positions_time_and_dimensions(as_user, owner, alice):
    project = pairwise_project(owner, [alice], n_systems=2, overlap=1, dimensions=["coverage", "citations"])
    client = as_user(alice)
    html = body(client.get(url("workspace", project)))
    item = claim_of(alice, project).item
    pair = project.pairs.get(pk=item.target_id)
    data = {
        "client_token": form_token(html), "choice": "right", "dim_coverage": "right", "dim_citations": "tie",
        "reason": "B covers more", "seconds_taken": "42.5",
        "left_report_id": pair.report_left_id, "right_report_id": pair.report_right_id,
    }
    response = client.post(url("label", project, item), data)
    assert response.status_code == 200, body(response)
    preference = PairwisePreference.objects.get(annotator=alice)
    assert (preference.report_left_id, preference.choice) == (pair.report_left_id, "right")
    assert preference.seconds_taken == 42.5 and preference.dimensions == {"coverage": "right", "citations": "tie"}


def test_report_markdown_is_sanitized(as_user, owner, alice):
    project = pairwise_project(owner, [alice], n_systems=2, overlap=1)
    ReportFactory._meta.model.objects.filter(task__in=project.tasks.all()).update(
        text="# T\n\n<script>alert(1)</script> [x](javascript:alert(2)) ok [1].\n\n## References\n[1] A paper."
    )
    html = body(as_user(alice).get(url("workspace", project)))
    assert "<script>alert(1)" not in html and 'href="javascript:' not in html


# --- Agreement, blind -------------------------------------------------------------------------


def test_the_judge_is_revealed_only_after_the_label_is_committed(as_user, owner, alice):
    project = agreement_project(owner, [alice], labels=["omitted"])
    verdict_rationale = "The report states it in section 2."
    client = as_user(alice)
    html = body(client.get(url("workspace", project)))
    item = claim_of(alice, project).item
    assert verdict_rationale not in html and "judge-verdict" not in html
    assert "appears after you submit" in html
    response = client.post(url("label", project, item), {"client_token": form_token(html), "label": "correct"})
    revealed = body(response)
    assert response.status_code == 200
    assert 'data-testid="judge-verdict"' in revealed and verdict_rationale in revealed
    assert "You disagreed with the judge." in revealed
    assert Label.objects.get().value == {"label": "correct", "judge_correct": False, "correction": "", "note": ""}


def test_an_open_project_shows_the_judge_and_asks_if_it_was_right(as_user, owner, alice):
    project = agreement_project(owner, [alice], labels=["correct"], blind=False)
    client = as_user(alice)
    html = body(client.get(url("workspace", project)))
    item = claim_of(alice, project).item
    assert 'data-testid="judge-verdict"' in html and 'data-key="y"' in html
    response = client.post(url("label", project, item), {"client_token": form_token(html), "judge_correct": "yes"})
    assert response.status_code == 200
    assert Label.objects.get().value["label"] == "correct"
    contradiction = {"client_token": str(uuid.uuid4()), "judge_correct": "no"}
    client.post(url("undo", project))
    response = client.post(url("label", project, item), contradiction)
    assert response.status_code == 422 and "required" in body(response)


def test_a_judged_statement_is_shown_with_the_sentence_and_the_source_it_cites(as_user, owner, alice):
    from annotation.services.projects import project_create
    from scoring.models import Statement
    from tests.annotation_factories import JudgeConfigFactory, VerdictFactory
    from tests.factories import TaskFactory

    judge = JudgeConfigFactory()
    report = ReportFactory(
        task=TaskFactory(),
        text="# R\n\nRadar point clouds are sparse [1]. Cameras fail at night.\n\n## References\n[1] RadarScenes.",
    )
    statement = Statement.objects.create(
        report=report, judge_config=judge, prompt_version="v1", kind="cited", position=0,
        text="Radar point clouds are sparse",
    )
    VerdictFactory(report=report, judge_config=judge, target_kind="statement", target_id=statement.pk, label="supported")
    project = project_create(
        name="statements", kind="agreement", created_by=owner, tasks=[report.task], judge_config=judge,
        label_set={"label": ["supported", "unsupported"]},
    )
    membership_add(project=project, user=alice, role=Role.ANNOTATOR, actor=owner)
    html = body(as_user(alice).get(url("workspace", project)))
    assert "Where the report says it" in html
    assert 'href="#ref-report-0">[1] RadarScenes.</a>' in html


def test_a_citation_verdict_shows_its_sentence_and_source_and_its_steps_labels_only(as_user, owner, alice):
    from tests.annotation_factories import deepscholar_agreement_project

    project = deepscholar_agreement_project(owner, [alice])
    client = as_user(alice)
    html = body(client.get(url("workspace", project)))
    item = claim_of(alice, project).item
    assert item.target_kind == "verdict"
    assert "What the judge was shown for this verdict" in html and "judge-verdict" not in html
    assert '<h3 class="ws-judged-label">Sentence of the report</h3>' in html
    assert re.search(r'<h3 class="ws-judged-label">(Cited source: .+|Source: the query .+)</h3>', html)
    offered = set(re.findall(r'name="label" value="([a-z_0-9]+)"', html))
    assert offered == {"support", "not_support"}, offered
    response = client.post(url("label", project, item), {"client_token": form_token(html), "label": "win"})
    assert response.status_code == 422 and not Label.objects.exists()


def test_outline_comparisons_show_both_outlines(as_user, owner, alice):
    project = pairwise_project(owner, [alice], n_systems=2, overlap=1, component="outline")
    ReportFactory._meta.model.objects.filter(task__in=project.tasks.all()).update(
        parsed={"outline": [{"level": 1, "title": "Radar basics"}, {"level": 2, "title": "Doppler"}]}
    )
    html = shown_part(body(as_user(alice).get(url("workspace", project))))
    assert html.count('<li class="lvl2">Doppler</li>') == 2 and "Which outline answers" in html


def test_state_changing_requests_need_the_csrf_token(verify, alice):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    page = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    data = {"client_token": form_token(page), "decision": "accept"}
    assert client.post(url("label", verify, item), data, HTTP_HX_REQUEST="true").status_code == 403
    csrf = client.cookies["csrftoken"].value
    response = client.post(url("label", verify, item), data, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 200 and Label.objects.count() == 1


@pytest.mark.parametrize("name", ["label", "skip", "undo"])
def test_state_changing_urls_refuse_get(as_user, verify, alice, name):
    item = verify.items.first()
    response = as_user(alice).get(url(name, verify, item if name != "undo" else None))
    assert response.status_code == 405


def test_curators_see_a_complete_item_with_every_label(as_user, verify, owner, alice, bob):
    item = verify.items.first()
    for user, decision in ((alice, "accept"), (bob, "reject")):
        value = {"decision": decision, "reason": "duplicate" if decision == "reject" else ""}
        label_submit(item=item, annotator=user, value=value, client_token=token())
    html = body(as_user(owner).get(url("item", verify, item)))
    assert "Reject — Duplicate" in html and "Accept" in html and 'name="decision"' not in html
    assert "Undo my label" not in html  # the curator gave no label here


# --- Adding a missing item (verify) ------------------------------------------------------------


@pytest.fixture
def verify_all(owner, alice, bob):
    from annotation.services.projects import project_create
    from tests.annotation_factories import checklist_task, members_add

    task, _ = checklist_task(2)
    project = project_create(name="verify all", kind="verify", created_by=owner, tasks=[task])
    members_add(project, owner, [alice, bob])
    return project


def add_data(**fields):
    return {f"add-{name}": value for name, value in fields.items()}


def test_the_verify_panel_offers_to_add_a_missing_item_with_n(as_user, verify_all, alice):
    html = body(as_user(alice, hx=False).get(url("workspace", verify_all)))
    assert 'id="ws-add"' in html and 'data-key="+ n"' in html
    assert 'name="add-kind"' in html and 'name="add-text"' in html  # a nugget by default
    assert "add a missing item to the task" in html  # documented in the ? overlay
    # the add form is never nested in the label form
    assert html.index('id="ws-add"') > html.index("</form>", html.index('id="label-form"'))


def test_the_htmx_panel_loads_the_add_form_when_it_is_opened(as_user, verify_all, alice):
    client = as_user(alice)  # htmx requests
    html = body(client.get(url("workspace", verify_all)))
    item = claim_of(alice, verify_all).item
    card = html[html.index('id="ws-add"'):]
    assert f'data-load="{url("add_item", verify_all, item)}"' in card
    assert 'name="add-kind"' not in html  # not built until the annotator opens it
    opened = body(client.get(url("add_item", verify_all, item)))
    assert opened.lstrip().startswith('<section id="ws-add"') and 'data-focus="kind"' in opened
    assert "<details data-add open" in opened and 'name="add-kind"' in opened and 'name="add-text"' in opened
    assert "data-load=" not in opened


def test_switching_the_kind_shows_its_fields(as_user, verify_all, alice):
    client = as_user(alice)
    client.get(url("workspace", verify_all))
    item = claim_of(alice, verify_all).item
    response = client.get(url("add_item", verify_all, item), {"add-kind": "checklist_item"})
    html = body(response)
    assert response.status_code == 200 and html.lstrip().startswith("<section id=\"ws-add\"")
    assert 'name="add-group"' in html and 'name="add-reward"' in html and 'data-focus="field"' in html
    html = body(client.get(url("add_item", verify_all, item), {"add-kind": "gold_reference"}))
    assert 'name="add-title"' in html and 'name="add-doi"' in html and 'name="add-important"' in html


def test_adding_an_item_swaps_the_card_and_queues_the_item(as_user, verify_all, alice):
    from benchmark.models import Nugget

    client = as_user(alice)
    client.get(url("workspace", verify_all))
    item = claim_of(alice, verify_all).item
    response = client.post(
        url("add_item", verify_all, item), add_data(kind="nugget", text="Radar works in fog.", importance="vital")
    )
    html = body(response)
    assert response.status_code == 200 and "Added nugget “Radar works in fog.”" in html
    assert 'data-focus="item"' in html
    nugget = Nugget.objects.get(text="Radar works in fog.")
    assert (nugget.origin, nugget.proposed_by, nugget.importance) == ("human", "alice", "vital")
    assert verify_all.items.filter(target_kind="nugget", target_id=nugget.pk).exists()
    assert claim_of(alice, verify_all).item == item  # the item being labelled is untouched


def test_an_invalid_addition_comes_back_with_field_errors(as_user, verify_all, alice):
    client = as_user(alice)
    client.get(url("workspace", verify_all))
    item = claim_of(alice, verify_all).item
    response = client.post(url("add_item", verify_all, item), add_data(kind="nugget", text=""))
    html = body(response)
    assert response.status_code == 422 and "This field is required." in html and 'data-focus="error"' in html
    # the service's refusal lands on its field too
    client.post(url("add_item", verify_all, item), add_data(kind="prompt", level="general", text="A"))
    response = client.post(url("add_item", verify_all, item), add_data(kind="prompt", level="general", text="B"))
    assert response.status_code == 422
    assert re.search(r'class="ws-add-field invalid">\s*<label for="id_add-level"', body(response))
    assert "already has a general prompt" in body(response)


def test_viewers_and_outsiders_may_not_add(as_user, verify_all, owner, alice):
    item = verify_all.items.first()
    outsider = as_user(annotator("mallory"))
    assert outsider.post(url("add_item", verify_all, item), add_data(kind="nugget", text="x")).status_code == 404
    viewer = annotator("vera")
    membership_add(project=verify_all, user=viewer, role=Role.VIEWER, actor=owner)
    response = as_user(viewer).post(url("add_item", verify_all, item), add_data(kind="nugget", text="x"))
    assert response.status_code == 404  # a viewer reaches no item of an open blind study (#37)


def test_non_htmx_add_redirects_back_to_the_item(as_user, verify_all, alice):
    client = as_user(alice, hx=False)
    client.get(url("workspace", verify_all))
    item = claim_of(alice, verify_all).item
    response = client.post(url("add_item", verify_all, item), add_data(kind="nugget", text="Radar works in fog."))
    assert response.status_code == 302 and response["Location"] == url("item", verify_all, item)
    invalid = client.post(url("add_item", verify_all, item), add_data(kind="nugget", text=""))
    assert invalid.status_code == 422 and "<html" in body(invalid) and "This field is required." in body(invalid)


def test_skip_without_a_claim_says_so(as_user, verify, alice):
    client = as_user(alice)
    item = verify.items.first()
    response = client.post(url("skip", verify, item))
    assert response.status_code == 404  # blind: an item not held answers like a missing one (#37)
    hold(item, alice)
    Assignment.objects.filter(item=item, user=alice).update(status=Assignment.Status.EXPIRED)
    labelled = verify.items.order_by("position").last()
    label_submit(item=labelled, annotator=alice, value={"decision": "accept"}, client_token=token())
    response = client.post(url("skip", verify, labelled))  # reachable (labelled), no claim to skip
    assert "was not reserved for you, so there was nothing to skip" in body(response)


def test_other_without_a_note_is_refused_by_the_service_too(as_user, verify, alice):
    """The form checks it first; the rule itself lives in the label service (API clients too)."""
    from annotation.forms import VerifyForm

    client = as_user(alice)
    html = body(client.get(url("workspace", verify)))
    item = claim_of(alice, verify).item
    clean = VerifyForm.clean
    try:
        VerifyForm.clean = lambda self: self.cleaned_data  # as if the form forgot the rule
        response = client.post(url("label", verify, item), {
            "client_token": form_token(html), "decision": "reject", "reason": "other", "note": " ",
        })
    finally:
        VerifyForm.clean = clean
    assert response.status_code == 422 and "say what is wrong when the reason is “other”" in body(response)
    assert not Label.objects.exists()


# --- Query counts of the annotator loop (issue #8) ----------------------------------------------

# The htmx loop's bounds (opening the workspace, then submits whose decision is applied),
# whatever the number of items, labels and sibling proposals: the project and role are read
# once per request, each item's context once, the task's other proposals only when asked for
# (``?part=task-material``), and an applied decision checks its task's curation in one query.
# Before issue #8 this loop made 37 and 77 queries; before issue #20 21 and 46; with the label
# and the next claim in one transaction 16 and 28. Since the workspace holds the next item
# ready (issue #20), opening it claims and renders two items, and a submit (the next item
# already shown, ``X-Ws-Shown``) stores the label and claims and renders the item after it.
OPEN_MAX_QUERIES = 19
SUBMIT_MAX_QUERIES = 24


def held_ready(html: str) -> str:
    """The next item's section, held ready in the panel's template (``#ws-after``)."""
    parts = html.split("<template data-after>")
    return parts[1].split("</template>")[0] if len(parts) > 1 else ""


@pytest.mark.parametrize("n_items", [3, 40])
def test_the_annotator_loop_makes_a_bounded_number_of_queries(
    as_user, owner, alice, bob, django_assert_max_num_queries, n_items
):
    from tests.annotation_factories import checklist_task, label_all, verify_project

    task, _ = checklist_task(n_items)
    project = verify_project(owner, [alice, bob], tasks=[task])
    for item in project.items.all():  # every item one label short: alice's label settles it
        label_all(item, [bob], {"decision": "accept", "reason": "", "note": "", "edits": {}})
    client = as_user(alice)
    with django_assert_max_num_queries(OPEN_MAX_QUERIES):
        panel = body(client.get(url("workspace", project)))
    shown, after = shown_part(panel), held_ready(panel)
    for _ in range(2):  # as workspace.js does: the next item is shown at once, the POST says so
        item = AnnotationItem.objects.get(pk=re.search(r'data-item="(\d+)"', shown)[1])
        showing = re.search(r'data-item="(\d+)"', after)[1]
        with django_assert_max_num_queries(SUBMIT_MAX_QUERIES):
            response = client.post(url("label", project, item), {"client_token": form_token(shown), "decision": "accept"},
                                   HTTP_X_WS_SHOWN=showing)
        answer = body(response)
        assert f"Saved your label on item {item.position}" in answer
        assert response["HX-Retarget"] == "#ws-after" and 'class="ws-item"' not in answer.split("<template")[0]
        item.refresh_from_db()
        assert (item.status, item.labels_done) == ("complete", 2)
        assert item.applied_revision_id is not None  # the agreed decision was applied to the row
        shown, after = after, held_ready(answer)


def test_the_htmx_panel_loads_the_task_material_when_it_is_opened(as_user, verify, alice):
    from benchmark.models import ChecklistItem

    client = as_user(alice)
    panel = shown_part(body(client.get(url("workspace", verify))))
    item = claim_of(alice, verify).item
    siblings = list(ChecklistItem.objects.filter(group__task_id=item.task_id).exclude(pk=item.target_id))
    assert "Everything proposed for this task" in panel
    assert f'{url("item", verify, item)}?part=task-material' in panel
    assert not any(sibling.text in panel for sibling in siblings)  # not rendered until asked for
    material = client.get(url("item", verify, item), {"part": "task-material"})
    html = body(material)
    assert material.status_code == 200 and "<html" not in html and "ws-item" not in html
    assert all(sibling.text in html for sibling in siblings)
    own = ChecklistItem.objects.get(pk=item.target_id)
    assert re.search(r'<li class="current">' + re.escape(own.text), html)  # the item's own proposal is marked
    assert re.search(r"<details class=\"ws-ti\" open>", html)  # its group is open


def test_the_task_material_is_for_members_only(as_user, verify, alice, carol):
    item = verify.items.first()
    assert as_user(carol).get(url("item", verify, item), {"part": "task-material"}).status_code == 404
    assert as_user(alice).get(url("item", verify, item), {"part": "task-material"}).status_code == 404  # not held
    hold(item, alice)
    assert as_user(alice).get(url("item", verify, item), {"part": "task-material"}).status_code == 200


def test_a_deepsynth_survey_named_by_its_arxiv_id_shows_the_topic_and_latex_escapes_read_as_the_paper(
        as_user, owner, alice):
    from tests.annotation_factories import verify_project
    from tests.factories import ChecklistGroupFactory, ChecklistItemFactory, SurveyFactory, TaskFactory

    survey = SurveyFactory(title="arXiv:2501.00001", arxiv_id="2501.00001", abstract="Caches \\$ and \\% here.")
    task = TaskFactory(protocol="deepsynth", survey=survey, title="KV cache compression")
    group = ChecklistGroupFactory(task=task, review_status="accepted")
    ChecklistItemFactory(group=group, text="Reports the KV\\$ cost")
    project = verify_project(owner, [alice], tasks=[task])
    html = shown_part(body(as_user(alice, hx=False).get(url("workspace", project))))
    title = re.search(r'<p class="ws-survey-title"><strong>([^<]*)</strong>', html).group(1)
    assert title == "KV cache compression"
    # read as the paper shows it; the edit box (and the "Proposed:" beside it) keeps the stored text
    assert '<span class="ws-value">Reports the KV$ cost</span>' in html
    assert html.count("KV\\$") == 2 and "Proposed: Reports the KV\\$ cost" in html
    assert "Caches $ and % here." in html
