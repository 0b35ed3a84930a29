"""Proposing benchmark material through the loopback OpenAI-compatible server (scoring.services.proposals)."""

import json

import pytest
from django.contrib.contenttypes.models import ContentType

from benchmark.models import (
    ChecklistGroup,
    ChecklistItem,
    ConstraintQuestion,
    Origin,
    RubricCriterion,
    Task,
    TaskPrompt,
)
from benchmark.services.history import proposable_review
from core.models import AuditLog
from scoring.judges.lexical import content_words
from scoring.models import JudgeConfig, LLMCall, ProposalBatch
from scoring.services.proposals import proposal_batch_create, proposal_batch_execute, propose
from tests.factories import DisciplineFactory, SurveyFactory, TaskFactory, TaskPromptFactory, UserFactory
from tests.support.fake_openai import Reply

pytestmark = pytest.mark.django_db

TOKENS_IN, TOKENS_OUT = 100, 20  # what Reply.json reports per request
PRICE_IN, PRICE_OUT = 1.5, 6.0  # USD per million tokens
OUTLINE = [[1, "Introduction"], [1, "Visual SLAM"], [2, "Feature-based methods"], [2, "Direct methods"],
           [1, "Semantic mapping"], [2, "Object-level maps"], [1, "Conclusion"]]
CONTENT = [{"heading": "Visual SLAM", "level": 1, "text": "ORB-SLAM2 tracks ORB features; DSO minimises photometric error."},
           {"heading": "Semantic mapping", "level": 1,
            "text": "| Dataset | Year |\n|---|---|\n| KITTI | 2012 |\n| TUM RGB-D | 2012 |"}]
GROUPS = {"groups": [
    {"name": "Visual SLAM foundations", "items": ["The report should explain that ORB-SLAM2 tracks ORB features.",
                                                   "The report should explain that DSO minimises photometric error."]},
    {"name": "Semantic mapping", "items": ["The report should describe object-level maps."]},
]}
PAIRS = {"pairs": [{"anchor": "table: SLAM datasets", "question": "Include a table of SLAM datasets by year.",
                    "items": ["KITTI was released in 2012.", "TUM RGB-D was released in 2012."]}]}
QUESTION = {"question": "Please write a comprehensive survey of semantic visual SLAM based on the provided papers."}


def step_of(request) -> str:
    system = request.body["messages"][0]["content"]
    return system.split("task `", 1)[1].split("`", 1)[0]


def scripted(answers: dict):
    """A responder answering each step with its fixed object (or reply)."""
    def respond(request):
        answer = answers[step_of(request)]
        return answer if isinstance(answer, Reply) else Reply.json(answer, tokens_in=TOKENS_IN, tokens_out=TOKENS_OUT)
    return respond


@pytest.fixture
def config(fake_openai):
    return JudgeConfig.objects.create(name="fake-llm", backend=JudgeConfig.Backend.OPENAI, model="fake-judge",
                                      base_url=fake_openai.base_url, max_retries=0, price_input_per_million=PRICE_IN,
                                      price_output_per_million=PRICE_OUT)


@pytest.fixture
def task():
    survey = SurveyFactory(title="Semantic Visual SLAM: A Survey", abstract="We review semantic visual SLAM.",
                           outline=OUTLINE, content=CONTENT)
    return TaskFactory(protocol="deepsynth", key="slam", survey=survey)


def llm_rows(model, **filters):
    return model.objects.filter(origin=Origin.LLM, **filters)


def revisions_of(model, ids):
    return AuditLog.objects.filter(content_type=ContentType.objects.get_for_model(model), object_id__in=list(ids),
                                   action="proposable.propose")


def test_every_stage_stores_llm_proposals_with_revisions_calls_and_costs(fake_openai, config, task):
    fake_openai.responder = scripted({"propose.general_question": QUESTION, "propose.topic_groups": GROUPS,
                                      "propose.constraint_pairs": PAIRS})
    curator = UserFactory(username="cura")

    summary = propose(tasks=[task], judge_config=config, actor=curator)

    assert [(o.stage, o.status) for o in summary.outcomes] == [
        ("question", "proposed"), ("topic_groups", "proposed"), ("constraint_pairs", "proposed")]
    assert summary.proposed == {"checklist_group": 3, "checklist_item": 5, "constraint_question": 1, "prompt": 1}
    prompt = TaskPrompt.objects.get(task=task, level="general")
    assert (prompt.text, prompt.origin, prompt.review_status) == (QUESTION["question"], "llm", "proposed")
    groups = list(llm_rows(ChecklistGroup, task=task).order_by("position"))
    assert [(g.name, g.kind, g.anchor) for g in groups] == [
        ("Visual SLAM foundations", "general", "topic"), ("Semantic mapping", "general", "topic"),
        ("table: SLAM datasets", "constraint", "structure")]
    assert groups[2].constraint_question == ConstraintQuestion.objects.get(task=task)
    assert [i.text for i in ChecklistItem.objects.filter(group=groups[0]).order_by("position")] == GROUPS["groups"][0]["items"]
    assert not ChecklistItem.objects.filter(group__task=task).exclude(origin="llm", review_status="proposed").exists()
    # One "propose" revision per row, by the curator who asked, naming the judge.
    for model, rows in ((TaskPrompt, [prompt]), (ChecklistGroup, groups),
                        (ChecklistItem, ChecklistItem.objects.filter(group__task=task))):
        revisions = revisions_of(model, [r.pk for r in rows])
        assert revisions.count() == len(rows)
        assert all(r.actor == curator and r.actor_label == "fake-judge" and "fake-llm" in r.note for r in revisions)
    item = ChecklistItem.objects.filter(group=groups[0]).first()
    assert revisions_of(ChecklistItem, [item.pk]).get().after["text"] == item.text
    # One call per stage, priced from the configuration.
    calls = LLMCall.objects.filter(judge_config=config)
    assert calls.count() == 3 == len(fake_openai.chat_requests())
    assert all(c.ok and c.run is None and len(c.request_hash) == 64 for c in calls)
    expected_cost = (TOKENS_IN * PRICE_IN + TOKENS_OUT * PRICE_OUT) / 1_000_000
    assert [o.cost_usd for o in summary.outcomes] == pytest.approx([expected_cost] * 3)
    assert sum(o.tokens_in for o in summary.outcomes) == 3 * TOKENS_IN
    # The prompt the judge saw carries the survey's outline as headings and its content.
    topic_request = next(r for r in fake_openai.chat_requests() if step_of(r) == "propose.topic_groups")
    assert "## Feature-based methods" in topic_request.last_message and "| KITTI | 2012 |" in topic_request.last_message


def test_a_rerun_on_unchanged_input_makes_no_call_and_changed_input_asks_again(fake_openai, config, task):
    fake_openai.responder = scripted({"propose.general_question": QUESTION, "propose.topic_groups": GROUPS,
                                      "propose.constraint_pairs": PAIRS})
    propose(tasks=[task], judge_config=config)
    rows = (ChecklistItem.objects.count(), ChecklistGroup.objects.count(), AuditLog.objects.count())
    requests = len(fake_openai.chat_requests())

    again = propose(tasks=[task], judge_config=config)

    assert len(fake_openai.chat_requests()) == requests == 3
    assert [o.status for o in again.outcomes] == ["reused"] * 3 and again.proposed == {}
    assert (ChecklistItem.objects.count(), ChecklistGroup.objects.count(), AuditLog.objects.count()) == rows
    assert LLMCall.objects.count() == 3

    # Another configuration is another question: it asks, and adds nothing that already exists.
    other = JudgeConfig.objects.create(name="fake-llm-2", backend="openai", model="fake-judge-2",
                                       base_url=fake_openai.base_url, max_retries=0)
    third = propose(tasks=[task], stages=["topic_groups"], judge_config=other)
    assert len(fake_openai.chat_requests()) == 4
    assert third.outcomes[0].status == "proposed" and third.proposed == {}
    assert ChecklistItem.objects.count() == rows[0]


def test_reviewed_items_are_neither_overwritten_nor_duplicated(fake_openai, config, task):
    fake_openai.responder = scripted({"propose.general_question": QUESTION, "propose.topic_groups": GROUPS})
    propose(tasks=[task], stages=["question", "topic_groups"], judge_config=config)
    expert = UserFactory(username="expert")
    prompt = TaskPrompt.objects.get(task=task, level="general")
    prompt = proposable_review(obj=prompt, status="edited", expected_version=prompt.version, actor=expert,
                               edits={"text": "Survey semantic visual SLAM, please."})
    rejected = ChecklistItem.objects.filter(group__task=task).order_by("pk").first()
    rejected = proposable_review(obj=rejected, status="rejected", expected_version=rejected.version, actor=expert)

    # Changed input (a new abstract) asks again; the edited question stays, the rejected item is not re-added.
    task.survey.abstract = "We review semantic visual SLAM, its datasets and its maps."
    task.survey.outline = OUTLINE + [[1, "Future work"]]
    task.survey.save()
    fake_openai.responder = scripted({
        "propose.topic_groups": {"groups": [GROUPS["groups"][0] | {"items": GROUPS["groups"][0]["items"] + [
            "The report should compare feature-based and direct methods."]}]},
    })
    summary = propose(tasks=[task], stages=["question", "topic_groups"], judge_config=config)

    assert [(o.stage, o.status) for o in summary.outcomes] == [("question", "skipped"), ("topic_groups", "proposed")]
    assert "edited" in summary.outcomes[0].reason
    assert summary.proposed == {"checklist_item": 1}
    prompt.refresh_from_db()
    assert (prompt.text, prompt.review_status, prompt.version) == ("Survey semantic visual SLAM, please.", "edited", 2)
    rejected.refresh_from_db()
    assert rejected.review_status == "rejected"
    texts = list(ChecklistItem.objects.filter(group__task=task).values_list("text", flat=True))
    assert len(texts) == len(set(texts)) == 4
    assert len(fake_openai.chat_requests()) == 3  # the occupied question slot was not even asked


def test_an_imported_prompt_is_kept_and_an_own_unreviewed_proposal_is_revised(fake_openai, config, task):
    TaskPromptFactory(task=task, level="general", text="Imported question.", origin=Origin.IMPORT)
    fake_openai.responder = scripted({"propose.general_question": QUESTION})
    summary = propose(tasks=[task], stages=["question"], judge_config=config)
    assert summary.outcomes[0].status == "skipped" and not fake_openai.chat_requests()
    assert TaskPrompt.objects.get(task=task).text == "Imported question."

    TaskPrompt.objects.all().delete()
    propose(tasks=[task], stages=["question"], judge_config=config)
    task.survey.abstract = "A different abstract."
    task.survey.save()
    fake_openai.responder = scripted({"propose.general_question": {"question": "A revised question."}})
    revised = propose(tasks=[task], stages=["question"], judge_config=config)
    prompt = TaskPrompt.objects.get(task=task)
    assert (revised.outcomes[0].revised, prompt.text, prompt.version) == (1, "A revised question.", 2)
    assert AuditLog.objects.filter(object_id=prompt.pk, action="proposable.revise").count() == 1


def test_a_malformed_answer_stores_nothing_and_reports_the_reason(fake_openai, config, task):
    fake_openai.script(Reply.text("not json at all"), Reply.text('{"groups": "still wrong"}'))
    before = AuditLog.objects.count()

    summary = propose(tasks=[task], stages=["topic_groups"], judge_config=config)

    (outcome,) = summary.outcomes
    assert outcome.status == "failed"
    assert outcome.reason.startswith("judge error: invalid answer after one repair")
    assert "groups" in outcome.reason
    assert not ChecklistGroup.objects.exists() and not ChecklistItem.objects.exists()
    assert AuditLog.objects.count() == before
    call = LLMCall.objects.get()  # the tokens were spent: the failed call is accounted for, and not reused
    assert (call.ok, call.attempts, call.tokens_in) == (False, 2, 2 * TOKENS_IN)
    fake_openai.responder = scripted({"propose.topic_groups": GROUPS})
    retry = propose(tasks=[task], stages=["topic_groups"], judge_config=config)
    assert retry.outcomes[0].status == "proposed" and len(fake_openai.chat_requests()) == 3


def test_an_answer_that_cannot_be_stored_leaves_nothing_half_stored(fake_openai, config, task):
    broken = {"groups": [GROUPS["groups"][0], {"name": "Semantic mapping", "items": ["   "]}]}
    fake_openai.responder = scripted({"propose.topic_groups": broken,
                                      "propose.constraint_pairs": {"pairs": [PAIRS["pairs"][0] | {"anchor": "x" * 501}]}})

    summary = propose(tasks=[task], stages=["topic_groups", "constraint_pairs"], judge_config=config)

    reasons = {o.stage: o.reason for o in summary.outcomes}
    assert [o.status for o in summary.outcomes] == ["failed", "failed"]
    assert reasons["topic_groups"] == "unusable answer: group 2 item 1 is empty"
    assert reasons["constraint_pairs"].startswith("unusable answer: pair 1 question: title: ")
    assert "at most 500 characters" in reasons["constraint_pairs"]
    assert not ChecklistGroup.objects.exists() and not ConstraintQuestion.objects.exists()
    assert not AuditLog.objects.exists()
    assert list(LLMCall.objects.values_list("ok", flat=True)) == [False, False]


def test_reportbench_prompts_keep_the_imported_level_and_need_the_cutoff(fake_openai, config):
    from datetime import date

    survey = SurveyFactory(title="Radar in Driving", abstract="Radar data representations.",
                           publication_date=date(2023, 12, 8))
    task = TaskFactory(protocol="reportbench", key="2312.04861", survey=survey, cutoff_date=date(2025, 3, 31))
    TaskPromptFactory(task=task, level="paragraph", text="Imported paragraph.", origin=Origin.IMPORT)
    rules = "Only cite works published before 2025-03-31, not the survey itself."
    fake_openai.responder = scripted({"propose.reportbench_prompts": {
        "sentence": f"Survey radar. {rules}", "paragraph": f"Paragraph. {rules}", "detail": f"Detail. {rules}"}})

    summary = propose(tasks=[task], judge_config=config)

    assert summary.proposed == {"prompt": 2}
    assert dict(TaskPrompt.objects.filter(task=task).values_list("level", "origin")) == {
        "sentence": "llm", "paragraph": "import", "detail": "llm"}
    assert "2025-03-31" in fake_openai.chat_requests()[0].last_message

    other = TaskFactory(protocol="reportbench", key="other", survey=SurveyFactory(publication_date=date(2021, 1, 1)))
    fake_openai.responder = scripted({"propose.reportbench_prompts": {
        "sentence": "Survey X.", "paragraph": "Paragraph on X.", "detail": "Detail on X."}})
    failed = propose(tasks=[other], judge_config=config)
    assert failed.outcomes[0].reason == "unusable answer: the sentence prompt does not state the cut-off date (2021-01-01)"
    assert not TaskPrompt.objects.filter(task=other).exists()


def test_rubric_criteria_are_expanded_per_survey_and_merged_per_discipline(fake_openai, config):
    discipline = DisciplineFactory(name="Biology")
    tasks = [TaskFactory(protocol="surveylens", key=f"bio-{n}",
                         survey=SurveyFactory(discipline=discipline, outline=[[1, f"Topic {n}"], [2, "Methods"]]))
             for n in (1, 2)]
    first = [
        {"component": "outline", "aspect": "structural coherence", "name": "Logical section order",
         "description": "Sections progress from mechanisms to imaging applications.", "example": "e"},
        {"component": "content", "aspect": "critical insight", "name": "Compares reporter systems",
         "description": "Weighs luciferase reporters against fluorescent ones.", "example": "e"},
    ]
    second = [
        # Same name as a criterion of the first survey (case and punctuation aside): merged away.
        {"component": "outline", "aspect": "structural coherence", "name": "Logical section order.",
         "description": "Ordering of sections.", "example": "e"},
        # Different name, same words in name and description: near-identical, merged away.
        {"component": "content", "aspect": "critical insight", "name": "Reporter systems compared",
         "description": "Weighs luciferase reporters against fluorescent ones.", "example": "e"},
        # Same words but another component: kept.
        {"component": "reference", "aspect": "referential pertinence", "name": "Compares reporter systems",
         "description": "Weighs luciferase reporters against fluorescent ones.", "example": "e"},
    ]
    # Calls go out concurrently: answer by the survey in the prompt, not by arrival order.
    fake_openai.responder = lambda request: Reply.json(
        {"criteria": first if "# Topic 1" in request.last_message else second})

    summary = propose(tasks=tasks, judge_config=config)

    words = lambda c: content_words(f"{c['name']} {c['description']}")  # noqa: E731
    a, b = words(first[1]), words(second[1])
    assert len(a & b) / len(a | b) >= 0.6  # the premise of the second merge, computed independently
    assert [o.created for o in summary.outcomes] == [{"rubric_criterion": 2}, {"rubric_criterion": 1}]
    stored = RubricCriterion.objects.filter(discipline=discipline, task__isnull=True).order_by("position")
    assert [(c.component, c.name) for c in stored] == [
        ("outline", "Logical section order"), ("content", "Compares reporter systems"),
        ("reference", "Compares reporter systems")]
    assert all(c.origin == "llm" and c.review_status == "proposed" for c in stored)
    assert all("surveys in Biology" in r.last_message for r in fake_openai.chat_requests())


def test_curated_tasks_and_missing_inputs_fail_before_any_call(fake_openai, config, task):
    bare = TaskFactory(protocol="deepsynth", key="bare", survey=SurveyFactory(title="arXiv:2209.06428", abstract=""))
    task.status = Task.Status.CURATED
    task.save()

    summary = propose(tasks=[task, bare], stages=["question", "topic_groups"], judge_config=config)

    assert {(o.stage, o.task_key): o.reason for o in summary.outcomes} == {
        ("question", "bare"): "survey “arXiv:2209.06428” has no abstract to reconstruct the request from; "
                              "fill in its abstract first",
        ("question", "slam"): "task slam is curated; new proposals go to draft or in-review tasks only",
        ("topic_groups", "bare"): "survey “arXiv:2209.06428” has neither an outline nor content to propose from; "
                                  "import the survey's text first",
        ("topic_groups", "slam"): "task slam is curated; new proposals go to draft or in-review tasks only",
    }
    assert not fake_openai.chat_requests() and not LLMCall.objects.exists()
    with pytest.raises(ValueError, match="stages: nuggets builds deepscholar tasks, and these tasks are deepsynth"):
        propose(tasks=[bare], stages=["nuggets"], judge_config=config)
    with pytest.raises(ValueError, match="unknown stage"):
        propose(tasks=[bare], stages=["everything"], judge_config=config)


def test_a_batch_the_broker_refuses_fails_naming_the_reason(config, task, monkeypatch,
                                                             django_capture_on_commit_callbacks):
    def down(batch_id):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr("scoring.tasks.propose_batch.delay", down)
    with django_capture_on_commit_callbacks(execute=True):
        batch = proposal_batch_create(tasks=[task], stages=["question"], judge_config=config)
    batch.refresh_from_db()
    assert (batch.status, batch.error) == ("failed", "could not reach the task queue: connection refused")
    assert batch.finished_at is not None


def test_a_batch_is_enqueued_on_commit_and_keeps_its_summary(fake_openai, config, task, monkeypatch,
                                                              django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr("scoring.tasks.propose_batch.delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        batch = proposal_batch_create(tasks=[task], stages=["question", "topic_groups"], judge_config=config)
        assert sent == []  # not before the commit
    assert sent == [batch.pk]
    assert (batch.status, batch.total, batch.stages) == ("pending", 2, ["question", "topic_groups"])

    fake_openai.responder = scripted({"propose.general_question": QUESTION, "propose.topic_groups": GROUPS})
    assert proposal_batch_execute(batch_id=batch.pk) == "finished"
    assert proposal_batch_execute(batch_id=batch.pk) == "skipped"  # claimed once
    batch.refresh_from_db()
    assert (batch.done, batch.failed) == (2, 0)
    assert batch.summary["proposed"] == {"checklist_group": 2, "checklist_item": 3, "prompt": 1}
    assert batch.summary["calls"] == 2 and batch.summary["tokens_in"] == 2 * TOKENS_IN
    assert json.loads(json.dumps(batch.summary)) == batch.summary
    assert ProposalBatch.objects.get().tasks.get() == task


def test_proposals_enter_the_existing_review_flow(fake_openai, config, task):
    from annotation.models import AnnotationProject
    from annotation.services.projects import project_create

    fake_openai.responder = scripted({"propose.general_question": QUESTION, "propose.topic_groups": GROUPS})
    propose(tasks=[task], stages=["question", "topic_groups"], judge_config=config)
    curator = UserFactory(username="boss")
    from annotation.models import AnnotatorProfile, Role

    AnnotatorProfile.objects.create(user=curator, role=Role.CURATOR)
    project = project_create(name="verify slam", kind=AnnotationProject.Kind.VERIFY, created_by=curator,
                             tasks=[task], item_kinds=["prompt", "checklist_item"])
    targets = set(project.items.values_list("target_kind", "target_id"))
    expected = {("prompt", TaskPrompt.objects.get(task=task).pk)} | {
        ("checklist_item", pk) for pk in ChecklistItem.objects.filter(group__task=task).values_list("pk", flat=True)}
    assert targets == expected
