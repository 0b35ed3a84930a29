"""SurveyLens and SciSage/SurveyScope pipelines on a small hand-made case, against the loopback server.

The case: a human survey (4 outline entries, 3 sections with text, 2 references) and a report
with 5 outline entries, 3 sections with text (one near-duplicate) and 2 references, one of which
is also in the human survey. Embeddings are the loopback server's bag-of-words vectors, so
shared words give high similarities. Every expected number is computed here with
``scoring.metrics`` on entries written out by hand, never with the pipeline's helpers.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from benchmark.models import Protocol, ReviewStatus, RubricCriterion, TaskPrompt
from benchmark.parsing import parse_report
from scoring.embeddings import normalize_rows
from scoring.judges import judge_for
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.metrics import rams, reference_prf, rubric_score, structure_ratios, tams, win_rate
from scoring.models import Embedding, EvaluationRun, LLMCall, Verdict
from scoring.pipelines import PIPELINES
from scoring.pipelines.surveys.pairwise import PAIRWISE
from scoring.pipelines.surveys.surveylens import ALIGNMENT, LENS_STEPS, RUBRIC
from scoring.pipelines.surveys.surveyscope import QUALITY, SCOPE_STEPS
from tests.factories import DisciplineFactory, ReportFactory, RubricCriterionFactory, SurveyFactory, TaskFactory
from tests.scoring.services.fakes import judge_config
from tests.support.fake_openai import Reply, bag_of_words_vector, survey_responder, survey_score

lens = PIPELINES["surveylens"]
scope = PIPELINES["surveyscope"]

REPORT_TEXT = """# Widget Survey

## 1. Introduction

Widgets are small devices used in labs.

## 2. Widget Methods

Sparse widget methods reduce memory use.

## 3. Widget Methods Again

Sparse widget methods reduce memory use a lot.

## References

[1] Sparse Widgets Reduce Memory. 2020.
[2] Unrelated Gadget Paper. 2021.
"""
HUMAN_OUTLINE = [[1, "Widget Survey"], [1, "Introduction"], [1, "Widget Methods"], [1, "Open Problems"]]
HUMAN_CONTENT = [
    {"heading": "Widget Survey", "level": 1, "text": ""},
    {"heading": "Introduction", "level": 1, "text": "Widgets are small devices used in laboratories."},
    {"heading": "Widget Methods", "level": 1, "text": "Sparse widget methods reduce memory."},
    {"heading": "Open Problems", "level": 1, "text": "Scaling widgets to large labs remains open."},
]
HUMAN_REFERENCES = [
    {"number": 1, "title": "Sparse Widgets Reduce Memory", "text": "A. Author. Sparse Widgets Reduce Memory. 2020."},
    {"number": 2, "title": "Widget Scaling Laws", "text": "B. Author. Widget Scaling Laws. 2022."},
]
HUMAN_TEXT = """# Widget Survey

# Introduction

Widgets are small devices used in laboratories.

# Widget Methods

Sparse widget methods reduce memory.

# Open Problems

Scaling widgets to large labs remains open.

# References

[1] A. Author. Sparse Widgets Reduce Memory. 2020.
[2] B. Author. Widget Scaling Laws. 2022.
"""
# The entries the pipeline must compare (SurveyLens Table 3), written out by hand.
ENTRIES = {
    "outline": (["Widget Survey", "Introduction", "Widget Methods", "Widget Methods Again", "References"],
                ["Widget Survey", "Introduction", "Widget Methods", "Open Problems"]),
    "content": (["1. Introduction\nWidgets are small devices used in labs.",
                 "2. Widget Methods\nSparse widget methods reduce memory use.",
                 "3. Widget Methods Again\nSparse widget methods reduce memory use a lot."],
                ["Introduction\nWidgets are small devices used in laboratories.",
                 "Widget Methods\nSparse widget methods reduce memory.",
                 "Open Problems\nScaling widgets to large labs remains open."]),
    "reference": (["Sparse Widgets Reduce Memory", "Unrelated Gadget Paper"],
                  ["Sparse Widgets Reduce Memory", "Widget Scaling Laws"]),
}
TAU = {"outline": 0.6, "content": 0.5, "reference": 0.9}


def bow(texts: list[str]) -> np.ndarray:
    return normalize_rows(np.stack([bag_of_words_vector(t) for t in texts])).astype(np.float64)


def expected_alignment(component: str, tau: float, lam: float = 1.0) -> dict:
    gen, gold = (bow(side) for side in ENTRIES[component])
    out = rams(gen @ gold.T, gen @ gen.T, tau, lam)
    out["tams"] = tams(gen @ gold.T, tau)
    return out


def make_report(task, text=REPORT_TEXT):
    parsed = parse_report(text, format="markdown").to_dict()
    del parsed["text"]
    return ReportFactory(task=task, text=text, parsed=parsed, stats=parsed["stats"])


class SurveyJudge(Judge):
    """Scores every criterion / dimension with ``survey_score`` and prefers ``winner`` in pairwise
    calls; ``respond(call)`` may replace an answer (``None`` keeps the scripted one)."""

    def __init__(self, config, *, winner="A", respond=None) -> None:
        super().__init__(config)
        self.winner = winner
        self.respond = respond
        self.calls: list[JudgeCall] = []
        self._lock = threading.Lock()

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        with self._lock:
            self.calls.append(call)
        custom = self.respond(call) if self.respond else None
        if custom is not None:
            return custom
        if call.step == PAIRWISE:
            data = {"winner": self.winner, "rationale": "scripted"}
        else:
            key, high = ("criteria", 5) if call.step == RUBRIC else ("dimensions", 10)
            data = {"scores": [{"id": c["id"], "score": survey_score(c["id"], high), "rationale": "scripted"}
                               for c in call.variables[key]]}
        return JudgeAnswer(data=data, raw="{}", model="scripted", tokens_in=100, tokens_out=10, cost_usd=0.002)

    def steps_called(self) -> list[str]:
        return sorted(c.step for c in self.calls)


@pytest.fixture
def case():
    biology = DisciplineFactory(code="biology", name="Biology")
    survey = SurveyFactory(title="Widget Survey", discipline=biology, outline=HUMAN_OUTLINE, content=HUMAN_CONTENT,
                           references=HUMAN_REFERENCES, full_text=HUMAN_TEXT)
    task = TaskFactory(protocol=Protocol.SURVEYLENS, survey=survey)
    TaskPrompt.objects.create(task=task, level=TaskPrompt.Level.GENERAL, text="Widgets in the lab")
    c = RubricCriterion.Component
    criteria = {
        "outline": [
            RubricCriterionFactory(discipline=biology, component=c.OUTLINE, aspect="Structural Coherence", weight=0.6,
                                   position=0),
            RubricCriterionFactory(discipline=biology, component=c.OUTLINE, aspect="Structural Coherence", weight=0.6,
                                   position=1),
            RubricCriterionFactory(discipline=None, task=task, component=c.OUTLINE, aspect="Formal Precision",
                                   weight=0.2, position=2),
        ],
        "content": [
            RubricCriterionFactory(discipline=biology, component=c.CONTENT, aspect="Synthesis", weight=0.7),
            RubricCriterionFactory(discipline=biology, component=c.CONTENT, aspect="Critical Insight", weight=0.3),
        ],
        "reference": [RubricCriterionFactory(discipline=biology, component=c.REFERENCE, aspect="Pertinence")],
    }
    # not asked: rejected, another discipline, and a 10-point (SciSage) criterion
    RubricCriterionFactory(discipline=biology, component=c.OUTLINE, review_status=ReviewStatus.REJECTED)
    RubricCriterionFactory(component=c.OUTLINE)
    RubricCriterionFactory(discipline=None, task=task, component=c.CONTENT, scale_max=10, name="Depth")
    return task, make_report(task), criteria


def loopback_config(server, **overrides):
    values = dict(name="loopback-surveys", backend="openai", base_url=server.base_url, model="loopback",
                  embedding_backend="openai:bow", max_retries=0, options={"surveylens_tau": TAU})
    values.update(overrides)
    return judge_config(**values)


def make_run(config, protocol="surveylens") -> EvaluationRun:
    return EvaluationRun.objects.create(protocol=protocol, judge_config=config)


def run_all(pipeline, run, report, judge) -> None:
    for step in pipeline.steps_for(report):
        pipeline.run_step(run=run, report=report, step=step, judge=judge)


def expected_rubric(criteria: list) -> float:
    aspects: dict[str, list] = {}
    for criterion in criteria:
        aspects.setdefault(criterion.aspect, []).append(criterion)
    means = [np.mean([survey_score(c.id, 5) for c in group]) for group in aspects.values()]
    weights = np.array([np.mean([c.weight for c in group]) for group in aspects.values()])
    return rubric_score(weights / weights.sum(), means, x_max=5)


# --- SurveyLens ------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_surveylens_metrics_agree_with_scoring_metrics(case, fake_openai):
    task, report, criteria = case
    fake_openai.responder = survey_responder
    config = loopback_config(fake_openai)
    run = make_run(config)
    assert lens.steps_for(report) == LENS_STEPS

    run_all(lens, run, report, judge_for(config))

    chats = fake_openai.chat_requests()
    assert len(chats) == 3 + 2  # one rubric call per component, pairwise in both orders
    assert LLMCall.objects.filter(run=run).count() == 5
    embedded = [r for r in fake_openai.requests if r.path.endswith("/embeddings")]
    texts = [t for r in embedded for t in r.body["input"]]
    assert sorted(set(texts)) == sorted({t for side in ENTRIES.values() for group in side for t in group})
    assert Verdict.objects.filter(target_kind="alignment", label="embedded").count() == 3
    assert Verdict.objects.get(target_kind="alignment", target_key="outline").call is None  # no LLM

    score = lens.score_report(run=run, report=report)
    m = score["metrics"]
    for component in ("outline", "content", "reference"):
        expected = expected_alignment(component, TAU[component])
        assert m[f"rams_{component}"] == pytest.approx(expected["rams"], abs=1e-6)
        assert m[f"rams_precision_{component}"] == pytest.approx(expected["precision"], abs=1e-6)
        assert m[f"rams_recall_{component}"] == pytest.approx(expected["recall"], abs=1e-6)
        assert m[f"tams_{component}"] == pytest.approx(expected["tams"], abs=1e-6)
        assert (m[f"entries_{component}"], m[f"gold_entries_{component}"]) == tuple(map(len, ENTRIES[component]))
        assert m[f"tau_{component}"] == TAU[component]
        assert m[f"rubric_{component}"] == pytest.approx(expected_rubric(criteria[component]))
        assert m[f"rubric_criteria_{component}"] == len(criteria[component])
    assert 0 < m["rams_outline"] < 1 and m["rams_content"] > 0  # the case is not degenerate
    assert m["rubric_mean"] == pytest.approx(np.mean([expected_rubric(criteria[c]) for c in criteria]))
    outline = criteria["outline"]
    coherence = np.mean([survey_score(c.id, 5) for c in outline[:2]])
    assert m["aspect_outline_structural_coherence"] == pytest.approx(coherence)
    assert m["aspect_outline_formal_precision"] == survey_score(outline[2].id, 5)

    stats = {}
    for side, text in (("gen", REPORT_TEXT), ("gold", HUMAN_TEXT)):
        s = parse_report(text, format="markdown").stats
        stats[side] = {"images": s.images, "tables": s.tables, "equations": s.equations, "paragraphs": s.paragraphs,
                       "words": s.words, "sentences": s.surveylens_sentences, "citations": s.citations,
                       "references": s.references, "characters": s.chars}
    for key, value in structure_ratios(stats["gen"], stats["gold"]).items():
        assert m[f"structure_{key}"] == (pytest.approx(value) if value is not None else None)
    assert m["structure_references"] == pytest.approx(1.0)

    # the loopback judge always prefers survey A: a win, then a loss once the positions are swapped
    assert m["win_rate_vs_human"] == pytest.approx(win_rate(["win", "loss"])) == 0.5
    assert (m["pairwise_judged"], m["pairwise_position_consistency"]) == (2, 0.0)
    assert (score["items_judged"], score["items_failed"]) == (6 + 3 + 2, 0)

    system = lens.score_system(report_scores=[score])["metrics"]
    assert system["rubric_outline"] == pytest.approx(m["rubric_outline"])


@pytest.mark.django_db
def test_a_second_run_makes_no_call_and_no_new_embedding_and_tau_changes_need_none(case, fake_openai):
    task, report, _ = case
    fake_openai.responder = survey_responder
    config = loopback_config(fake_openai)
    run_all(lens, make_run(config), report, judge_for(config))
    first = lens.score_report(run=make_run(config), report=report)
    requests, embeddings, verdicts = len(fake_openai.requests), Embedding.objects.count(), Verdict.objects.count()
    assert embeddings == len({t for side in ENTRIES.values() for group in side for t in group})

    run2 = make_run(config)
    run_all(lens, run2, report, judge_for(config))
    assert len(fake_openai.requests) == requests  # neither chat nor embedding requests
    assert (Embedding.objects.count(), Verdict.objects.count()) == (embeddings, verdicts)
    assert lens.score_report(run=run2, report=report) == first

    # a new τ only changes the scores: re-scoring reads the stored vectors
    config.options = {"surveylens_tau": {"outline": 0.95}}
    config.save()
    rescored = lens.score_report(run=run2, report=report)["metrics"]
    assert len(fake_openai.requests) == requests and Embedding.objects.count() == embeddings
    assert rescored["tau_outline"] == 0.95 and rescored["tau_reference"] == 0.8  # the documented default
    assert rescored["rams_outline"] == pytest.approx(expected_alignment("outline", 0.95)["rams"], abs=1e-6)
    assert rescored["tams_outline"] == pytest.approx(expected_alignment("outline", 0.95)["tams"], abs=1e-6)

    # the released configuration by name: 0.95 for all three components (eval_quantitative_config.json)
    config.options = {"surveylens_tau": "upstream", "surveylens_tams_mode": "gated"}
    config.save()
    released = lens.score_report(run=run2, report=report)["metrics"]
    assert [released[f"tau_{c}"] for c in ("outline", "content", "reference")] == [0.95, 0.95, 0.95]
    for component in ("outline", "content", "reference"):
        assert released[f"rams_{component}"] == pytest.approx(expected_alignment(component, 0.95)["rams"], abs=1e-6)
        gen, gold = (bow(side) for side in ENTRIES[component])
        assert released[f"tams_{component}"] == pytest.approx(tams(gen @ gold.T, 0.95, "gated"), abs=1e-6)


@pytest.mark.django_db
def test_pairwise_is_asked_with_positions_swapped(case):
    task, report, _ = case
    config = judge_config()
    run = make_run(config)
    judge = SurveyJudge(config, winner="B")
    lens.run_step(run=run, report=report, step=PAIRWISE, judge=judge)
    first, second = judge.calls
    assert first.variables == {"topic": "Widgets in the lab", "survey_a": REPORT_TEXT, "survey_b": HUMAN_TEXT}
    assert second.variables == {"topic": "Widgets in the lab", "survey_a": HUMAN_TEXT, "survey_b": REPORT_TEXT}
    labels = dict(Verdict.objects.filter(target_kind="human_pairwise").values_list("target_key", "label"))
    assert labels == {"report_first": "loss", "human_first": "win"}
    m = lens.score_report(run=run, report=report)["metrics"]
    assert (m["win_rate_vs_human"], m["pairwise_position_consistency"]) == (0.5, 0.0)

    # a judge that sees through the order prefers the human survey both times
    config2 = judge_config(name="consistent", repeats=2)
    run2 = make_run(config2)

    def prefer_human(call):
        winner = "B" if call.variables["survey_b"] == HUMAN_TEXT else "A"
        return JudgeAnswer(data={"winner": winner, "rationale": "human is better"}, raw="{}")

    lens.run_step(run=run2, report=report, step=PAIRWISE, judge=SurveyJudge(config2, respond=prefer_human))
    m2 = lens.score_report(run=run2, report=report)["metrics"]
    assert (m2["win_rate_vs_human"], m2["pairwise_judged"], m2["pairwise_position_consistency"]) == (0.0, 4, 1.0)


@pytest.mark.django_db
def test_malformed_answers_are_per_item_errors_retried_in_place(case):
    task, report, criteria = case
    config = judge_config(embedding_backend="local")
    run = make_run(config)
    outline_ids = [c.id for c in criteria["outline"]]

    def malformed(call):
        if call.step == RUBRIC and call.variables["component"] == "outline":
            data = {"scores": [
                {"id": outline_ids[0], "score": 4, "rationale": "ok"},
                {"id": outline_ids[1], "score": 9, "rationale": "off the scale"},
                {"id": str(outline_ids[2]), "score": 3, "rationale": "wrong id type"},
            ]}
            return JudgeAnswer(data=data, raw=json.dumps(data))
        if call.step == RUBRIC and call.variables["component"] == "reference":
            return JudgeAnswer(data=None, error="HTTP 503 after 5 attempts", raw="Service Unavailable")
        if call.step == PAIRWISE and call.variables["survey_a"] == HUMAN_TEXT:
            return JudgeAnswer(data={"winner": "C", "rationale": "?"}, raw='{"winner": "C"}')
        return None

    judge = SurveyJudge(config, respond=malformed)
    lens.run_step(run=run, report=report, step=RUBRIC, judge=judge)
    lens.run_step(run=run, report=report, step=PAIRWISE, judge=judge)
    errors = sorted(Verdict.objects.exclude(error="").values_list("error", flat=True))
    assert errors == sorted([
        "malformed answer: score 9 is not an integer from 1 to 5",
        "malformed answer: missing from the judge's answer",
        "judge error: HTTP 503 after 5 attempts",
        "malformed answer: winner 'C' is not A, B or tie",
    ])
    bad = Verdict.objects.get(target_kind="rubric_criterion", target_id=outline_ids[1])
    assert bad.label == "" and bad.score is None and "off the scale" in bad.raw_response["raw"]

    score = lens.score_report(run=run, report=report)
    m = score["metrics"]
    # outline: only the first criterion was judged; its aspect is the only one left, so S = x
    assert m["rubric_outline"] == pytest.approx(4.0)
    assert m["rubric_reference"] is None and m["rubric_content"] == pytest.approx(expected_rubric(criteria["content"]))
    assert m["win_rate_vs_human"] == 1.0 and m["pairwise_judged"] == 1
    # the alignment step never ran: its three components are failed items, not zeros
    assert (m["rams_outline"], m["tams_content"]) == (None, None)
    assert (score["items_judged"], score["items_failed"]) == (1 + 2 + 1, 2 + 1 + 1 + 3)

    retry = SurveyJudge(config)
    lens.run_step(run=run, report=report, step=RUBRIC, judge=retry)
    lens.run_step(run=run, report=report, step=PAIRWISE, judge=retry)
    assert retry.steps_called() == [PAIRWISE, RUBRIC, RUBRIC]
    assert [c["id"] for c in retry.calls[0].variables["criteria"]] == outline_ids[1:]
    assert not Verdict.objects.exclude(error="").exists()
    m = lens.score_report(run=run, report=report)["metrics"]
    coherence = (4 + survey_score(outline_ids[1], 5)) / 2  # the first criterion keeps its valid score 4
    assert m["rubric_outline"] == pytest.approx(
        rubric_score([0.75, 0.25], [coherence, survey_score(outline_ids[2], 5)]))  # weights 0.6 : 0.2


@pytest.mark.django_db
def test_a_failed_embedding_endpoint_is_a_failed_item_and_retried(case, fake_openai):
    task, report, _ = case
    fake_openai.responder = survey_responder
    config = loopback_config(fake_openai)
    run = make_run(config)
    fake_openai.script(Reply.error(500, "embedding backend down"))
    lens.run_step(run=run, report=report, step=ALIGNMENT, judge=judge_for(config))
    errored = Verdict.objects.get(target_kind="alignment", target_key="outline")
    assert errored.error.startswith("embedding failed:") and "HTTP 500" in errored.error
    score = lens.score_report(run=run, report=report)
    assert score["metrics"]["rams_outline"] is None and score["items_failed"] >= 1
    assert score["metrics"]["rams_content"] == pytest.approx(expected_alignment("content", TAU["content"])["rams"],
                                                             abs=1e-6)
    lens.run_step(run=run, report=report, step=ALIGNMENT, judge=judge_for(config))
    m = lens.score_report(run=run, report=report)["metrics"]
    assert m["rams_outline"] == pytest.approx(expected_alignment("outline", TAU["outline"])["rams"], abs=1e-6)


@pytest.mark.django_db
def test_a_human_survey_without_references_leaves_reference_alignment_undefined(case, fake_openai):
    task, report, _ = case
    task.survey.references = []
    task.survey.full_text = HUMAN_TEXT.split("# References")[0]
    task.survey.save()
    fake_openai.responder = survey_responder
    config = loopback_config(fake_openai)
    run = make_run(config)
    lens.run_step(run=run, report=report, step=ALIGNMENT, judge=judge_for(config))
    score = lens.score_report(run=run, report=report)
    m = score["metrics"]
    assert (m["rams_reference"], m["tams_reference"], m["gold_entries_reference"]) == (None, None, 0)
    assert m["structure_references"] is None
    assert m["rams_outline"] == pytest.approx(expected_alignment("outline", TAU["outline"])["rams"], abs=1e-6)
    assert (score["items_judged"], score["items_failed"]) == (3, 6 + 2)  # rubric and pairwise not run yet
    scope_score = scope.score_report(run=make_run(config, "surveyscope"), report=report)["metrics"]
    assert (scope_score["reference_f1"], scope_score["reference_tp"], scope_score["gold_references"]) == (None, None, 0)


@pytest.mark.django_db
@pytest.mark.parametrize("options, problem", [
    ({"surveylens_tau": {"outline": 1.5}}, "surveylens_tau.outline must be a number between -1 and 1"),
    ({"surveylens_tau": {"abstract": 0.5}}, "unknown component(s) ['abstract']"),
    ({"surveylens_tau": 0.7}, "surveylens_tau must be a preset name (upstream, default) or an object"),
    ({"surveylens_tau": "released"}, "surveylens_tau 'released' is no preset; presets: upstream, default"),
    ({"surveylens_lambda": -1}, "surveylens_lambda must be a number ≥ 0"),
    ({"surveylens_tams_mode": "max"}, "surveylens_tams_mode must be 'margin' or 'gated'"),
])
def test_bad_alignment_options_fail_clearly_before_anything_is_stored(case, options, problem):
    task, report, _ = case
    config = judge_config(options=options)
    run = make_run(config)
    with pytest.raises(ValueError, match="judge configuration 'scripted-judge'") as error:
        lens.run_step(run=run, report=report, step=ALIGNMENT, judge=SurveyJudge(config))
    assert problem in str(error.value)
    assert not Verdict.objects.exists() and not Embedding.objects.exists()
    with pytest.raises(ValueError, match="scripted-judge"):
        lens.score_report(run=run, report=report)


def test_an_unknown_step_is_refused():
    with pytest.raises(ValueError, match="the surveylens pipeline has no step 'scisage.quality'"):
        lens.run_step(run=None, report=None, step=QUALITY, judge=None)


# --- SurveyScope -----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_surveyscope_references_quality_and_pairwise(case, fake_openai):
    task, report, _ = case
    RubricCriterion.objects.filter(task=task, scale_max=10).delete()  # the paper's default dimensions then
    fake_openai.responder = survey_responder
    config = loopback_config(fake_openai)
    run = make_run(config, "surveyscope")
    assert scope.steps_for(report) == SCOPE_STEPS

    run_all(scope, run, report, judge_for(config))
    assert len(fake_openai.chat_requests()) == 2 + 2  # the 10-point dimensions, section structure, pairwise twice
    assert not [r for r in fake_openai.requests if r.path.endswith("/embeddings")]
    structure_prompt = next(r.last_message for r in fake_openai.chat_requests()
                            if "scisage.section_structure" in r.prompt)
    assert "1 = The survey lacks logic" in structure_prompt and '"id": "section_structure"' in structure_prompt
    assert '"id": "language"' not in structure_prompt
    score = scope.score_report(run=run, report=report)
    m = score["metrics"]

    # predicted [Sparse Widgets…, Unrelated Gadget Paper] vs the human [Sparse Widgets…, Widget Scaling Laws]
    prf = reference_prf([{"title": "Sparse Widgets Reduce Memory"}, {"title": "Unrelated Gadget Paper"}],
                        [{"title": "Sparse Widgets Reduce Memory"}, {"title": "Widget Scaling Laws"}])
    assert (m["reference_tp"], m["reference_precision"], m["reference_recall"]) == (1, 0.5, 0.5) == (
        prf["tp"], prf["precision"], prf["recall"])
    assert m["reference_f1"] == pytest.approx(prf["f1"]) and (m["references"], m["gold_references"]) == (2, 2)

    # the paper's dimensions: three on 1–10 (× 10 to 0–100), the section-level structure on 1–5 (× 20)
    values = {key: 100.0 * survey_score(key, 10) / 10 for key in ("language", "critical", "structure")}
    values["section_structure"] = 100.0 * survey_score("section_structure", 5) / 5
    assert {k: m[f"quality_{k}"] for k in values} == pytest.approx(values)
    assert m["quality_mean"] == pytest.approx(np.mean(list(values.values())))
    assert m["win_rate_vs_human"] == 0.5
    assert (score["items_judged"], score["items_failed"]) == (4 + 2, 0)
    structure = Verdict.objects.get(report=report, target_key="section_structure")
    assert (structure.step, structure.score) == ("scisage.section_structure", survey_score("section_structure", 5))

    # the pairwise verdicts are the same question as SurveyLens': a SurveyLens run asks none again
    before = len(fake_openai.chat_requests())
    lens.run_step(run=make_run(config), report=report, step=PAIRWISE, judge=judge_for(config))
    assert len(fake_openai.chat_requests()) == before


@pytest.mark.django_db
def test_surveyscope_uses_the_tasks_ten_point_criteria_and_curated_gold_references(case):
    from tests.factories import BibEntryFactory, GoldReferenceFactory

    task, report, _ = case
    depth = RubricCriterion.objects.get(task=task, scale_max=10)
    GoldReferenceFactory(task=task, bib_entry=BibEntryFactory(title="Unrelated Gadget Paper"))
    GoldReferenceFactory(task=task, bib_entry=BibEntryFactory(title="Rejected Paper"),
                         review_status=ReviewStatus.REJECTED)
    config = judge_config(repeats=2)
    run = make_run(config, "surveyscope")

    def second_repeat_lower(call):
        if call.step == QUALITY and call.repeat == 1:
            return JudgeAnswer(data={"scores": [{"id": "depth", "score": 4, "rationale": "r2"}]}, raw="{}")
        return None

    judge = SurveyJudge(config, respond=second_repeat_lower)
    scope.run_step(run=run, report=report, step=QUALITY, judge=judge)
    assert [c.variables["dimensions"] for c in judge.calls] == [[{"id": "depth", "name": "Depth",
                                                                   "description": depth.description}]] * 2
    m = scope.score_report(run=run, report=report)["metrics"]
    assert m["quality_depth"] == pytest.approx(100.0 * (survey_score("depth", 10) + 4) / 2 / 10)
    assert m["quality_mean"] == m["quality_depth"] and "quality_language" not in m
    assert (m["reference_tp"], m["gold_references"], m["reference_precision"]) == (1, 1, 0.5)
