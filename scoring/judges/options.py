"""The options a judge configuration may carry (``JudgeConfig.options``), declared once: each
option's backends, type and range. ``options_check`` refuses an unknown key, a value of the wrong
type or out of range with a ``ValueError`` naming the option; the services run it when a
configuration is saved and again before a run starts (``judge_configs.judge_config_values_check``),
so a bad value is a 400 at save instead of a ``ValueError`` in the middle of a run.

The readers (``transport.RetryPolicy``, ``OpenAIJudge``, ``OfflineJudge``, the pipelines) keep their
defaults; what is declared here is what they may be given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

OPENAI, OFFLINE = "openai", "offline"
BOTH = (OPENAI, OFFLINE)


@dataclass(frozen=True)
class Option:
    kind: str  # "number", "integer", or "custom" (``check`` says)
    backends: tuple[str, ...] = BOTH
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # the value must be above ``low``, not equal to it
    check: Callable[[str, object], None] | None = None  # a custom rule: raises ValueError

    def describe(self) -> str:
        if self.kind == "custom":
            return "see the documentation"
        kind = "a whole number" if self.kind == "integer" else "a number"
        if self.low is not None and self.high is not None:
            return f"{kind} {'above' if self.low_open else 'from'} {_n(self.low)} to {_n(self.high)}"
        if self.low is not None:
            return f"{kind} {'above' if self.low_open else '≥'} {_n(self.low)}"
        return kind


def _n(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _number(low=None, high=None, *, backends=BOTH, low_open=False) -> Option:
    return Option("number", backends, low, high, low_open)


def _integer(low=None, high=None, *, backends=BOTH) -> Option:
    return Option("integer", backends, low, high)


def variant_choices() -> dict[str, tuple[str, ...]]:
    """Each metric with variants (``pipelines.base.variant_option``) and what it may be set to (for a
    name several protocols read, any of theirs)."""
    from scoring.metrics.checklist import GROUP_SCORE_VARIANTS, PRECISION_VARIANTS
    from scoring.metrics.deepscholar import VARIANTS
    from scoring.pipelines.reportbench import REFERENCE_VARIANTS

    return {"group_score": GROUP_SCORE_VARIANTS, "precision": PRECISION_VARIANTS, "relevance_rate": VARIANTS,
            "citation_precision": VARIANTS, "nugget_coverage": VARIANTS,
            "references": (*REFERENCE_VARIANTS, "scisage_upstream"),  # ReportBench's, and SurveyScope's
            "factual_accuracy_ties": ("count_as_wrong", "exclude")}  # reportbench.py's factual accuracy


def _variants(name: str, value) -> None:
    VARIANT_CHOICES = variant_choices()  # noqa: N806
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be an object of metric name → variant; got {_shown(value)}")
    for metric, chosen in value.items():
        allowed = VARIANT_CHOICES.get(metric)
        if allowed is None:
            raise ValueError(f"{name}.{metric} is not a metric with variants; known: {', '.join(sorted(VARIANT_CHOICES))}")
        if chosen not in allowed:
            raise ValueError(f"{name}.{metric} must be one of {', '.join(allowed)}; got {_shown(chosen)}")


def _surveylens(name: str, value) -> None:
    from scoring.pipelines.surveys.surveylens import alignment_settings

    class Probe:
        options = {name: value}

    try:
        alignment_settings(Probe())
    except ValueError as exc:
        raise ValueError(str(exc).split(": ", 1)[-1]) from None


SIMILARITY = dict(low=-1.0, high=1.0)  # a cosine similarity
FRACTION = dict(low=0.0, high=1.0)

OPTIONS: dict[str, Option] = {
    # the OpenAI-compatible backend (``transport.RetryPolicy``, ``OpenAIJudge``)
    "max_tokens": _integer(1, 1_000_000, backends=(OPENAI,)),
    "backoff_base_seconds": _number(0, 600, backends=(OPENAI,)),
    "backoff_max_seconds": _number(0, 3600, backends=(OPENAI,)),
    "max_retry_after_seconds": _number(0, 86_400, backends=(OPENAI,)),
    "call_deadline_seconds": _number(0, 86_400, backends=(OPENAI,), low_open=True),
    # the offline judge (``offline_judge.DEFAULTS``, ``offline_structure.DEFAULTS``)
    "support_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "strong_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "related_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "contradiction_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "negation_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "partial_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "passage_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "importance_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "relevance_high": _number(**SIMILARITY, backends=(OFFLINE,)),
    "relevance_low": _number(**SIMILARITY, backends=(OFFLINE,)),
    "rubric_floor": _number(**SIMILARITY, backends=(OFFLINE,)),
    "rubric_ceiling": _number(**SIMILARITY, backends=(OFFLINE,)),
    "repeat_similarity": _number(**SIMILARITY, backends=(OFFLINE,)),
    "strong_keyword_overlap": _number(**FRACTION, backends=(OFFLINE,)),
    "keyword_overlap": _number(**FRACTION, backends=(OFFLINE,)),
    "evidence_coverage": _number(**FRACTION, backends=(OFFLINE,)),
    "vital_fraction": _number(**FRACTION, backends=(OFFLINE,)),
    "tie_margin": _number(**FRACTION, backends=(OFFLINE,)),
    "keyword_count": _integer(0, 1000, backends=(OFFLINE,)),
    "nugget_count": _integer(1, 10_000, backends=(OFFLINE,)),
    "structure_floor": _number(-1000, 1000, backends=(OFFLINE,)),
    "structure_ceiling": _number(-1000, 1000, backends=(OFFLINE,)),
    # every backend: runs and pipelines
    "run_deadline_seconds": _number(0, 366 * 86_400),
    "variants": Option("custom", check=_variants),
    "surveylens_tau": Option("custom", check=_surveylens),
    "surveylens_lambda": Option("custom", check=_surveylens),
    "surveylens_tams_mode": Option("custom", check=_surveylens),
    "claim_window": _integer(0, 1000),
    "claim_max_window": _integer(0, 1000),
    "nugget_batch_size": _integer(1, 10_000),
}


def options_check(backend: str, options) -> None:
    """Refuse what the ``backend`` does not declare or cannot take: ``ValueError`` naming the option."""
    if not isinstance(options, Mapping):
        raise ValueError(f"must be a JSON object of option → value; got {_shown(options)}")
    for name, value in options.items():
        option = OPTIONS.get(name)
        if option is None:
            known = sorted(key for key, found in OPTIONS.items() if backend in found.backends)
            raise ValueError(f"{_shown(name)} is not an option of the {backend} judge; its options: {', '.join(known)}")
        if backend not in option.backends:
            raise ValueError(f"{name} is an option of the {' and '.join(option.backends)} judge only, "
                             f"not of the {backend} judge")
        if option.check is not None:
            option.check(name, value)
            continue
        if not _fits(option, value):
            raise ValueError(f"{name} must be {option.describe()}; got {_shown(value)}")


def _fits(option: Option, value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if not math.isfinite(value):
        return False
    if option.kind == "integer" and not float(value).is_integer():
        return False
    if option.low is not None and (value <= option.low if option.low_open else value < option.low):
        return False
    return option.high is None or value <= option.high


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["OPTIONS", "Option", "options_check"]
