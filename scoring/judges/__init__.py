"""Judges: the steps a pipeline can ask, and the backends that answer them.

``judge_for(config)`` returns the backend a ``JudgeConfig`` names — ``openai`` (any
OpenAI-compatible endpoint, ``scoring.judges.openai_judge``) or ``offline`` (the
heuristic default, ``scoring.judges.offline_judge``). Pipelines build ``JudgeCall``s
for the steps in ``STEPS``, call ``answer``/``answer_many``, and store each answer's
cost with ``record_call``.
"""

from .base import Judge, JudgeAnswer, JudgeCall
from .records import record_call
from .steps import STEPS, Step, StepError, check_item_ids, get_step, render_messages, validate_answer

BACKENDS = ("openai", "offline")


def judge_for(config) -> Judge:
    """The judge for a stored configuration (or any object with its attributes)."""
    backend = getattr(config, "backend", "")
    if backend == "openai":
        from .openai_judge import OpenAIJudge

        return OpenAIJudge(config)
    if backend == "offline":
        from .offline_judge import OfflineJudge

        return OfflineJudge(config)
    raise ValueError(f"unknown judge backend {backend!r}: expected one of {', '.join(BACKENDS)}")


__all__ = [
    "BACKENDS", "STEPS", "Judge", "JudgeAnswer", "JudgeCall", "Step", "StepError", "check_item_ids", "get_step",
    "judge_for", "record_call", "render_messages", "validate_answer",
]
