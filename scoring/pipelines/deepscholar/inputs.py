"""What every DeepScholar step reads: the judge configuration's options and the task's query and exemplar."""

from __future__ import annotations

from benchmark.models import ReviewStatus

DEFAULT_CLAIM_WINDOW = 1
DEFAULT_MAX_WINDOW = 5


def int_option(config, name: str, default: int, low: int) -> int:
    """A non-negative integer option of the judge configuration; a bad value is an error naming it."""
    value = (getattr(config, "options", None) or {}).get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"judge configuration option {name!r} must be an integer >= {low}; got {value!r}")
    return value


def claim_windows(config) -> tuple[int, int]:
    """(the reported window w, the largest window asked for) from the configuration's options."""
    window = int_option(config, "claim_window", DEFAULT_CLAIM_WINDOW, 0)
    largest = max(window, int_option(config, "claim_max_window", DEFAULT_MAX_WINDOW, 0))
    return window, largest


def query_text(task) -> str:
    """The paper the related work is written for: its title and abstract (the benchmark's query)."""
    survey = task.survey
    if survey.abstract.strip():
        return f"{survey.title}\n\n{survey.abstract.strip()}".strip()
    prompt = task.prompts.exclude(review_status=ReviewStatus.REJECTED).order_by("level").first()
    return prompt.text if prompt else survey.title


def exemplar_text(task) -> str:
    return (task.survey.full_text or "").strip()
