"""The offline judge's steps that compare texts by similarity and structure.

* ``deepscholar.relevance``: query–document cosine ≥ ``relevance_high`` → 2, ≥ ``relevance_low`` → 1,
  else 0. ``deepscholar.reference_importance``: cosine ≥ ``importance_similarity`` — a topical proxy,
  not the paper's "could not be substituted".
* ``deepscholar.organization`` and ``survey.pairwise``: a structure score per text (:func:`structure_score`);
  pairwise adds topic similarity. Winner by a margin of ``tie_margin``, otherwise a tie.
"""

from __future__ import annotations

import re

import numpy as np

from . import lexical, offline_structure
from .offline_claims import round4

_DISCOURSE = re.compile(r"^(first|second|third|finally|in contrast|however|moreover|furthermore|similarly|"
                        r"in addition|another|building on|beyond|more recently|recently|to address|overall|"
                        r"in summary|together|unlike|compared)\b", re.IGNORECASE)


def deepscholar_relevance(judge, query, document):
    similarity = judge.cosine(query, document)
    grade = 2 if similarity >= judge.thresholds["relevance_high"] else (
        1 if similarity >= judge.thresholds["relevance_low"] else 0)
    return {"grade": grade, "rationale": f"heuristic: query-document similarity {similarity:.2f}"}


def deepscholar_reference_importance(judge, query, document):
    return {"important": judge.cosine(query, document) >= judge.thresholds["importance_similarity"]}


def structure_score(judge, text: str) -> tuple[float, str]:
    """Organisation score of a text and a short account of its parts."""
    paragraphs = [b for b in lexical.blocks(text) if b.kind in ("paragraph", "item")]
    heading_count = sum(1 for b in lexical.blocks(text) if b.kind == "heading")
    per_paragraph = [[s for s in lexical.split_text(p.text) if lexical.tokens(s)] for p in paragraphs]
    sentences = [s for group in per_paragraph for s in group]
    if len(sentences) < 2:
        return 0.0, offline_structure.TOO_SHORT
    vectors = judge.vectors_of(sentences)
    adjacent, focus, offset = [], [], 0
    for group in per_paragraph:
        block = vectors[offset: offset + len(group)]
        offset += len(group)
        if len(group) >= 2:
            adjacent.extend(float(block[i] @ block[i + 1]) for i in range(len(group) - 1))
            centroid = block.mean(axis=0)
            centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
            focus.append(float((block @ centroid).mean()))
    sims = vectors @ vectors.T
    upper = sims[np.triu_indices(len(sentences), k=1)]
    redundancy = float((upper >= 0.9).mean()) if upper.size else 0.0
    marked = sum(1 for p in paragraphs if _DISCOURSE.match(p.text))
    signposting = min(0.2, 0.2 * (heading_count + marked) / max(len(paragraphs), 1))
    coherence = float(np.mean(adjacent)) if adjacent else 0.0
    focused = float(np.mean(focus)) if focus else 0.0
    total = round4(coherence + focused + signposting - redundancy)
    return total, (f"coherence {coherence:.2f}, focus {focused:.2f}, signposting {signposting:.2f}, "
                   f"redundancy {redundancy:.2f}")


def _winner(judge, score_a: float, score_b: float) -> str:
    if abs(score_a - score_b) < judge.thresholds["tie_margin"]:
        return "tie"
    return "A" if score_a > score_b else "B"


def deepscholar_organization(judge, query, report_a, report_b):
    (a, why_a), (b, why_b) = structure_score(judge, report_a), structure_score(judge, report_b)
    return {"winner": _winner(judge, a, b),
            "rationale": f"heuristic structure score A {a:.2f} ({why_a}) vs B {b:.2f} ({why_b})"}


def survey_pairwise(judge, topic, survey_a, survey_b):
    results = []
    for survey in (survey_a, survey_b):
        structure, _ = structure_score(judge, survey)
        sentences = list(lexical.split_sentences(survey)) or [survey]
        centroid = judge.vectors_of(sentences).mean(axis=0)
        centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
        results.append((round4(structure + float(judge.vectors_of([topic])[0] @ centroid)), structure))
    (a, sa), (b, sb) = results
    return {"winner": _winner(judge, a, b),
            "rationale": f"heuristic: topic match plus structure, A {a:.2f} (structure {sa:.2f}) vs "
                         f"B {b:.2f} (structure {sb:.2f})"}


HANDLERS = {
    "deepscholar.relevance": deepscholar_relevance,
    "deepscholar.reference_importance": deepscholar_reference_importance,
    "deepscholar.organization": deepscholar_organization,
    "survey.pairwise": survey_pairwise,
}
