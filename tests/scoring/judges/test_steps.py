import pytest

from scoring.judges.steps import (
    PROMPTS_DIR, STEPS, StepError, check_item_ids, get_step, render, render_messages, request_hash, step_label,
    validate_answer, validate_variables,
)
from tests.scoring.judges.samples import SAMPLES

CONTRACT = {
    "deepsynth.checklist_group", "reportbench.cited_statements", "reportbench.support_passage",
    "reportbench.consistency", "reportbench.uncited_statements", "reportbench.factuality",
    "reportbench.reference_titles", "reportbench.academic_reference", "deepscholar.nuggetize", "deepscholar.nugget_support", "deepscholar.relevance",
    "deepscholar.reference_importance", "deepscholar.citation_support", "deepscholar.organization",
    "surveylens.rubric", "scisage.quality", "scisage.section_structure", "survey.pairwise", "propose.general_question", "propose.topic_groups",
    "propose.constraint_pairs", "propose.reportbench_prompts", "propose.rubric_criteria",
}


def test_the_registry_holds_exactly_the_contracted_steps():
    assert set(STEPS) == CONTRACT
    assert set(SAMPLES) == CONTRACT


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_every_step_renders_its_v1_prompt_from_sample_variables(name):
    assert (PROMPTS_DIR / "v1" / f"{name}.md").is_file()
    assert validate_variables(name, SAMPLES[name]) == []
    system, user = render_messages(name, SAMPLES[name])
    assert '"type": "object"' in system["content"] and name in system["content"]
    assert "{{" not in user["content"]


def test_rendering_is_one_pass_and_formats_lists():
    text = render("A {{report}} B\n{{items}}\n{{names}}", {
        "report": "has {{items}} inside", "items": [{"id": 1, "text": "x"}], "names": ["p", "q"]})
    assert text == 'A has {{items}} inside B\n{"id": 1, "text": "x"}\n1. p\n2. q'
    with pytest.raises(StepError, match="report"):
        render("{{report}}", {})


def test_unknown_steps_and_prompt_versions_are_errors():
    with pytest.raises(StepError, match="unknown step"):
        get_step("deepsynth.nope")
    with pytest.raises(StepError, match="missing"):
        render_messages("deepsynth.checklist_group", SAMPLES["deepsynth.checklist_group"], version="v999")
    with pytest.raises(StepError, match=r"invalid prompt version '\.\./v1'"):
        render_messages("deepsynth.checklist_group", SAMPLES["deepsynth.checklist_group"], version="../v1")


def _verdict(i, label="correct"):
    return {"id": i, "label": label, "evidence": "", "rationale": "r"}


def test_checklist_answers_must_cover_every_id_exactly_once():
    variables = SAMPLES["deepsynth.checklist_group"]
    assert validate_answer("deepsynth.checklist_group", {"verdicts": [_verdict(1), _verdict(2)]}, variables) == []
    missing = validate_answer("deepsynth.checklist_group", {"verdicts": [_verdict(1)]}, variables)
    assert missing == ["ids not answered: 2"]
    twice = validate_answer("deepsynth.checklist_group", {"verdicts": [_verdict(1), _verdict(1), _verdict(2)]},
                            variables)
    assert twice == ["ids answered more than once: 1"]
    invented = validate_answer("deepsynth.checklist_group", {"verdicts": [_verdict(1), _verdict(2), _verdict(9)]},
                               variables)
    assert invented == ["ids that were not asked for: 9"]


def test_schema_violations_are_reported_with_their_place():
    variables = SAMPLES["deepsynth.checklist_group"]
    bad_enum = validate_answer("deepsynth.checklist_group", {"verdicts": [_verdict(1, "maybe"), _verdict(2)]},
                               variables)
    assert len(bad_enum) == 1 and "verdicts/0/label" in bad_enum[0] and "maybe" in bad_enum[0]
    no_key = validate_answer("deepsynth.checklist_group", {"verdicts": [{"id": 1, "label": "correct"}]}, variables)
    assert any("evidence" in e for e in no_key) and any("rationale" in e for e in no_key)
    assert validate_answer("deepsynth.checklist_group", {"verdicts": [_verdict("1"), _verdict(2)]}, variables)
    assert validate_answer("deepscholar.relevance", {"grade": 3, "rationale": ""})
    assert validate_answer("deepscholar.relevance", {"grade": True, "rationale": ""})
    assert validate_answer("scisage.quality", {"scores": [{"id": 1, "score": 11, "rationale": ""}]})
    assert validate_answer("reportbench.support_passage", {"passage": "x"}) == [
        "answer at (top): 'found' is a required property"]


def test_check_item_ids_compares_json_values_exactly():
    assert check_item_ids([1, 2], [{"id": 1}, {"id": 2.0}]) == []
    assert check_item_ids(["a"], [{"id": "a"}]) == []
    assert check_item_ids([1], [{"id": "1"}]) == ['ids not answered: 1', 'ids that were not asked for: "1"']
    assert check_item_ids([1], [{"id": True}])


def test_variables_are_checked_too():
    assert validate_variables("deepsynth.checklist_group", {"report": "r", "group_name": "g"})
    duplicated = dict(SAMPLES["deepsynth.checklist_group"], items=[{"id": 1, "text": "a"}, {"id": 1, "text": "b"}])
    assert validate_variables("deepsynth.checklist_group", duplicated) == [
        "variables at items: item ids are not unique"]


def test_request_hash_is_stable_and_sensitive():
    a = request_hash(model="m", prompt_version="v1", step="s", variables={"x": 1, "y": [1, 2]})
    assert a == request_hash(model="m", prompt_version="v1", step="s", variables={"y": [1, 2], "x": 1})
    assert a != request_hash(model="m", prompt_version="v1", step="s", variables={"x": 1, "y": [1, 2]}, repeat=1)
    assert len(a) == 64


def test_step_labels_read_as_words():
    assert step_label("deepscholar.citation_support") == "DeepScholar-bench: citation support"
    assert step_label("propose.topic_groups") == "Proposal: topic groups"
    assert step_label("checklist") == "checklist"
    assert step_label("newbench.some_step") == "newbench: some step"
