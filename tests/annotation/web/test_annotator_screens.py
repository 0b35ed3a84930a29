"""The annotator's screens through the views (issue #30): the testing hooks, the top menu while
labelling blind, "my work" with revisit and expired holds, undo offered only where it acts, and
what the judge assessed rendered as markdown or reflowed."""

import re
import uuid
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.loop.claims import assignment_skip, claim_next_item
from annotation.models import Assignment
from annotation.loop.labels import label_submit
from annotation.views import display
from tests.annotation_factories import agreement_project, checklist_task, pairwise_project, token, verify_project

from .conftest import claim_of

pytestmark = pytest.mark.django_db


def url(name, project, item=None):
    args = [project.pk] if item is None else [project.pk, item.pk]
    return reverse(f"annotation:{name}", args=args)


def page(client, address) -> str:
    response = client.get(address)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def nav(html: str) -> str:
    return html.split("<nav>")[1].split("</nav>")[0]


def test_testing_hooks_mark_both_reports_and_the_decision(owner, alice, client):
    project = pairwise_project(owner, [alice], guidelines="Read both.")
    client.force_login(alice)
    html = page(client, url("workspace", project))
    shown = html.split('<div id="ws-after"')[0]
    assert shown.count('data-role="report-left"') == 1 and shown.count('data-role="report-right"') == 1
    assert shown.count('data-role="decision"') == 1 and shown.count('data-role="guidelines"') == 1
    assert '<details class="ws-bib">' in shown and '<details class="ws-bib" open' not in shown  # folded


@pytest.mark.parametrize("kind", ["verify", "agreement"])
def test_verify_and_agreement_mark_their_decision(owner, alice, bob, client, kind):
    if kind == "verify":
        task, _ = checklist_task(2)
        project = verify_project(owner, [alice, bob], tasks=[task])
    else:
        project = agreement_project(owner, [alice])
    client.force_login(alice)
    shown = page(client, url("workspace", project)).split('<div id="ws-after"')[0]
    decision = shown.split('data-role="decision"')[1]
    assert shown.count('data-role="decision"') == 1
    assert 'data-submit' in decision.split("</form>")[0]  # the submit button is part of the controls


def test_the_top_menu_hides_runs_and_dashboards_while_labelling_blind(owner, alice, client):
    blind = pairwise_project(owner, [alice], name="blind pairs", blind=True)
    open_ = pairwise_project(owner, [alice], name="open pairs", blind=False)
    client.force_login(alice)
    assert client.get("/dashboards/").status_code == 403 and client.get("/runs/").status_code == 403
    for project in (blind, open_):  # labelling blind anywhere closes them on every workspace
        menu = nav(page(client, url("workspace", project)))
        assert "Runs" not in menu and "Dashboards" not in menu and "Annotate" in menu
    client.force_login(owner)  # a curator labels nothing blind: the menu is whole
    menu = nav(page(client, url("workspace", open_)))
    assert "Runs" in menu and "Dashboards" in menu


def test_my_work_lists_labels_skips_and_expired_holds_and_brings_skips_back(owner, alice, bob, client):
    task, _ = checklist_task(4)
    project = verify_project(owner, [alice, bob], tasks=[task], blind=False)
    first = claim_next_item(project=project, user=alice).item
    label_submit(item=first, annotator=alice, value={"decision": "accept"}, client_token=token())
    second = claim_next_item(project=project, user=alice).item
    assignment_skip(item=second, user=alice)
    third = claim_next_item(project=project, user=alice)
    Assignment.objects.filter(pk=third.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    client.force_login(alice)
    html = page(client, url("my_work", project))
    labels = html.split('data-testid="my-labels-list"')[1].split("</table>")[0]
    assert f"<td>{first.position}</td><td>Accept</td>" in labels
    assert url("item", project, first) in labels
    skips = html.split('data-testid="my-skips"')[1].split("</table>")[0]
    assert f"<td>{second.position}</td>" in skips and url("item", project, second) in skips
    expired = html.split('data-testid="expired-holds"')[1].split("</section>")[0]
    assert f"Item {third.item.position}: reserved until" in expired
    # the workspace links to it
    assert url("my_work", project) in page(client, url("workspace", project))

    # re-opening the labelled item: its label, undo offered only while it is the last action
    shown = page(client, url("item", project, first))
    assert "Your label" in shown and "Only your last label or skip" in shown  # the skip came after it
    client.post(url("revisit_skipped", project))
    assert not Assignment.objects.filter(item=second, user=alice, status=Assignment.Status.SKIPPED).exists()
    after = page(client, url("my_work", project))
    assert 'data-testid="my-skips"' not in after and "Nothing skipped." in after
    assert "Undo my label" in page(client, url("item", project, first))  # now the label is the last action


def test_my_work_in_a_blind_project_shows_only_the_annotators_own_labels(owner, alice, bob, client):
    project = pairwise_project(owner, [alice, bob], blind=True)
    item = claim_next_item(project=project, user=bob).item
    label_submit(item=item, annotator=bob, value={"choice": "left"}, client_token=token())
    client.force_login(alice)
    html = page(client, url("my_work", project))
    assert "No labels yet." in html and "bob" not in html and "Left" not in html


def test_my_work_is_for_members_only(owner, alice, carol, client):
    project = pairwise_project(owner, [alice])
    client.force_login(carol)
    assert client.get(url("my_work", project)).status_code == 404


def test_judged_parts_render_markdown_and_reflow_sources():
    part = display._judged_part({"name": "sentence", "label": "Sentence", "text": "Radar is **robust** [1].",
                                 "is_report": False})
    assert "<strong>robust</strong>" in part["html"] and "**" not in part["html"]
    source = display._judged_part({"name": "source", "label": "Source", "is_report": False,
                                   "text": "Title: Radar\nnets work in\nfog.\n\nSecond para_x *not emphasis*."})
    assert source["paragraphs"] == ["Title: Radar nets work in fog.", "Second para_x *not emphasis*."]
    assert display.reflowed("  one\n  two  \n\n\n three ") == ["one two", "three"]
    assert display.reflowed("") == []


def test_undo_refusal_names_what_each_kind_hid(owner, alice, bob, client):
    project = agreement_project(owner, [alice], blind=True)
    client.force_login(alice)
    page(client, url("workspace", project))
    item = claim_of(alice, project).item
    client.post(url("label", project, item), {"label": "correct", "client_token": str(uuid.uuid4())})
    refused = client.post(url("undo", project), HTTP_HX_REQUEST="true").content.decode()
    assert "your label on item" in refused and "judge" in refused and "systems" not in refused
    assert re.search(r"is final: this project is blind", refused)


def test_a_refused_label_shows_an_error_summary_linking_to_its_field(owner, alice, client):
    project = pairwise_project(owner, [alice])
    client.force_login(alice)
    html = page(client, url("workspace", project))
    item = claim_of(alice, project).item
    token_ = re.search(r'name="client_token" value="([0-9a-f-]{36})"', html).group(1)
    refused = client.post(url("label", project, item), {"client_token": token_}, HTTP_HX_REQUEST="true")
    answer = refused.content.decode()
    assert refused.status_code == 422
    summary = answer.split('class="ws-errors" role="alert"')[1].split("</div>")[0]
    assert re.search(r'<a href="#id_choice_0">Choice</a>: \S', summary)
    assert 'id="id_choice_0"' in answer  # the link's target exists
