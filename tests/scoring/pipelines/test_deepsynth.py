import numpy as np
import pytest

from scoring.judges.base import JudgeAnswer
from scoring.models import EvaluationRun, Verdict
from scoring.pipelines import PIPELINES
from scoring.pipelines.deepsynth import STEP, group_threshold, majority_label, parse_group_answer
from tests.factories import ChecklistGroupFactory, ReportFactory
from tests.scoring.services.fakes import ScriptedJudge, judge_config, two_group_checklist

pipeline = PIPELINES["deepsynth"]


def answer(*verdicts, **kw) -> JudgeAnswer:
    return JudgeAnswer(data={"verdicts": list(verdicts)}, **kw)


def v(item_id, label="correct"):
    return {"id": item_id, "label": label, "evidence": "e", "rationale": "r"}


# --- pure parts -----------------------------------------------------------------------------


def test_the_answer_must_cover_every_requested_id_exactly_once():
    out = parse_group_answer(answer(v(1), v(2, "Omitted "), v(2), v(3, "maybe"), v(99)), [1, 2, 3, 4])
    assert out[1].label == "correct" and not out[1].error
    assert "answered 2 times" in out[2].error and out[2].label == ""
    assert "unknown label 'maybe'" in out[3].error
    assert "missing" in out[4].error
    assert 99 not in out  # ids the call did not ask about are ignored


def test_a_failed_or_malformed_answer_is_an_error_on_every_item():
    failed = parse_group_answer(JudgeAnswer(data=None, error="HTTP 500 after 5 attempts"), [1, 2])
    assert {o.error for o in failed.values()} == {"judge error: HTTP 500 after 5 attempts"}
    malformed = parse_group_answer(JudgeAnswer(data={"labels": []}), [1, 2])
    assert {o.error for o in malformed.values()} == {"malformed answer: no 'verdicts' list"}
    assert parse_group_answer(answer({"id": True, "label": "correct"}), [1])[1].error  # a boolean is no id


def test_majority_over_repeats_and_ties_go_to_the_lower_label():
    assert majority_label(["correct", "correct", "incorrect"]) == "correct"
    assert majority_label(["correct", "omitted"]) == "omitted"
    assert majority_label(["correct", "incorrect"]) == "incorrect"
    assert majority_label(["omitted", "correct", "incorrect"]) == "incorrect"


@pytest.mark.django_db
def test_group_threshold_explicit_clip_factor_default_and_scaled_by_judged_items():
    assert group_threshold(ChecklistGroupFactory.build(threshold=10.0), 15, 15) == 10.0
    assert group_threshold(ChecklistGroupFactory.build(threshold=20.0), 15, 15) == 15.0  # θ ≤ N
    assert group_threshold(ChecklistGroupFactory.build(clip_factor=0.8), 5, 5) == pytest.approx(4.0)
    assert group_threshold(ChecklistGroupFactory.build(), 7, 7) == 7.0
    assert group_threshold(ChecklistGroupFactory.build(clip_factor=0.8), 5, 4) == pytest.approx(3.2)


# --- judging and scoring ----------------------------------------------------------------------


def make_run(config) -> EvaluationRun:
    return EvaluationRun.objects.create(protocol="deepsynth", judge_config=config)


@pytest.fixture
def scripted():
    """The hand-computed case: general c,c,o,i (S=1, θ=4 → 25%), constraint c,c,c,c,o (S=4, θ=0.8·5=4 → 100%)."""
    checklist = two_group_checklist()
    report = ReportFactory(task=checklist.task)
    g, c = checklist.general_items, checklist.constraint_items
    labels = {g[0].id: "correct", g[1].id: "correct", g[2].id: "omitted", g[3].id: "incorrect"}
    labels.update({item.id: "correct" for item in c[:4]} | {c[4].id: "omitted"})
    return checklist, report, labels


@pytest.mark.django_db
def test_one_call_per_group_one_verdict_per_item_and_hand_computed_scores(scripted):
    checklist, report, labels = scripted
    config = judge_config()
    run = make_run(config)
    judge = ScriptedJudge(config, labels=labels)

    pipeline.run_step(run=run, report=report, step=STEP, judge=judge)

    assert len(judge.calls) == 2
    by_group = {call.variables["group_name"]: call.variables for call in judge.calls}
    assert by_group["Methods"]["constraint_question"] == ""
    assert by_group["Comparison table"]["constraint_question"] == "Compare the methods in a table."
    assert [i["id"] for i in by_group["Methods"]["items"]] == [i.id for i in checklist.general_items]  # rejected left out
    assert by_group["Methods"]["report"] == report.text
    verdicts = Verdict.objects.filter(report=report)
    assert verdicts.count() == 9
    first = verdicts.get(target_id=checklist.general_items[3].id)
    assert (first.label, first.score, first.step, first.target_kind, first.prompt_version) == (
        "incorrect", -1.0, STEP, "checklist_item", "v1"
    )
    assert (first.evidence, first.rationale) == ("quote", "because")
    # the group's tokens are split so they add up; latency and cost evenly
    general = verdicts.filter(target_id__in=[i.id for i in checklist.general_items])
    assert sum(general.values_list("tokens_in", flat=True)) == 401
    assert sum(general.values_list("cost_usd", flat=True)) == pytest.approx(0.01)

    score = pipeline.score_report(run=run, report=report)
    m = score["metrics"]
    assert m["general"] == pytest.approx(25.0)
    assert m["constraint"] == pytest.approx(100.0)
    assert m["overall"] == pytest.approx(62.5)
    assert m["precision"] == pytest.approx(100 * 6 / 7)
    assert (m["correct"], m["omitted"], m["incorrect"]) == (6, 2, 1)
    assert (score["items_judged"], score["items_failed"]) == (9, 0)


@pytest.mark.django_db
def test_a_second_run_of_the_same_configuration_makes_no_call(scripted):
    checklist, report, labels = scripted
    config = judge_config()
    first = ScriptedJudge(config, labels=labels)
    pipeline.run_step(run=make_run(config), report=report, step=STEP, judge=first)
    second = ScriptedJudge(config, labels=labels)
    run2 = make_run(config)
    pipeline.run_step(run=run2, report=report, step=STEP, judge=second)
    assert (len(first.calls), len(second.calls)) == (2, 0)
    assert Verdict.objects.count() == 9
    assert pipeline.score_report(run=run2, report=report)["metrics"]["overall"] == pytest.approx(62.5)
    # a new prompt version is a new question: asked again, stored beside the old verdicts
    config.prompt_version = "v2"
    config.save()
    third = ScriptedJudge(config, labels=labels)
    pipeline.run_step(run=make_run(config), report=report, step=STEP, judge=third)
    assert len(third.calls) == 2
    assert Verdict.objects.count() == 18


@pytest.mark.django_db
def test_failures_are_per_item_excluded_from_scores_and_retried_in_place(scripted):
    checklist, report, labels = scripted
    config = judge_config()
    run = make_run(config)
    missing = checklist.general_items[2]  # the omitted one: leaving it out changes θ, not S

    def flaky(call, n):
        if call.variables["group_name"] == "Comparison table":
            return JudgeAnswer(data=None, error="HTTP 503 after 5 attempts", raw="Service Unavailable")
        full = judge.answer_for(call)
        full.data["verdicts"] = [x for x in full.data["verdicts"] if x["id"] != missing.id]
        return full

    judge = ScriptedJudge(config, labels=labels, respond=flaky)
    pipeline.run_step(run=run, report=report, step=STEP, judge=judge)
    errors = Verdict.objects.exclude(error="")
    assert errors.count() == 6 and set(errors.values_list("label", flat=True)) == {""}
    assert errors.get(target_id=missing.id).error == "malformed answer: item missing from the judge's answer"
    assert errors.filter(error="judge error: HTTP 503 after 5 attempts").count() == 5
    assert errors.filter(raw_response__raw="Service Unavailable").count() == 5

    score = pipeline.score_report(run=run, report=report)
    # general: c, c, i judged out of 4 → S = 1, θ = 4·3/4 = 3 → 33.3%; constraint group unscored
    assert score["metrics"]["general"] == pytest.approx(100 / 3)
    assert score["metrics"]["constraint"] is None
    assert score["metrics"]["overall"] == pytest.approx(100 / 3)
    assert score["metrics"]["groups_scored"] == 1
    assert (score["items_judged"], score["items_failed"]) == (3, 6)

    retry = ScriptedJudge(config, labels=labels)
    pipeline.run_step(run=run, report=report, step=STEP, judge=retry)
    assert len(retry.calls) == 2
    assert retry.items_asked() == sorted([missing.id] + [i.id for i in checklist.constraint_items])
    assert Verdict.objects.count() == 9 and not Verdict.objects.exclude(error="").exists()
    assert pipeline.score_report(run=run, report=report)["metrics"]["overall"] == pytest.approx(62.5)


@pytest.mark.django_db
def test_repeats_are_asked_separately_and_aggregated_by_majority(scripted):
    checklist, report, labels = scripted
    config = judge_config(repeats=3)
    run = make_run(config)
    flip = checklist.general_items[3].id  # incorrect in repeats 0 and 2, correct in repeat 1

    def per_repeat(call, n):
        result = judge.answer_for(call)
        if call.repeat == 1:
            for x in result.data["verdicts"]:
                if x["id"] == flip:
                    x["label"] = "correct"
        return result

    judge = ScriptedJudge(config, labels=labels, respond=per_repeat)
    pipeline.run_step(run=run, report=report, step=STEP, judge=judge)
    assert sorted(c.repeat for c in judge.calls) == [0, 0, 1, 1, 2, 2]
    assert Verdict.objects.count() == 27
    assert pipeline.score_report(run=run, report=report)["metrics"]["incorrect"] == 1


@pytest.mark.django_db
def test_a_changed_report_text_is_judged_again_in_place(scripted):
    checklist, report, labels = scripted
    config = judge_config()
    run = make_run(config)
    pipeline.run_step(run=run, report=report, step=STEP, judge=ScriptedJudge(config, labels=labels))
    report.text = "# A rewritten report"
    report.save()
    again = ScriptedJudge(config, default="omitted")
    pipeline.run_step(run=run, report=report, step=STEP, judge=again)
    assert len(again.calls) == 2
    assert Verdict.objects.count() == 9
    assert pipeline.score_report(run=run, report=report)["metrics"]["omitted"] == 9


@pytest.mark.django_db
def test_imported_verdicts_without_a_fingerprint_are_reused(scripted):
    checklist, report, labels = scripted
    config = judge_config()
    for item_id in checklist.item_ids:
        Verdict.objects.create(
            report=report, judge_config=config, prompt_version="v1", step=STEP, target_kind="checklist_item",
            target_id=item_id, label=labels[item_id],
        )
    judge = ScriptedJudge(config)
    run = make_run(config)
    pipeline.run_step(run=run, report=report, step=STEP, judge=judge)
    assert judge.calls == []
    assert pipeline.score_report(run=run, report=report)["metrics"]["overall"] == pytest.approx(62.5)


@pytest.mark.django_db
def test_system_score_is_the_mean_of_report_scores_with_counts():
    scores = [
        {"metrics": {"overall": 50.0, "constraint": None, "correct": 2}, "items_judged": 4, "items_failed": 1},
        {"metrics": {"overall": 70.0, "constraint": 40.0, "correct": 5}, "items_judged": 6, "items_failed": 0},
    ]
    system = pipeline.score_system(report_scores=scores)
    assert system["metrics"]["overall"] == pytest.approx(60.0)
    assert system["metrics"]["constraint"] == pytest.approx(40.0)
    assert system["metrics"]["correct"] == pytest.approx(3.5)
    assert system["metrics"]["reports"] == 2
    assert system["metrics"]["reports_with"] == {"overall": 2, "constraint": 1, "correct": 2}
    assert (system["items_judged"], system["items_failed"]) == (10, 1)


@pytest.mark.django_db
def test_the_upstream_group_score_is_chosen_per_run_and_recorded(scripted):
    checklist, report, labels = scripted
    g = checklist.general_items
    labels |= {g[0].id: "incorrect", g[1].id: "incorrect"}  # general: i,i,o,i → S = −3 over θ = 4
    config = judge_config(options={"variants": {"group_score": "upstream"}})
    run = make_run(config)
    pipeline.run_step(run=run, report=report, step=STEP, judge=ScriptedJudge(config, labels=labels))
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["variants"] == {"group_score": "upstream", "precision": "pooled"}
    assert m["general"] == pytest.approx(100 * -3 / 4)  # no floor at 0, as the released scorer
    assert m["overall"] == pytest.approx((100 * -3 / 4 + 100.0) / 2)
    config.options = {}
    config.save(update_fields=["options"])
    paper = pipeline.score_report(run=run, report=report)["metrics"]
    assert paper["variants"] == {"group_score": "paper", "precision": "pooled"} and paper["general"] == 0.0


def _report_score(correct: int, incorrect: int, precision_variant: str) -> dict:
    precision = 100 * correct / (correct + incorrect) if correct + incorrect else None
    metrics = {"overall": 10.0, "precision": precision, "correct": correct, "omitted": 3, "incorrect": incorrect,
               "variants": {"group_score": "paper", "precision": precision_variant}}
    return {"metrics": metrics, "items_judged": correct + incorrect + 3, "items_failed": 0}


# (N_correct, N_incorrect) per report: very unequal numbers of mentioned items, and one report that
# mentions nothing (its own eq. 7 is undefined), so pooled and per-report precision differ.
MENTIONS = [(1, 3), (40, 2), (0, 0), (9, 9)]


@pytest.mark.django_db
def test_system_precision_is_pooled_over_reports_by_default_and_per_report_by_name():
    counts = np.array(MENTIONS, dtype=float)
    pooled = pipeline.score_system(report_scores=[_report_score(c, i, "pooled") for c, i in MENTIONS])["metrics"]
    assert pooled["precision"] == pytest.approx(100 * counts[:, 0].sum() / counts.sum())  # 50/64
    assert pooled["variants"]["precision"] == "pooled"
    mentioned = counts.sum(axis=1) > 0
    per_report = pipeline.score_system(
        report_scores=[_report_score(c, i, "per_report") for c, i in MENTIONS])["metrics"]
    assert per_report["precision"] == pytest.approx(np.mean(100 * counts[mentioned, 0] / counts[mentioned].sum(axis=1)))


@pytest.mark.django_db
def test_the_precision_variant_is_chosen_per_run_and_recorded(scripted):
    checklist, report, labels = scripted
    config = judge_config(options={"variants": {"precision": "per_report"}})
    run = make_run(config)
    pipeline.run_step(run=run, report=report, step=STEP, judge=ScriptedJudge(config, labels=labels))
    m = pipeline.score_report(run=run, report=report)["metrics"]
    assert m["variants"] == {"group_score": "paper", "precision": "per_report"}
    assert m["precision"] == pytest.approx(100 * 6 / 7)  # one report: eq. 7 either way
    config.options = {"variants": {"precision": "report_mean"}}
    config.save(update_fields=["options"])
    with pytest.raises(ValueError, match="variants.precision must be one of pooled, per_report"):
        pipeline.score_report(run=run, report=report)
