"""The one judge interface every backend implements.

A pipeline asks a judge to answer a *step* (a named question with a JSON schema and a
versioned prompt template, see ``scoring.judges.steps``) for some template variables.
The judge returns the validated JSON answer, or an error saying why there is none,
plus what the call cost. Pipelines never know which backend answered.
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JudgeCall:
    step: str
    variables: dict[str, Any]
    repeat: int = 0


@dataclass
class JudgeAnswer:
    data: dict | None
    error: str = ""
    raw: str = ""
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    attempts: int = 1
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.data is not None and not self.error


class Judge(ABC):
    """A judge bound to one stored ``JudgeConfig`` (any object with its attributes)."""

    heuristic: bool = False

    def __init__(self, config) -> None:
        self.config = config

    @abstractmethod
    def answer(self, call: JudgeCall) -> JudgeAnswer:
        """Answer one call. Never raises for a bad answer or a failed endpoint: returns an error."""

    def answer_many(self, calls: Sequence[JudgeCall]) -> list[JudgeAnswer]:
        """Answer calls concurrently, at most ``config.max_concurrency`` in flight; results in input order."""
        if len(calls) <= 1:
            return [self.answer(c) for c in calls]
        workers = max(1, min(int(getattr(self.config, "max_concurrency", 1) or 1), len(calls)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            return list(pool.map(self.answer, calls))
