"""Storing what a judge call cost: one ``LLMCall`` row per answered call."""

from .base import JudgeAnswer


def record_call(answer: JudgeAnswer, *, judge_config, step: str, run=None):
    """Store one ``LLMCall`` for ``answer`` (tokens, latency, cost, attempts, error) and return it.

    Pipelines call this once per ``JudgeCall`` and point the verdicts made from the
    answer at the returned row.
    """
    from scoring.models import LLMCall

    from .endpoints import redact

    return LLMCall.objects.create(
        judge_config=judge_config,
        run=run,
        step=step,
        prompt_version=answer.extra.get("prompt_version") or judge_config.prompt_version,
        model=answer.model or judge_config.model,
        request_hash=answer.extra.get("request_hash", ""),
        ok=answer.ok,
        error=redact(answer.error),
        attempts=min(max(answer.attempts, 0), 32767),  # HTTP requests; 0 when none was sent
        tokens_in=answer.tokens_in,
        tokens_out=answer.tokens_out,
        latency_ms=answer.latency_ms,
        cost_usd=answer.cost_usd,
    )
