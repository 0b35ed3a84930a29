"""The one judge interface every backend implements.

A pipeline asks a judge to answer a *step* (a named question with a JSON schema and a
versioned prompt template, see ``scoring.judges.steps``) for some template variables.
The judge returns the validated JSON answer, or an error saying why there is none,
plus what the call cost. Pipelines never know which backend answered.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
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
        # A ``time.time()`` after which no request may still be on the wire (the run's deadline).
        self.deadline_at: float | None = None

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

    def answer_as_completed(self, calls: Sequence[JudgeCall], *,
                            stop: Callable[[], bool] = lambda: False) -> Iterator[tuple[int, JudgeAnswer]]:
        """``(index, answer)`` for each call as soon as it is answered, ``max_concurrency`` in flight.

        A sliding window, not chunks: when one call stalls, the others keep its neighbours'
        slots busy. ``stop()`` is asked after each answer is handed over (in the caller's
        thread); once it says yes, the calls not yet started are not sent, and the answers of
        those already in flight are still handed over, so every request made is accounted for."""
        if len(calls) <= 1:
            for index, call in enumerate(calls):
                yield index, self.answer(call)
            return
        workers = max(1, min(int(getattr(self.config, "max_concurrency", 1) or 1), len(calls)))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge")
        queued = iter(enumerate(calls))
        in_flight: dict = {}

        def send_next() -> None:  # a call is submitted only when a slot frees and stop() said no
            for index, call in queued:
                in_flight[pool.submit(self.answer, call)] = index
                return

        try:
            for _ in range(workers):
                send_next()
            stopping = False
            while in_flight:
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=in_flight.__getitem__):
                    yield in_flight.pop(future), future.result()
                    stopping = stopping or stop()
                    if not stopping:
                        send_next()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
