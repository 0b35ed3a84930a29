"""The offline judge's section-level structure (SciSage §5.1.2, Table 3's 1–5 rubric), on real surveys."""

import json
import random

import pytest

from scoring.judges import JudgeCall, judge_for, validate_answer
from scoring.judges.offline_structure import sections
from scoring.models import JudgeConfig

pytestmark = pytest.mark.django_db  # the judge reads and stores vectors in the embedding cache

CONFIG = JudgeConfig(name="offline", backend="offline")
DIMENSIONS = [{"id": "section_structure", "name": "Section-level structure", "description": "Coherence and flow."}]


@pytest.fixture(scope="module")
def judge():
    return judge_for(CONFIG)


def survey_text(datasets, system: str) -> str:
    """A released SurveyLens luciferase survey as markdown, one heading per content section."""
    data = json.loads((datasets / "surveylens" / "luciferase" / f"{system}.json").read_text(encoding="utf-8"))
    return "\n\n".join(f"{'#' * s['level']} {s['heading']}\n\n{s['content']}" for s in data["content"])


def ask(judge, survey: str) -> dict:
    call = JudgeCall("scisage.section_structure", {"survey": survey, "dimensions": DIMENSIONS})
    answer = judge.answer(call)
    assert answer.ok, answer.error
    assert validate_answer(call.step, answer.data, call.variables) == []
    (entry,) = answer.data["scores"]
    assert entry["id"] == "section_structure" and "heuristic" in entry["rationale"]
    return entry


def test_sections_split_at_every_heading_level():
    text = "Preface text.\n\n# One\n\nA. B.\n\n## One point one\n\nC.\n\n# Two\n\nD. E."
    assert [(s.heading, s.text) for s in sections(text)] == [("One", "A. B."), ("One point one", "C."), ("Two", "D. E.")]


def test_a_real_survey_scores_above_its_own_sentences_shuffled(judge, datasets):
    text = survey_text(datasets, "Gemini")
    original = ask(judge, text)
    sentences = text.split(". ")
    random.Random(0).shuffle(sentences)
    shuffled = ask(judge, ". ".join(sentences))
    assert 1 <= shuffled["score"] < original["score"] <= 5
    again = judge_for(CONFIG).answer(JudgeCall("scisage.section_structure", {"survey": text, "dimensions": DIMENSIONS}))
    assert again.data["scores"][0]["score"] == original["score"]  # deterministic


def test_repeated_headings_lower_the_score_and_no_headings_score_one(judge, datasets):
    text = survey_text(datasets, "SciSage")
    parts = sections(text)
    repeated = "\n\n".join(f"# {parts[0].heading}\n\n{p.text}" for p in parts)  # every section under one title
    assert ask(judge, repeated)["score"] < ask(judge, text)["score"]
    flat = "\n\n".join(p.text for p in parts)
    entry = ask(judge, flat)
    assert entry["score"] == 1 and "no section headings" in entry["rationale"]


def test_thresholds_come_from_the_configuration(datasets):
    text = survey_text(datasets, "Qwen")
    strict = judge_for(JudgeConfig(name="strict", backend="offline", options={"structure_floor": 5.0,
                                                                             "structure_ceiling": 6.0}))
    lenient = judge_for(JudgeConfig(name="lenient", backend="offline", options={"structure_floor": -2.0,
                                                                               "structure_ceiling": -1.0}))
    assert ask(strict, text)["score"] == 1 and ask(lenient, text)["score"] == 5
