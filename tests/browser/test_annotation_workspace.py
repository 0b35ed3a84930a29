"""The annotation workspace in a real browser: verify with the keyboard only, pairwise
preferences, blind judge-verdict labels, a disagreement, and the curator's adjudication."""

import re

import pytest
from playwright.sync_api import expect

from annotation.loop.claims import claim_next_item
from annotation.models import AnnotationItem, GoldLabel, Label, PairwisePreference, ReportPair, Role
from annotation.loop.labels import label_submit
from annotation.services.projects import membership_add, project_create
from benchmark.models import Nugget
from scoring.models import Verdict
from tests.annotation_factories import JudgeConfigFactory, ProfileFactory, VerdictFactory, token
from tests.factories import (
    BibEntryFactory,
    ChecklistGroupFactory,
    ChecklistItemFactory,
    GoldReferenceFactory,
    NuggetFactory,
    ReportFactory,
    SurveyFactory,
    SystemFactory,
    TaskFactory,
    TaskPromptFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests"

SURVEY = {
    "title": "Radar Data Representations for Deep Learning in Autonomous Driving: A Survey",
    "year": 2023,
    "authors": "Shanliang Yao, Runwei Guan, Zitian Peng, et al.",
    "outline": [
        [1, "Introduction"], [1, "Radar signal processing"], [2, "Range-Doppler maps"], [1, "Point clouds"],
        [2, "Sparsity and noise"], [1, "Radar tensors"], [1, "Datasets"], [1, "Open challenges"],
    ],
    "content": [
        {"heading": "Introduction", "level": 1, "text": "Radar is robust in rain, fog and darkness, unlike cameras."},
        {"heading": "Point clouds", "level": 1,
         "text": "Radar **point clouds** are sparse: a frame holds a few hundred points, against 100k for lidar. "
                 "Detectors adapted from lidar (PointPillars) must cope with sparsity and multipath noise."},
        {"heading": "Radar tensors", "level": 1,
         "text": "Range-azimuth-Doppler **tensors** keep the full signal; they cost memory but preserve weak returns."},
        {"heading": "Datasets", "level": 1,
         "text": "nuScenes, RadarScenes and K-Radar provide radar data; only K-Radar ships 4D tensors."},
    ],
    "references": [
        {"number": 1, "title": "PointPillars: Fast Encoders for Object Detection from Point Clouds"},
        {"number": 2, "title": "K-Radar: 4D Radar Object Detection for Autonomous Driving"},
        {"number": 3, "title": "RadarScenes: A Real-World Radar Point Cloud Data Set"},
    ],
}


def report_text(angle: str, cites: str) -> str:
    return (
        f"# Radar representations for driving\n\n## Overview\n\nRadar complements cameras in bad weather {cites}. "
        f"This report focuses on {angle}.\n\n## Point clouds\n\nPoint clouds are sparse and noisy [1]. "
        "Pillar-based detectors work on them [2].\n\n## Tensors\n\n4D tensors keep weak returns [3].\n\n"
        "## References\n[1] RadarScenes: A Real-World Radar Point Cloud Data Set. https://arxiv.org/abs/2104.02493\n"
        "[2] PointPillars: Fast Encoders for Object Detection from Point Clouds.\n"
        "[3] K-Radar: 4D Radar Object Detection for Autonomous Driving. https://arxiv.org/abs/2206.08171\n"
    )


def build_world():
    curator = ProfileFactory(user=UserFactory(username="curator"), role=Role.CURATOR).user
    ann1 = ProfileFactory(user=UserFactory(username="annotator1")).user
    ann2 = ProfileFactory(user=UserFactory(username="annotator2")).user
    survey = SurveyFactory(**SURVEY)
    task = TaskFactory(protocol="deepsynth", key="radar-survey", title="Radar data representations", survey=survey)

    # Verify: five proposals of one task (the group itself is already accepted).
    TaskPromptFactory(task=task, text="Write a survey of radar data representations for deep learning in driving.")
    group = ChecklistGroupFactory(task=task, name="Point clouds", threshold=2.0, review_status="accepted")
    ChecklistItemFactory(group=group, text="The report says radar point clouds are sparse compared to lidar.")
    ChecklistItemFactory(group=group, text="The report mentions stuff about noise.")
    GoldReferenceFactory(task=task, important=True, bib_entry=BibEntryFactory(title=SURVEY["references"][1]["title"]))
    NuggetFactory(task=task, text="Radar works in fog and darkness, where cameras fail.", importance="vital")
    # Not blind: its walk undoes a skip with u (a blind project has no Undo: test_blind_workspace.py).
    verify = project_create(name="Radar survey checklist", kind="verify", created_by=curator, tasks=[task],
                            description="Two-stage verification of the proposed checklist.", blind=False)

    # Pairwise: three systems on the same task.
    systems = [SystemFactory(name=name) for name in ("deep-research-x", "surveyforge", "autosurvey")]
    pair_task = TaskFactory(protocol="surveylens", key="radar-pairs", title="Radar survey", survey=survey)
    for system, angle, cites in zip(systems, ("point clouds", "tensors", "datasets"), ("[1]", "[2, 3]", "[3]")):
        ReportFactory(task=pair_task, system=system, text=report_text(angle, cites))
    pairwise = project_create(name="Radar reports, head to head", kind="pairwise", created_by=curator,
                              tasks=[pair_task], dimensions=["coverage", "citations"])

    # Agreement: three judge verdicts on checklist items of one report.
    judge = JudgeConfigFactory(name="gpt-judge v1")
    # A system the blind pairwise project does not compare: while it is open, its annotators see
    # nothing that names or judges a report of the systems it compares, in any project (issue #37).
    report = ReportFactory(task=task, system=SystemFactory(name="radar-baseline"),
                           text=report_text("point clouds", "[1]"))
    judged = [
        ("The report explains why radar point clouds are sparse.", "correct", "Section 'Point clouds' says so."),
        ("The report compares radar datasets.", "omitted", "No dataset comparison appears in the report."),
        ("The report mentions 4D radar tensors.", "correct", "Section 'Tensors' mentions 4D tensors [3]."),
    ]
    judged_group = ChecklistGroupFactory(task=task, name="Coverage", review_status="accepted")
    for text, label, rationale in judged:
        item = ChecklistItemFactory(group=judged_group, text=text, review_status="accepted")
        VerdictFactory(report=report, judge_config=judge, target_id=item.pk, label=label, rationale=rationale,
                       evidence=text.split("report ")[-1])
    agreement = project_create(name="Judge checks on radar reports", kind="agreement", created_by=curator,
                               tasks=[task], judge_config=judge, overlap=2,
                               label_set={"label": ["correct", "omitted", "incorrect"]})
    for project in (verify, pairwise, agreement):
        for user in (ann1, ann2):
            membership_add(project=project, user=user, role=Role.ANNOTATOR, actor=curator)
    return {"curator": curator, "ann1": ann1, "ann2": ann2, "verify": verify, "pairwise": pairwise,
            "agreement": agreement}


def press(page, *keys):
    for key in keys:
        page.keyboard.press(key)


def wait_item(page, previous: str | None) -> str:
    """Wait until a new item panel is shown; return its id."""
    if previous is not None:
        # a selector, not a JS string: the CSP (script-src 'self') forbids evaluating strings
        expect(page.locator(f'.ws-item[data-item="{previous}"]')).to_have_count(0)
    return page.locator(".ws-item").get_attribute("data-item")


def test_annotation_workspace_end_to_end(page, live_server, login, screenshot):
    world = build_world()
    verify, pairwise, agreement = world["verify"], world["pairwise"], world["agreement"]
    login("annotator1", PASSWORD)

    # --- The project list ----------------------------------------------------------------------
    page.goto(f"{live_server.url}/annotate/")
    rows = page.locator("table.ws-projects tbody tr")
    expect(rows).to_have_count(3)
    screenshot("projects-annotator")

    # --- Verify five proposals with the keyboard only --------------------------------------------
    page.goto(f"{live_server.url}/annotate/{verify.pk}/")
    expect(page.locator(".ws-proposal")).to_contain_text("General question")
    expect(page.locator(".ws-source")).to_contain_text("Radar Data Representations")
    first = wait_item(page, None)
    press(page, "?")
    expect(page.locator("#ws-help")).to_be_visible()
    screenshot("verify-help")
    press(page, "?")
    expect(page.locator("#ws-help")).to_be_hidden()
    screenshot("verify-1")

    # 1. accept — the first attempt fails on the network: message shown, choice kept, retry works.
    page.route("**/label/", lambda route: route.abort())
    press(page, "a", "Enter")
    expect(page.locator("#ws-alert")).to_contain_text("Could not reach the server")
    expect(page.locator("input[name=decision][value=accept]")).to_be_checked()
    screenshot("verify-network-error")
    page.unroute("**/label/")
    press(page, "Enter")
    second = wait_item(page, first)
    expect(page.locator(".ws-flash")).to_contain_text("Saved your label")
    expect(page.locator("#ws-alert")).to_be_empty()

    # 2. reject as ambiguous (r, then 2 picks the reason)
    expect(page.locator(".ws-proposal")).to_contain_text("sparse compared to lidar")
    expect(page.locator(".ws-source .ws-passage").first).to_contain_text("point clouds")
    press(page, "r")
    expect(page.locator(".ws-reasons")).to_be_visible()
    press(page, "2")
    expect(page.locator("input[name=reason][value=ambiguous]")).to_be_checked()
    screenshot("verify-2-reject")
    press(page, "Enter")
    third = wait_item(page, second)

    # 3. edit in place: e focuses the text, Esc leaves it, Enter submits
    expect(page.locator(".ws-proposal")).to_contain_text("stuff about noise")
    press(page, "e")
    page.keyboard.press("Control+a")
    page.keyboard.type("The report says radar points suffer from multipath noise.")
    press(page, "Escape")
    screenshot("verify-3-edit")
    press(page, "Enter")
    fourth = wait_item(page, third)

    # 4. skip the gold reference, undo the skip, then accept it
    expect(page.locator(".ws-proposal")).to_contain_text("K-Radar")
    press(page, "s")
    fifth = wait_item(page, fourth)
    expect(page.locator(".ws-flash")).to_contain_text("Skipped item")
    press(page, "u")
    assert wait_item(page, fifth) == fourth
    expect(page.locator(".ws-flash")).to_contain_text("Undid your skip")
    # A slow settle (htmx wires a swapped panel's elements only then) puts the n below before it:
    # the add form must load all the same.
    page.evaluate("htmx.config.defaultSettleDelay = 400")
    press(page, "a", "Enter")
    assert wait_item(page, fourth) == fifth

    # 5. a missing nugget, added with the keyboard: n opens the form on its kind, Tab to the text,
    #    Ctrl+Enter adds it (an empty text is refused first, with the error on the field)
    expect(page.locator(".ws-proposal")).to_contain_text("fog and darkness")
    press(page, "n")
    expect(page.locator("#ws-add select[name=add-kind]")).to_be_focused()
    expect(page.locator("#ws-add[data-focus]")).to_have_count(0)  # the card has settled
    page.evaluate("htmx.config.defaultSettleDelay = 0")
    expect(page.locator("#ws-add select[name=add-kind]")).to_have_value("nugget")
    press(page, "Tab", "Control+Enter")
    expect(page.locator("#ws-add .error")).to_contain_text("This field is required")
    expect(page.locator("#ws-add textarea[name=add-text]")).to_be_focused()
    page.keyboard.type("Only K-Radar ships 4D radar tensors.")
    press(page, "Tab", "ArrowUp")  # importance: okay → vital
    expect(page.locator("#ws-add select[name=add-importance]")).to_have_value("vital")
    screenshot("verify-add-missing")
    press(page, "Control+Enter")
    expect(page.locator("[data-testid=added]")).to_contain_text("Added nugget “Only K-Radar ships 4D radar tensors.”")
    expect(page.locator(".ws-item")).to_be_focused()
    expect(page.locator("#ws-add details")).not_to_have_attribute("open", "")
    screenshot("verify-add-missing-done")

    # 6. reject as "other" with a note: 6 picks the reason and focuses the note
    press(page, "r", "6")
    page.keyboard.type("Not a claim of this survey: it is its motivation.")
    press(page, "Escape", "Enter")
    wait_item(page, fifth)

    # 7. the added nugget is reviewed like any proposal
    expect(page.locator(".ws-proposal")).to_contain_text("Only K-Radar ships 4D radar tensors.")
    press(page, "a", "Enter")
    expect(page.locator(".ws-done")).to_contain_text("Nothing left for you")
    expect(page.locator("[data-testid=my-labels]")).to_have_text("6")
    screenshot("verify-done")
    labels = Label.objects.filter(project=verify, annotator=world["ann1"]).order_by("created_at")
    values = [label.value for label in labels]
    assert [value["decision"] for value in values] == ["accept", "reject", "edit", "accept", "reject", "accept"]
    assert values[1]["reason"] == "ambiguous" and values[4]["reason"] == "other"
    assert values[2]["edits"] == {"text": "The report says radar points suffer from multipath noise."}
    added = Nugget.objects.get(text="Only K-Radar ships 4D radar tensors.")
    assert (added.origin, added.proposed_by, added.importance) == ("human", "annotator1", "vital")

    # --- Two pairwise preferences --------------------------------------------------------------
    page.goto(f"{live_server.url}/annotate/{pairwise.pk}/")
    expect(page.locator(".ws-report")).to_have_count(2)
    for system in ("deep-research-x", "surveyforge", "autosurvey"):
        expect(page.locator(".ws-pair")).not_to_contain_text(system)  # blind
    expect(page.locator("input[name$=report_id]")).to_have_count(0)  # the form names sides, not reports
    expect(page.locator(".ws-report a[href^='#ref-left-']").first).to_be_visible()
    pair1 = wait_item(page, None)
    page.wait_for_timeout(600)  # a measurable reading time
    press(page, "1", "j", "2", "j", "3", "c")
    page.keyboard.type("A is organized around representations; B lists datasets.")
    press(page, "Escape")
    screenshot("pairwise-1")
    press(page, "Enter")
    wait_item(page, pair1)
    expect(page.locator(".ws-flash")).to_contain_text("Saved your label")
    press(page, "ArrowRight")
    expect(page.locator(".ws-row.active input[value=right]")).to_be_checked()
    screenshot("pairwise-2")
    press(page, "Enter")
    expect(page.locator("[data-testid=my-labels]")).to_have_text("2")
    preferences = list(PairwisePreference.objects.filter(project=pairwise).order_by("labeled_at"))
    assert [p.choice for p in preferences] == ["left", "right"]
    for preference in preferences:  # the server resolved the sides to the pair's reports
        pair = ReportPair.objects.get(pk=preference.label.item.target_id)
        assert (preference.report_left_id, preference.report_right_id) == (pair.report_left_id, pair.report_right_id)
    assert preferences[0].dimensions == {"coverage": "right", "citations": "tie"}
    assert preferences[0].seconds_taken >= 0.5 and preferences[0].reason.startswith("A is organized")

    # --- Three judge verdicts, blind -------------------------------------------------------------
    page.goto(f"{live_server.url}/annotate/{agreement.pk}/")
    keys = {"correct": "1", "omitted": "2", "incorrect": "3"}
    previous = None
    for n in range(1, 4):
        item_id = wait_item(page, previous)
        verdict = Verdict.objects.get(pk=AnnotationItem.objects.get(pk=item_id).target_id)
        expect(page.locator("[data-testid=judge-verdict]")).to_have_count(0)
        expect(page.locator(".ws-item")).not_to_contain_text(verdict.rationale)
        if n == 1:
            screenshot("agreement-1-before")
        press(page, keys[verdict.label], "Enter")
        expect(page.locator("[data-testid=judge-verdict]")).to_be_visible()
        expect(page.locator("[data-testid=judge-verdict]")).to_contain_text(verdict.rationale)
        expect(page.locator(".ws-agree")).to_have_text("You agreed with the judge.")
        screenshot(f"agreement-{n}-after")
        press(page, "Enter")  # next item
        previous = item_id
    expect(page.locator(".ws-done")).to_be_visible()

    # A second annotator disagrees on the item the judge called omitted.
    for _ in range(3):
        item = claim_next_item(project=agreement, user=world["ann2"]).item
        judge_label = Verdict.objects.get(pk=item.target_id).label
        label = "correct" if judge_label == "omitted" else judge_label
        label_submit(item=item, annotator=world["ann2"], value={"label": label, "correction": "It is in §4."},
                     client_token=token())
    disputed = AnnotationItem.objects.get(project=agreement, disagreement=True)

    # --- The curator adjudicates -----------------------------------------------------------------
    page.context.clear_cookies()
    login("curator", PASSWORD)
    page.goto(f"{live_server.url}/annotate/")
    expect(page.locator(".ws-awaiting")).to_have_text("1 to adjudicate")
    screenshot("projects-curator")
    page.click(".ws-awaiting")
    expect(page.locator("[data-testid=adj-count]")).to_have_text("1")
    row = page.locator(f"#adj-{disputed.pk}")
    expect(row.locator(".ws-label")).to_have_count(2)
    expect(row).to_contain_text("The judge: omitted")
    screenshot("adjudicate-1")
    press(page, "1", "c")
    page.keyboard.type("Checked the report: no dataset comparison.")
    press(page, "Escape", "Enter")
    expect(row).to_contain_text("Gold label recorded")
    screenshot("adjudicate-2")
    gold = GoldLabel.objects.get(item=disputed)
    assert gold.value["label"] == "omitted" and gold.note.startswith("Checked the report")
    assert re.match(r"^annotator1", row.locator(".ws-label").first.inner_text())

    page.goto(f"{live_server.url}/annotate/{agreement.pk}/progress/")
    progress_rows = page.locator("table.grid tbody tr")
    expect(progress_rows).to_have_count(3)  # the curator (who may label too) and both annotators
    expect(progress_rows.filter(has_text="annotator2")).to_contain_text("3")
    screenshot("progress-curator")


def test_agreement_items_show_what_the_judge_saw_with_their_own_labels(page, live_server, login, screenshot):
    """Real DeepScholar verdicts (the pipeline's hand-built case): a citation-support item shows its
    sentence and the cited source, offers support / not support only, and hides the verdict until
    the label is committed; the workspace passes axe's WCAG 2 A/AA rules before and after."""
    from tests.annotation_factories import curator as make_curator
    from tests.annotation_factories import deepscholar_agreement_project
    from tests.support.axe import assert_accessible

    owner = make_curator("curator")
    annotator = UserFactory(username="annotator1")
    annotator.set_password(PASSWORD)
    annotator.save()
    ProfileFactory(user=annotator, role=Role.ANNOTATOR)
    project = deepscholar_agreement_project(owner, [annotator])
    login("annotator1", PASSWORD)
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/annotate/{project.pk}/")
    item_id = wait_item(page, None)
    verdict = Verdict.objects.get(pk=AnnotationItem.objects.get(pk=item_id).target_id)
    assert verdict.step == "deepscholar.citation_support"
    judged = page.locator(".ws-judged")
    expect(judged.locator("h3").first).to_have_text("Sentence of the report")
    expect(judged.locator("h3").nth(1)).to_contain_text("ource")
    expect(page.locator("input[name=label]")).to_have_count(2)
    expect(page.locator(".ws-decision").first).to_contain_text("Support")
    expect(page.locator("[data-testid=judge-verdict]")).to_have_count(0)
    screenshot("agreement-citation-before")
    assert_accessible(page, "agreement workspace, citation support, before labelling")
    press(page, "1" if verdict.label == "support" else "2", "Enter")
    expect(page.locator("[data-testid=judge-verdict]")).to_be_visible()
    expect(page.locator(".ws-agree")).to_have_text("You agreed with the judge.")
    screenshot("agreement-citation-after")
    assert_accessible(page, "agreement workspace, citation support, revealed")
