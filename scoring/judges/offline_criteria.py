"""The offline judge's steps that score a survey on criteria.

``surveylens.rubric`` (1–5) and ``scisage.quality`` (1–10): how well the best matching passages
address each criterion (mean of the 3 best similarities), mapped linearly from ``rubric_floor`` to
``rubric_ceiling`` onto the scale — a topical proxy for quality, said so in every rationale.
``scisage.section_structure`` (1–5): ``offline_structure``.
"""

from __future__ import annotations

import numpy as np

from . import lexical, offline_structure
from .offline_claims import round4
from .offline_comparison import structure_score

def _criterion_scores(judge, survey: str, criteria: list[dict], high: int) -> dict:
    units = list(lexical.split_sentences(survey, headings=True)) or [survey]
    unit_vectors = judge.vectors_of(units)
    queries = [f"{c['name']}: {c['description']}" for c in criteria]
    sims = judge.vectors_of(queries) @ unit_vectors.T
    floor, ceiling = judge.thresholds["rubric_floor"], judge.thresholds["rubric_ceiling"]
    scores = []
    for criterion, row in zip(criteria, sims):
        top = round4(np.mean(np.sort(row)[-3:]))
        fraction = min(1.0, max(0.0, (top - floor) / max(ceiling - floor, 1e-9)))
        scores.append({"id": criterion["id"], "score": 1 + int(round(fraction * (high - 1))),
                       "rationale": f"heuristic: topical match of the best passages {top:.2f} "
                                    "(a proxy: the offline judge cannot assess quality)"})
    return {"scores": scores}


def surveylens_rubric(judge, component, survey, criteria):
    return _criterion_scores(judge, survey, criteria, 5)


def scisage_quality(judge, survey, dimensions):
    return _criterion_scores(judge, survey, dimensions, 10)


def scisage_section_structure(judge, survey, dimensions):
    return offline_structure.section_structure_answer(
        survey, dimensions, structure_of=lambda text: structure_score(judge, text), vectors_of=judge.vectors_of,
        options=judge.options)


HANDLERS = {
    "surveylens.rubric": surveylens_rubric,
    "scisage.quality": scisage_quality,
    "scisage.section_structure": scisage_section_structure,
}
