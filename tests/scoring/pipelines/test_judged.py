"""What the judge was shown, rebuilt per stored verdict: each pipeline runs with a scripted judge
that records its calls, then every verdict's rebuilt input must be exactly a question it asked."""

from __future__ import annotations

import pytest

from scoring.models import Verdict
from scoring.pipelines import PIPELINES
from scoring.pipelines.judged import judged_inputs, step_labels
from tests.scoring.pipelines import test_deepscholar as ds
from tests.scoring.pipelines import test_reportbench as rb
from tests.scoring.services.fakes import ScriptedJudge, judge_config, two_group_checklist

pytestmark = pytest.mark.django_db


def shown(verdict_input) -> dict:
    """name → text of the parts; the whole report as the marker "<report>"."""
    return {part.name: "<report>" if part.is_report else part.text for part in verdict_input.parts}


def asked(calls, step: str, report_text: str) -> list[dict]:
    """The variables of each call of ``step``, the whole report replaced by the same marker."""
    return [{k: "<report>" if v == report_text else v for k, v in call.variables.items()}
            for call in calls if call.step == step]


def answered(report, step: str) -> list[Verdict]:
    return list(Verdict.objects.filter(report=report, step=step).exclude(label="").select_related("judge_config"))


def test_deepscholar_verdicts_show_the_questions_their_judge_was_asked():
    task, report = ds.make_case()
    config = judge_config()
    judge = ds.StepJudge(config)
    ds.run_all(ds.make_run(config), report, judge)

    citations = answered(report, ds.CITATIONS)
    inputs = judged_inputs(citations)
    assert len(citations) == len(asked(judge.calls, ds.CITATIONS, report.text)) > 0
    assert sorted(map(str, (shown(inputs[v.pk]) for v in citations))) == sorted(
        map(str, asked(judge.calls, ds.CITATIONS, report.text)))
    # the sentence without its marker, and the cited source's title and text
    (widget,) = [inputs[v.pk] for v in citations if v.target_key.endswith("arxiv:2101.00001")
                 and v.target_key.startswith("0:")]
    assert shown(widget) == {
        "sentence": "Widget transformers improve accuracy on the benchmark by ten points in all settings.",
        "source": "Title: Widget Transformers for Accurate Prediction\n"
                  "Widget transformers improve accuracy on the benchmark by ten points."}
    assert widget.parts[1].label == "Cited source: Widget Transformers for Accurate Prediction"
    assert "Sentence of the report:\nWidget transformers improve" in widget.text

    for step in (ds.RELEVANCE, ds.IMPORTANCE, ds.ORGANIZATION):
        verdicts = answered(report, step)
        rebuilt = judged_inputs(verdicts)
        assert sorted(map(str, (shown(rebuilt[v.pk]) for v in verdicts))) == sorted(
            map(str, asked(judge.calls, step, report.text))), step

    nuggets = answered(report, ds.NUGGETS)
    rebuilt = judged_inputs(nuggets)
    (call,) = asked(judge.calls, ds.NUGGETS, report.text)  # one batch of four
    assert sorted(shown(rebuilt[v.pk])["nuggets"] for v in nuggets) == sorted(n["text"] for n in call["nuggets"])
    assert all(shown(rebuilt[v.pk])["report"] == "<report>" for v in nuggets)


def test_organization_names_which_text_is_the_report():
    task, report = ds.make_case()
    config = judge_config()
    ds.run_all(ds.make_run(config), report, ds.StepJudge(config))
    verdicts = {v.target_key: v for v in answered(report, ds.ORGANIZATION)}
    rebuilt = judged_inputs(verdicts.values())
    first = [(p.name, p.label, p.is_report) for p in rebuilt[verdicts["report_first"].pk].parts]
    second = [(p.name, p.label, p.is_report) for p in rebuilt[verdicts["report_second"].pk].parts]
    assert first == [("query", "Query", False), ("report_a", "Report A: this report", True),
                     ("report_b", "Report B: the human-written one", False)]
    assert second == [("query", "Query", False), ("report_a", "Report A: the human-written one", False),
                      ("report_b", "Report B: this report", True)]
    assert rebuilt[verdicts["report_first"].pk].parts[2].text == ds.EXEMPLAR


def test_reportbench_consistency_shows_the_statement_and_its_cited_passage():
    task, report = rb.make_case()
    config = judge_config()
    judge = rb.StepJudge(config)
    rb.run_all(rb.make_run(config), report, judge)
    verdicts = answered(report, rb.CONSISTENCY)
    rebuilt = judged_inputs(verdicts)
    assert len(verdicts) == 3
    assert sorted(map(str, (shown(rebuilt[v.pk]) for v in verdicts))) == sorted(
        map(str, asked(judge.calls, rb.CONSISTENCY, report.text)))
    factual = answered(report, rb.FACTUALITY)
    rebuilt = judged_inputs(factual)
    assert {shown(rebuilt[v.pk])["statement"] for v in factual} == set(rb.UNCITED_STATEMENTS)


def test_checklist_verdicts_show_the_item_its_group_and_question():
    checklist = two_group_checklist()
    report = ds.ReportFactory(task=checklist.task, text="# A report\n\nText.")
    config = judge_config()
    judge = ScriptedJudge(config)
    run = PIPELINES["deepsynth"]
    evaluation = ds.EvaluationRun.objects.create(protocol="deepsynth", judge_config=config)
    for step in run.steps_for(report):
        run.run_step(run=evaluation, report=report, step=step, judge=judge)
    verdicts = answered(report, "deepsynth.checklist_group")
    rebuilt = judged_inputs(verdicts)
    assert len(verdicts) == len(checklist.item_ids)
    for verdict in verdicts:
        (call,) = [c.variables for c in judge.calls if verdict.target_id in {i["id"] for i in c.variables["items"]}]
        parts = shown(rebuilt[verdict.pk])
        item_text = next(i["text"] for i in call["items"] if i["id"] == verdict.target_id)
        expected = {"report": "<report>", "group_name": call["group_name"], "items": item_text}
        if call["constraint_question"]:
            expected["constraint_question"] = call["constraint_question"]
        assert parts == expected
    assert any(shown(rebuilt[v.pk]).get("constraint_question") == "Compare the methods in a table." for v in verdicts)


def test_a_verdict_whose_judged_row_is_gone_says_so():
    task, report = ds.make_case()
    config = judge_config()
    ds.run_all(ds.make_run(config), report, ds.StepJudge(config))
    nugget = answered(report, ds.NUGGETS)[0]
    task.nuggets.filter(pk=nugget.target_id).delete()
    (rebuilt,) = judged_inputs([nugget]).values()
    assert rebuilt.complete is False and rebuilt.parts[0].label == "Nugget (no longer stored)"


def test_each_step_labels_only_what_its_pipeline_stores():
    assert step_labels(ds.CITATIONS) == ("support", "not_support")
    assert step_labels(ds.ORGANIZATION) == ("win", "tie", "loss")
    assert step_labels("deepsynth.checklist_group") == ("correct", "omitted", "incorrect")
    assert step_labels("surveylens.rubric") == ()  # scored, not labelled
