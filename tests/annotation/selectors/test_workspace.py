import pytest

from annotation.loop.claims import claim_next_item
from annotation.selectors.workspace import adjudication_queue, item_context_for
from tests.annotation_factories import submit_held as label_submit  # blind: on an item held (#37)
from annotation.services.projects import project_update
from annotation.models import AnnotationItem
from tests.annotation_factories import agreement_project, annotator, hold, pairwise_project, token
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


# --- Blind mode --------------------------------------------------------------------------------


def test_blind_context_hides_the_judge_and_others_until_committed(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=["correct"], overlap=2)
    item = project.items.get()
    label_submit(item=item, annotator=alice, value={"label": "omitted", "note": "not there"}, client_token=token())

    hold(item, bob)  # blind: an item is reached through one's claim (#37)
    before = item_context_for(item=item, user=bob)
    assert before["revealed"] is False
    assert before["judge"] is None and before["other_labels"] is None and before["own_label"] is None
    assert "rationale" not in str(before) and "not there" not in str(before)
    assert before["target"]["judged_kind"] == "checklist_item"  # what to judge is shown

    label_submit(item=item, annotator=bob, value={"label": "correct"}, client_token=token())
    after = item_context_for(item=item, user=bob)
    assert after["revealed"] is True
    assert after["judge"]["label"] == "correct" and after["judge"]["rationale"]
    assert after["own_label"]["value"]["label"] == "correct"
    assert [label["value"]["note"] for label in after["other_labels"]] == ["not there"]


def test_blind_pairwise_context_hides_system_names(owner, alice):
    project = pairwise_project(owner, [alice], overlap=2)
    item = project.items.first()
    hold(item, alice)
    before = item_context_for(item=item, user=alice)
    assert before["target"]["left"]["system"] is None and before["target"]["right"]["system"] is None
    assert before["target"]["left"]["text"]
    label_submit(item=item, annotator=alice, value={"choice": "tie"}, client_token=token())
    after = item_context_for(item=item, user=alice)  # a pairwise study reveals at close by default
    assert after["target"]["left"]["system"] is None and after["own_label"]["value"]["choice"] == "tie"
    project_update(project=project, actor=owner, status="closed")
    assert item_context_for(item=item, user=alice)["target"]["left"]["system"]
    per_label = pairwise_project(owner, [alice], overlap=2, reveal="label", name="per label")
    item = per_label.items.first()
    label_submit(item=item, annotator=alice, value={"choice": "tie"}, client_token=token())
    assert item_context_for(item=item, user=alice)["target"]["left"]["system"]


def test_open_projects_show_everything_and_curators_see_complete_items(owner, alice, bob):
    project = agreement_project(owner, [alice, bob], labels=["correct"], overlap=1, blind=False, name="open")
    item = project.items.get()
    assert item_context_for(item=item, user=alice)["judge"]["label"] == "correct"

    blind = agreement_project(owner, [alice], labels=["correct"], overlap=1, name="blind")
    blind_item = blind.items.get()
    assert item_context_for(item=blind_item, user=owner)["judge"] is None  # still open
    label_submit(item=blind_item, annotator=alice, value={"label": "correct"}, client_token=token())
    assert item_context_for(item=blind_item, user=owner)["judge"]["label"] == "correct"


def test_context_is_refused_to_outsiders(owner, alice):
    project = agreement_project(owner, [alice])
    with pytest.raises(PermissionError, match="outsider is not a member of project 'agreement'"):
        item_context_for(item=project.items.first(), user=UserFactory(username="outsider"))


def test_context_carries_the_users_claim_for_the_countdown(owner, alice, bob):
    project = agreement_project(owner, [alice, bob])
    claim = claim_next_item(project=project, user=alice)
    assert item_context_for(item=claim.item, user=alice)["claim"]["expires_at"] == claim.expires_at
    with pytest.raises(AnnotationItem.DoesNotExist):  # blind: bob neither holds nor labelled it (#37)
        item_context_for(item=claim.item, user=bob)


def test_verify_context_carries_the_task_only_when_asked(owner, alice, django_assert_max_num_queries):
    from tests.annotation_factories import checklist_task, verify_project

    task, _ = checklist_task(2)
    project = verify_project(owner, [alice], tasks=[task])
    item = project.items.first()
    hold(item, alice)
    assert item_context_for(item=item, user=alice)["task"] is None
    context = item_context_for(item=item, user=alice, with_task=True)
    assert context["task"] == task
    with django_assert_max_num_queries(0):  # prefetched: the panel reads every sibling proposal for free
        groups = list(context["task"].checklist_groups.all())
        assert sum(len(group.items.all()) for group in groups) == 2 and context["task"].survey.title


# --- Adjudication queue ------------------------------------------------------------------------


def test_adjudication_queue_uses_a_bounded_number_of_queries(owner, django_assert_max_num_queries):
    users = [annotator(f"u{i}") for i in range(3)]
    project = agreement_project(owner, users, labels=["correct"] * 6, overlap=3)
    for item in project.items.all():
        for n, user in enumerate(users):
            value = {"label": ["correct", "omitted"][n % 2]}
            label_submit(item=item, annotator=user, value=value, client_token=token())
    # items, labels, annotators, verdicts, the judged checklist items
    with django_assert_max_num_queries(5):
        rows = adjudication_queue(project=project)
    assert len(rows) == 6 and all(len(row["labels"]) == 3 and row["judge"]["label"] == "correct" for row in rows)
    assert all("judged_text" in row["target"] for row in rows)


def test_adjudication_rows_carry_the_text_the_judge_assessed(owner, alice, bob):
    from tests.annotation_factories import JudgeConfigFactory, VerdictFactory, members_add
    from tests.factories import ChecklistItemFactory, ReportFactory, TaskFactory
    from annotation.services.projects import project_create

    task = TaskFactory()
    report = ReportFactory(task=task)
    judge = JudgeConfigFactory()
    checked = ChecklistItemFactory(group__task=task, text="The report compares radar datasets.")
    VerdictFactory(report=report, judge_config=judge, target_id=checked.pk, label="omitted")
    VerdictFactory(report=report, judge_config=judge, target_kind="section", target_id=1, target_key="Datasets",
                   step="structure", label="correct")
    project = project_create(name="judge", kind="agreement", created_by=owner, tasks=[task], judge_config=judge,
                             overlap=2, label_set={"label": ["correct", "omitted", "incorrect"]})
    members_add(project, owner, [alice, bob])
    for item in project.items.all():
        for user, label in ((alice, "correct"), (bob, "incorrect")):
            label_submit(item=item, annotator=user, value={"label": label}, client_token=token())
    texts = {row["target"]["judged_kind"]: row["target"]["judged_text"] for row in adjudication_queue(project=project)}
    assert texts == {"checklist_item": "The report compares radar datasets.", "section": "Datasets"}


def test_the_queue_reads_judged_inputs_in_queries_bounded_per_report(owner, django_assert_max_num_queries):
    from tests.annotation_factories import deepscholar_agreement_project

    users = [annotator(f"u{i}") for i in range(2)]
    project = deepscholar_agreement_project(owner, users, overlap=2)
    citation_items = list(project.items.filter(target_id__in=_verdict_ids("deepscholar.citation_support")))
    for item in citation_items:
        for user, label in zip(users, ("support", "not_support"), strict=True):
            label_submit(item=item, annotator=user, value={"label": label}, client_token=token())
    # items, labels, annotators, verdicts, and the report's parse, task, survey, bibliography
    with django_assert_max_num_queries(10):
        rows = adjudication_queue(project=project)
    assert len(rows) == len(citation_items) > 5
    assert all(row["target"]["labels"] == ["support", "not_support"] for row in rows)
    assert all(row["target"]["judged_text"].startswith("Sentence of the report:\n") for row in rows)


# --- Agreement items show what the judge saw ---------------------------------------------------


def _item_of(project, step: str, key_prefix: str = ""):
    from scoring.models import Verdict

    verdicts = Verdict.objects.filter(step=step, target_key__startswith=key_prefix).values("pk")
    return project.items.filter(target_id__in=verdicts).order_by("position").first()


def test_a_citation_item_shows_its_sentence_and_source_and_only_its_step_labels_blind(owner, alice):
    from tests.annotation_factories import deepscholar_agreement_project

    project = deepscholar_agreement_project(owner, [alice])
    assert {"win", "support", "partial_support", "important"} <= set(project.label_set["label"])  # mixed steps
    item = _item_of(project, "deepscholar.citation_support", "0:arxiv:2101.00001")
    hold(item, alice)
    context = item_context_for(item=item, user=alice)
    assert context["revealed"] is False and context["judge"] is None
    assert context["item"]["labels"] == context["target"]["labels"] == ["support", "not_support"]
    judged = context["target"]["judged_text"]
    assert judged == (
        "Sentence of the report:\nWidget transformers improve accuracy on the benchmark by ten points in all settings."
        "\n\nCited source: Widget Transformers for Accurate Prediction:\nTitle: Widget Transformers for Accurate "
        "Prediction\nWidget transformers improve accuracy on the benchmark by ten points."
    )
    assert "0:arxiv" not in judged
    parts = context["target"]["judged_input"]["parts"]
    assert [part["name"] for part in parts] == ["sentence", "source"]

    hold(_item_of(project, "deepscholar.organization", "report_first"), alice)
    hold(_item_of(project, "deepscholar.nugget_support"), alice)
    organization = item_context_for(item=_item_of(project, "deepscholar.organization", "report_first"), user=alice)
    assert organization["item"]["labels"] == ["win", "tie", "loss"]
    assert [(p["name"], p["is_report"]) for p in organization["target"]["judged_input"]["parts"]] == [
        ("query", False), ("report_a", True), ("report_b", False)]
    nugget = item_context_for(item=_item_of(project, "deepscholar.nugget_support"), user=alice)
    assert nugget["item"]["labels"] == ["support", "partial_support", "not_support"]
    assert nugget["target"]["judged_text"] == "Widget transformers improve accuracy"


def test_an_item_refuses_another_steps_label(owner, alice):
    from tests.annotation_factories import deepscholar_agreement_project

    project = deepscholar_agreement_project(owner, [alice])
    item = _item_of(project, "deepscholar.citation_support", "0:")
    with pytest.raises(ValueError, match=r"value.label: 'win' is not one of support, not_support"):
        label_submit(item=item, annotator=alice, value={"label": "win"}, client_token=token())
    label_submit(item=item, annotator=alice, value={"label": "not_support"}, client_token=token())
    assert item_context_for(item=item, user=alice)["judge"]["label"] in ("support", "not_support")


def _verdict_ids(step: str):
    from scoring.models import Verdict

    return Verdict.objects.filter(step=step).values("pk")
