"""A curator samples DeepSynth checklist groups for an agreement project in real Chromium at
1366×768 and reads the calibrated group score on the run page: the form offers "Sample by" before
the size it qualifies, the preview counts the groups drawn, the card names the unit the project
drew and what n counts, axe finds no WCAG 2 A/AA violation. Screenshots in
test-artifacts/screenshots/ (unit-sampling-new, unit-sampling-card). The screenshot is taken after
the preview's reload: a full-page screenshot just before a click moved the page under the mouse
(the click landed on the form, not the button)."""

import re

import pytest
from playwright.sync_api import expect

from annotation.models import AnnotationProject, Role
from annotation.services.projects import membership_add
from scoring.models import Verdict
from tests.annotation.calibration.test_unit_groups import _checklist, _expert_label, _second_task
from tests.annotation_factories import annotator, curator, label_all
from tests.support.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_curator_samples_by_group_and_reads_the_calibrated_group_score(page, live_server, login, screenshot):
    owner = curator("cur")
    judge, task, systems, _, _, run = _checklist()
    small, *_ = _second_task(judge, systems, run)
    page.set_viewport_size({"width": 1366, "height": 768})
    login("cur", "pw-for-tests")
    page.goto(f"{live_server.url}/annotate/new/")
    for t in (task, small):
        page.check(f"input[name=tasks][value='{t.pk}']")
    page.check("input[name=kind][value=agreement]")
    page.fill("input[name=name]", "Calibrate group scores")
    page.select_option("select[name=judge_config]", str(judge.pk))
    page.fill("textarea[name=labels], input[name=labels]", "correct, omitted, incorrect")
    page.select_option("select[name=sampling]", "uniform")
    page.select_option("select[name=sampling_unit]", "group")
    page.fill("input[name=sample_size]", "14")
    page.click("#preview-button")
    # the size counts groups: 14 of the 26 (10 + 3 per system's reports), every verdict of each
    expect(page.locator("#preview-units")).to_contain_text("14 whole DeepSynth checklist groups, every verdict of each")
    page.locator("select[name=sampling_unit]").scroll_into_view_if_needed()
    screenshot("unit-sampling-new")
    assert_accessible(page, "new agreement project sampled by checklist group")
    page.click("#create-button")
    page.wait_for_url(re.compile(r"/annotate/\d+/"))
    project = AnnotationProject.objects.get(name="Calibrate group scores")
    assert (project.sampling, project.sampling_unit, project.steps) == (
        "uniform", "group", ["deepsynth.checklist_group"])
    expert = annotator("expert")
    membership_add(project=project, user=expert, role=Role.ANNOTATOR, actor=owner)
    for k, item in enumerate(project.items.order_by("position")):
        label_all(item, [expert], {"label": _expert_label(Verdict.objects.get(pk=item.target_id), k)})
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    card = page.locator("#calibrated-scores")
    heading = card.locator("h3[data-metric=group_score]")
    expect(heading).to_be_visible()
    expect(heading).to_contain_text("one unit per group (n counts groups)")
    expect(card).to_contain_text("uniform random sample, drawn as whole DeepSynth checklist groups")
    expect(card.locator("table.calibrated").first.locator("tbody tr")).to_have_count(2)
    # 14 groups labelled in all, fewer than 40 per system: the card cautions, naming the unit
    expect(card.locator("[data-role=few-units]")).to_have_count(2)
    expect(card.locator("[data-role=few-units]").first).to_contain_text("fewer than 40")
    card.scroll_into_view_if_needed()
    screenshot("unit-sampling-card")
    assert_accessible(page, "the run page's calibrated group score")
