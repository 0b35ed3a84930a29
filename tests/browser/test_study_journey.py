"""Issue 16's whole study in real Chromium, from an empty database: a curator made by
``create_account`` signs in and, in the browser only, imports the DeepSynth example, uploads a
survey's text and proposes checklist items with the offline judge, makes and freezes a task set,
configures and tests a judge, starts a run from the runs form and watches it finish, creates a
verify, a pairwise and a blind agreement project, invites an annotator (one-time link) and adds a
second; the annotators label in every workspace by keyboard; the curator follows progress,
adjudicates a disagreement with an edit, opens the dashboards and exports the curated task set.

Every page is checked at 1366×768 with axe-core (WCAG 2 A/AA: no violation) and saved as
``test-artifacts/screenshots/journey-NN-<page>.png`` (the viewport, as a person sees it first).
Celery jobs (import, proposals, run, export) run on threads through the real task functions, as a
worker would (``tests.support.workers.deliver_on_threads``).
"""

import io
import re
import zipfile
from itertools import count

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotation import tasks as annotation_tasks
from annotation.models import AnnotationItem, AnnotationProject, ExportJob, GoldLabel, Label, PairwisePreference
from benchmark import tasks as benchmark_tasks
from benchmark.models import ChecklistItem, ImportJob, Report, Task, TaskSet
from scoring import tasks as scoring_tasks
from scoring.models import EvaluationRun, JudgeConfig, Verdict
from tests.support.axe import assert_accessible
from tests.support.browser import SCREENSHOTS
from tests.support.workers import deliver_on_threads

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORT = {"width": 1366, "height": 768}
PASSWORD = "a-long-annotator-passphrase"
SURVEY_TEXT = """Semantic visual SLAM adds object and scene semantics to visual localization and mapping.

# Semantic information extraction
## Object detection
## Semantic segmentation
# Semantic mapping
## Object-level maps
"""
SECOND_REPORT = """# Semantic visual SLAM

## Extraction
Detectors such as YOLO and Mask R-CNN label objects in keyframes; segmentation networks label pixels.

## Mapping
Object-level maps store detected instances as landmarks, which helps relocalization in dynamic scenes.
"""


@pytest.fixture
def workers(monkeypatch):
    """Every Celery task the journey enqueues runs on a thread, through its real function."""
    threads = []
    for path, function in (
        ("benchmark.tasks.run_import_job", benchmark_tasks.run_import_job),
        ("annotation.tasks.run_export", annotation_tasks.run_export),
        ("scoring.tasks.propose_batch", scoring_tasks.propose_batch),
        ("scoring.tasks.execute_job", scoring_tasks.execute_job),
        ("scoring.tasks.finalize_run", scoring_tasks.finalize_run),
    ):
        threads += [deliver_on_threads(monkeypatch, path, function, latency=0.3)]
    yield threads
    for group in threads:
        for thread in group:
            thread.join(timeout=60)


class Person:
    """One signed-in browser context at 1366×768 whose every page is checked and photographed."""

    numbers = count(1)

    def __init__(self, browser, base: str) -> None:
        self.context = browser.new_context(viewport=VIEWPORT)
        self.page = self.context.new_page()
        self.page.set_default_timeout(15_000)
        self.base = base

    def sign_in(self, username: str, password: str) -> None:
        self.page.goto(f"{self.base}/login/")
        self.check("sign-in")
        self.page.fill("input[name=username]", username)
        self.page.fill("input[name=password]", password)
        self.page.click("button[type=submit]")
        self.page.wait_for_url(lambda url: "/login/" not in url)

    def check(self, name: str) -> None:
        """axe finds no WCAG 2 A/AA violation; the viewport is saved for a person to look at."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"journey-{next(self.numbers):02d}-{name}.png"))
        assert_accessible(self.page, name)

    def press(self, *keys: str) -> None:
        for key in keys:
            self.page.keyboard.press(key)

    def next_item(self, previous: str | None) -> str:
        if previous is not None:
            expect(self.page.locator(f'.ws-item[data-item="{previous}"]')).to_have_count(0)
        return self.page.locator(".ws-item").get_attribute("data-item")


def _reports_zip(tmp_path) -> str:
    path = tmp_path / "second-system.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("autosurvey_gpt_4o/0.md", SECOND_REPORT)
        archive.writestr("storm/0.md", SECOND_REPORT.replace("Object-level maps", "Dense semantic maps"))
    return str(path)


def _imported(page) -> None:
    """Wait for the import job's end; a failure shows its table of errors in the assertion."""
    expect(page.locator("#import-state")).to_have_text(re.compile("Done|Failed"), timeout=60_000)
    assert page.locator("#import-state").inner_text() == "Done", page.locator("#import-status").inner_text()


def _created_password(username: str, role: str) -> str:
    out = io.StringIO()
    call_command("create_account", username=username, role=role, stdout=out)
    return re.search(r"password \(shown once, not stored in clear\): (\S+)", out.getvalue()).group(1)


def test_a_curator_runs_a_whole_study_in_the_browser(browser, live_server, datasets, settings, tmp_path, workers):
    settings.VAR_DIR = tmp_path
    assert not Task.objects.exists() and not JudgeConfig.objects.exists()  # an empty database
    curator_password = _created_password("curator", "curator")
    base = live_server.url
    cur = Person(browser, base)
    page = cur.page
    cur.sign_in("curator", curator_password)

    # --- 1. Import the DeepSynth example on a worker ------------------------------------------------------------
    page.goto(f"{base}/benchmark/imports/new/")
    page.select_option("select[name=format]", "deepsynth")
    page.set_input_files("input[name=file]", str(datasets / "deepsynth-eval" / "example_gen_result.jsonl"))
    cur.check("import-form")
    page.click("#import-button")
    _imported(page)
    n_tasks = Task.objects.filter(protocol="deepsynth").count()
    assert n_tasks == 4 and ImportJob.objects.get().counts["task"]["created"] == 4
    expect(page.locator("#import-counts tbody tr", has_text="task").first).to_contain_text("4")
    cur.check("import-done")
    # Two more systems' reports on task 0, for the pairwise project (a zip of <system>/<task key>.md).
    page.goto(f"{base}/benchmark/imports/new/")
    page.select_option("select[name=format]", "reports")
    page.set_input_files("input[name=file]", _reports_zip(tmp_path))
    page.click("#import-button")
    _imported(page)
    assert Report.objects.filter(task__key="0").count() == 3

    # --- 2. A judge configuration, tested ------------------------------------------------------------------------
    page.click("nav >> text=Runs")
    page.click("#judges-link")
    page.click("#new-judge")
    page.fill("input[name=name]", "offline-check")
    page.select_option("select[name=backend]", "offline")
    cur.check("judge-new")
    page.click("#save-judge")
    expect(page.locator("h1")).to_contain_text("offline-check")
    page.click("#test-connection")
    expect(page.locator("#judge-test-answer")).to_contain_text("calls no endpoint")
    cur.check("judge-tested")
    judge = JudgeConfig.objects.get(name="offline-check")

    # --- 3. The task page: upload the survey's text, then propose with the LLM -----------------------------------
    task0 = Task.objects.get(protocol="deepsynth", key="0")
    page.goto(f"{base}/benchmark/tasks/{task0.pk}/")
    expect(page.locator("#no-survey-text")).to_be_visible()
    page.click("#survey-text summary")
    outline = tmp_path / "semantic-vslam.md"
    outline.write_text(SURVEY_TEXT, encoding="utf-8")
    page.set_input_files("#survey-text input[name=file]", str(outline))
    cur.check("task-survey-upload")
    page.click("#upload-survey-text")
    expect(page.locator("ul.messages")).to_contain_text(
        "Survey text from semantic-vslam.md: 5 headings, 5 sections, an abstract.")
    expect(page.locator("text=Outline (5 headings)")).to_be_visible()
    page.uncheck("#proposals input[value=question]")
    page.uncheck("#proposals input[value=constraint_pairs]")
    page.select_option("#proposals select[name=judge_config]", str(judge.pk))
    page.click("#proposals button[type=submit]")
    batch_done = page.locator("#proposals .batches li", has_text="Finished")
    expect(batch_done).to_be_visible(timeout=30_000)
    proposed = ChecklistItem.objects.filter(group__task=task0, origin="llm")
    # The offline judge: a group per top-level section, an item per subsection of it.
    assert sorted(proposed.values_list("group__name", "text")) == [
        ("Semantic information extraction", "The report should discuss Object detection."),
        ("Semantic information extraction", "The report should discuss Semantic segmentation."),
        ("Semantic mapping", "The report should discuss Object-level maps."),
    ]
    expect(page.locator("#proposals .llm-proposals li")).to_have_count(3)
    expect(page.locator("#proposals .llm-proposals")).to_contain_text("The report should discuss Object detection.")
    cur.check("task-proposed")

    # --- 4. A task set of the DeepSynth tasks, frozen as a pilot ----------------------------------------------------
    page.click("nav >> text=Task sets")
    page.click("#new-taskset")
    page.select_option("#task-filter select[name=protocol]", "deepsynth")
    page.click("#task-filter button")
    expect(page.locator("#task-count")).to_contain_text("4 tasks")
    page.fill("input[name=name]", "Semantic SLAM pilot")
    cur.check("taskset-new")
    page.click("#create-taskset")
    expect(page.locator("h1")).to_contain_text("Semantic SLAM pilot")
    page.click("#freeze-pilot-button")  # its tasks are still in review: a pilot version
    expect(page.locator("#taskset-facts")).to_contain_text("frozen")
    task_set = TaskSet.objects.get(name="Semantic SLAM pilot")
    assert task_set.is_frozen and task_set.tasks.count() == 4
    cur.check("taskset-frozen")

    # --- 5. A run from the runs form, watched to its end ------------------------------------------------------------
    autosurvey = Report.objects.get(task=task0, system__name="autosurvey_gpt_4o").system
    page.click("nav >> text=Runs")
    page.click("#new-run")
    page.select_option("select[name=judge_config]", str(judge.pk))
    page.check(f"input[name=tasks][value='{task0.pk}']")
    expect(page.locator(f"label:has(input[name=systems][value='{autosurvey.pk}'])")).to_contain_text(
        "AutoSurvey GPT-4o")  # the identifier in words
    page.check(f"input[name=systems][value='{autosurvey.pk}']")
    page.fill("input[name=name]", "pilot run")
    cur.check("run-new")
    page.click("#start-run")
    expect(page.locator("#run-status")).to_have_text("Finished", timeout=60_000)
    run = EvaluationRun.objects.get(name="pilot run")
    n_verdicts = Verdict.objects.filter(report__score_cards__run=run).distinct().count()
    assert run.status == "finished" and n_verdicts == ChecklistItem.objects.filter(group__task=task0).count()
    expect(page.locator(".score-table td[title=autosurvey_gpt_4o]").first).to_have_text("AutoSurvey GPT-4o")
    cur.check("run-finished")

    # --- 6. Three projects: verify, pairwise, blind agreement ------------------------------------------------------
    def new_project(kind: str, name: str, *, steps=(), judge_id=None, blind=True, item_kind=None,
                    guidelines="") -> AnnotationProject:
        page.goto(f"{base}/annotate/new/?protocol=deepsynth")
        page.check(f"input[name=tasks][value='{task0.pk}']")
        page.check(f"input[name=kind][value={kind}]")
        page.fill("input[name=name]", name)
        if guidelines:
            page.fill("textarea[name=guidelines]", guidelines)
        if item_kind:
            page.check(f"input[name=item_kinds][value={item_kind}]")
        if judge_id:
            page.select_option("select[name=judge_config]", str(judge_id))
        if not blind:
            page.uncheck("input[name=blind]")
        page.click("#preview-button")
        expect(page.locator("#preview")).to_be_visible()
        cur.check(f"project-new-{kind}")
        preview = int(page.locator("#preview-items").inner_text())
        page.click("#create-button")
        page.wait_for_url(re.compile(r"/annotate/\d+/"))
        project = AnnotationProject.objects.get(name=name)
        assert project.items.count() == preview
        return project

    n_proposed = ChecklistItem.objects.filter(group__task=task0, review_status="proposed").count()
    verify = new_project("verify", "Semantic SLAM checklist review", item_kind="checklist_item",
                         guidelines="Accept an item only when **the survey itself** covers it.\n\n- Reject duplicates")
    assert verify.items.count() == n_proposed and verify.guidelines_version == 1
    pairwise = new_project("pairwise", "Semantic SLAM reports head to head", blind=False)
    assert pairwise.items.count() == 3 * 2  # three systems on the task: three pairs, each shown both ways
    agreement = new_project("agreement", "Do we agree with the offline judge?", judge_id=judge.pk)
    assert agreement.blind and agreement.items.count() == n_verdicts

    # --- 7. Members: an invited annotator (one-time link) and an account made by create_account -------------------
    page.goto(f"{base}/annotate/{verify.pk}/members/")
    page.fill("input[name=invite-username]", "annotator1")
    cur.check("members")
    page.click("#member-invite button[type=submit]")
    invite_link = page.locator("#invite-link code").inner_text()
    assert "/invite/" in invite_link
    cur.check("members-invited")
    second_password = _created_password("annotator2", "annotator")
    for project in (verify, pairwise, agreement):
        page.goto(f"{base}/annotate/{project.pk}/members/")
        for username in ("annotator1", "annotator2"):
            if page.locator("#members td", has_text=username).count():
                continue
            page.select_option("select[name=add-username]", username)
            page.click("#member-add button[type=submit]")
            expect(page.locator("#members")).to_contain_text(username)

    ann1 = Person(browser, base)
    a1 = ann1.page
    a1.goto(invite_link if invite_link.startswith("http") else f"{base}{invite_link}")
    expect(a1.locator("h1")).to_have_text("Set your password")
    ann1.check("invite-set-password")
    a1.fill("input[name=new_password1]", PASSWORD)
    a1.fill("input[name=new_password2]", PASSWORD)
    a1.click("button[type=submit]")
    ann1.sign_in("annotator1", PASSWORD)
    a1.goto(f"{base}/annotate/")
    expect(a1.locator("table.ws-projects tbody tr")).to_have_count(3)
    expect(a1.locator("nav >> text=Admin")).to_have_count(0)
    ann1.check("annotator-projects")

    # --- 8. Verify by keyboard: annotator1 accepts, annotator2 rejects the same item --------------------------------
    a1.goto(f"{base}/annotate/{verify.pk}/")
    first = ann1.next_item(None)
    item = AnnotationItem.objects.get(pk=first)
    target = ChecklistItem.objects.get(pk=item.target_id)
    # The guidelines the curator wrote open over the first item, rendered; Escape folds them.
    guidelines = a1.locator("[data-role=guidelines]")
    expect(guidelines).to_have_attribute("open", "")
    expect(guidelines.locator("strong").first).to_have_text("the survey itself")
    ann1.check("verify-guidelines")
    a1.keyboard.press("Escape")
    expect(guidelines).not_to_have_attribute("open", "")
    expect(a1.locator(".ws-proposal")).to_contain_text(target.text)
    ann1.check("verify-item")
    ann1.press("a", "Enter")
    ann1.next_item(first)
    expect(a1.locator(".ws-flash")).to_contain_text("Saved your label")

    ann2 = Person(browser, base)
    ann2.sign_in("annotator2", second_password)
    a2 = ann2.page
    a2.goto(f"{base}/annotate/{verify.pk}/")
    assert ann2.next_item(None) == first
    a2.keyboard.press("Escape")  # the guidelines open on annotator2's first item too
    ann2.press("r", "2", "Enter")
    ann2.next_item(first)
    item.refresh_from_db()
    assert item.disagreement
    assert sorted(Label.objects.filter(item=item).values_list("annotator__username", "value__decision")) == [
        ("annotator1", "accept"), ("annotator2", "reject")]
    assert set(Label.objects.filter(item=item).values_list("guidelines_version", flat=True)) == {1}

    # --- 9. Pairwise (systems named) and the blind agreement workspace ----------------------------------------------
    a1.goto(f"{base}/annotate/{pairwise.pk}/")
    expect(a1.locator(".ws-report")).to_have_count(2)
    expect(a1.locator(".ws-task-prompt")).to_have_text(task0.prompts.get(level="general").text)
    pills = a1.locator(".ws-report-head .pill").all_inner_texts()
    assert set(pills) <= {"AutoSurvey GPT-4o", "STORM", "DeepSynth example"} and len(pills) == 2
    ann1.check("pairwise-item")
    pair = ann1.next_item(None)
    ann1.press("ArrowRight", "Enter")
    ann1.next_item(pair)
    assert PairwisePreference.objects.filter(project=pairwise).count() == 1

    a1.goto(f"{base}/annotate/{agreement.pk}/")
    verdict_item = ann1.next_item(None)
    verdict = Verdict.objects.get(pk=AnnotationItem.objects.get(pk=verdict_item).target_id)
    judged = ChecklistItem.objects.get(pk=verdict.target_id)
    expect(a1.locator(".ws-judged")).to_contain_text(judged.text)
    expect(a1.locator("[data-testid=judge-verdict]")).to_have_count(0)  # blind until the label is given
    expect(a1.locator(".ws-item")).not_to_contain_text("autosurvey")
    ann1.check("agreement-item-blind")
    keys = {"correct": "1", "omitted": "2", "incorrect": "3"}
    ann1.press(keys[verdict.label], "Enter")
    expect(a1.locator("[data-testid=judge-verdict]")).to_be_visible()
    expect(a1.locator(".ws-agree")).to_have_text("You agreed with the judge.")
    ann1.check("agreement-item-revealed")

    # --- 10. The curator: progress, adjudication with an edit, dashboards, the curated export ------------------------
    page.goto(f"{base}/annotate/{verify.pk}/progress/")
    for username in ("annotator1", "annotator2"):  # one label each, on the disputed item
        expect(page.locator(f"#annotator-progress tr[data-user={username}] td").first).to_have_text("1")  # labels
    cur.check("verify-progress")
    page.goto(f"{base}/annotate/")
    expect(page.locator(".ws-awaiting")).to_have_text("1 to adjudicate")
    page.click(".ws-awaiting")
    row = page.locator(f"#adj-{item.pk}")
    expect(row.locator(".ws-label")).to_have_count(2)
    expect(row).to_contain_text(target.text)
    cur.check("adjudication")
    edited = target.text + " (as the survey puts it)"
    row.locator(".ws-decision label:has(input[value=custom])").click()  # "Something else"
    row.locator(".adj-custom label:has(input[value=edit])").click()
    row.locator(".adj-edit summary").click()
    row.locator(".adj-edit textarea").first.fill(edited)
    row.locator("button[type=submit]").click()
    expect(row).to_contain_text("Gold label recorded")
    target.refresh_from_db()
    assert (target.text, target.review_status) == (edited, "edited")
    assert GoldLabel.objects.get(item=item).value["decision"] == "edit"
    cur.check("adjudicated")

    page.goto(f"{base}/dashboards/agreement/")
    judged_row = page.locator("tr", has_text="DeepSynth-Eval: checklist group").first  # the step in words
    expect(judged_row.locator("th, td")).to_have_text(
        ["offline-check", "DeepSynth-Eval: checklist group", "1", "1", "1.000", "—", re.compile("nominal"),
         re.compile(rf"^0 \(\+{n_verdicts - 1} unlabelled\)$")])  # one item labelled, in agreement with the judge
    cur.check("dashboard-agreement")
    page.goto(f"{base}/dashboards/leaderboard/?protocol=deepsynth")
    expect(page.locator("main")).to_contain_text("AutoSurvey GPT-4o")
    cur.check("dashboard-leaderboard")

    # v1 stays the frozen snapshot; the export is of v2, which holds the adjudicated edit.
    page.goto(f"{base}/benchmark/task-sets/{task_set.pk}/")
    page.click("#new-version-button")
    expect(page.locator("h1")).to_contain_text("v2")
    page.select_option("select[name=format]", "deepsynth")
    page.check("input[name=include_unreviewed]")
    cur.check("taskset-export")
    page.click("#export-form button[type=submit]")
    page.wait_for_url("**/benchmark/exports/")
    job = ExportJob.objects.get()
    page.wait_for_selector(f"#export-{job.pk}[data-status=done]", timeout=30_000)
    cur.check("export-done")
    with page.expect_download() as info:
        page.locator(f"#export-{job.pk} a.download").click()
    with zipfile.ZipFile(info.value.path()) as archive:
        names = archive.namelist()
        manifest = next(archive.read(n).decode() for n in names if n.endswith("manifest.json"))
        exported = "".join(archive.read(n).decode() for n in names if n.endswith(".jsonl"))
    assert '"include_unreviewed": true' in manifest
    assert edited in exported and exported.count("\n") == 4  # the four tasks, with the adjudicated edit
    for person in (cur, ann1, ann2):
        person.context.close()
