"""The offline judge's answer to ``scisage.section_structure`` (SciSage §5.1.2, Table 3's 1–5 rubric).

A heuristic proxy, said so in every rationale. Table 3 asks whether each section is logically
arranged, whether adjacent sections connect, and whether subsections repeat. The proxy scores:

* within sections — the offline judge's structure score of each section's text (coherence of
  adjacent sentences, paragraph focus, signposting, minus redundancy; ``offline_comparison.structure_score``),
  averaged over the sections long enough to judge;
* between sections — minus the share of heading pairs that repeat each other (cosine ≥
  ``repeat_similarity``, 0.9: "repeated subsections").

The total is mapped linearly from ``structure_floor`` (0.5) to ``structure_ceiling`` (1.5) onto
1–5 and rounded; a survey without headings has no sections to judge and scores 1 (Table 3's
"no clear connections between sections"). The thresholds are read from ``JudgeConfig.options``
under these names, like the offline judge's others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import lexical

DEFAULTS = {"structure_floor": 0.5, "structure_ceiling": 1.5, "repeat_similarity": 0.9}
HIGH = 5
TOO_SHORT = "too short to judge"  # what ``offline_comparison.structure_score`` says of a text under two sentences


@dataclass(frozen=True)
class Section:
    heading: str
    text: str


def sections(survey: str) -> list[Section]:
    """Each heading with the text up to the next heading (any level); text before the first heading is left out."""
    out: list[Section] = []
    for block in lexical.blocks(survey):
        if block.kind == "heading":
            out.append(Section(block.text, ""))
        elif out:
            last = out[-1]
            out[-1] = Section(last.heading, f"{last.text}\n\n{block.text}" if last.text else block.text)
    return out


def section_structure(survey: str, *, structure_of: Callable[[str], tuple[float, str]],
                      vectors_of: Callable[[list[str]], np.ndarray], options: dict) -> tuple[int, str]:
    """The 1–5 score and its rationale (see the module doc)."""
    settings = {key: float(options.get(key, default)) for key, default in DEFAULTS.items()}
    parts = sections(survey)
    if not parts:
        return 1, "heuristic: no section headings, so no sections to judge (a proxy: the offline judge cannot read logic)"
    results = [structure_of(part.text) for part in parts if part.text]
    judged = [value for value, why in results if why != TOO_SHORT]
    within = float(np.mean(judged)) if judged else 0.0
    repeated = 0.0
    if len(parts) >= 2:
        heads = vectors_of([part.heading for part in parts])
        sims = heads @ heads.T
        upper = sims[np.triu_indices(len(parts), k=1)]
        repeated = float((upper >= settings["repeat_similarity"]).mean())
    total = within - repeated
    floor, ceiling = settings["structure_floor"], settings["structure_ceiling"]
    fraction = min(1.0, max(0.0, (total - floor) / max(ceiling - floor, 1e-9)))
    score = 1 + int(round(fraction * (HIGH - 1)))
    return score, (f"heuristic: {len(parts)} sections, {len(judged)} long enough to judge, mean within-section "
                   f"structure {within:.2f}, repeated headings {repeated:.2f} (a proxy: the offline judge cannot "
                   "read logic)")


def section_structure_answer(survey: str, dimensions: list[dict], **kwargs) -> dict:
    """The step's answer: the same score for each requested dimension (the step asks about one)."""
    score, rationale = section_structure(survey, **kwargs)
    return {"scores": [{"id": d["id"], "score": score, "rationale": rationale} for d in dimensions]}
