"""The judge a run's job talks to: the configured judge, watched.

``GuardedJudge`` passes every call to the judge it wraps and keeps the facts the run must tell:
how many calls were answered and which failed, grouped by reason. It stops the job
(``JudgeStopped``) before sending anything more when

* an answer was *fatal* (``extra["fatal"]``: the endpoint refused the key, the permission or the
  model, so every further call would fail the same way) — the run should stop with that reason;
* the run's deadline (``deadline_at``, a ``time.time()``) has passed — likewise;
* ``stop_reason()`` says the run was stopped elsewhere (another worker halted it, a curator
  cancelled it); it is asked from the job's own thread, at most every ``check_every`` seconds.

Pure Python: the caller brings ``stop_reason`` (a database read in ``scoring.services.runs``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone

from .base import Judge, JudgeAnswer, JudgeCall


class JudgeStopped(Exception):
    """The job must stop sending calls. ``halts_run``: the reason applies to the whole run."""

    def __init__(self, reason: str, *, halts_run: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.halts_run = halts_run


class GuardedJudge(Judge):
    def __init__(self, inner: Judge, *, stop_reason: Callable[[], str] = lambda: "",
                 deadline_at: float | None = None, check_every: float = 1.0) -> None:
        super().__init__(inner.config)
        self.inner = inner
        self.heuristic = inner.heuristic
        self.deadline_at = inner.deadline_at = deadline_at
        self.stop_reason = stop_reason
        self.check_every = check_every
        self.calls = 0
        self.failures: Counter[str] = Counter()
        self.fatal = ""
        self._checked = float("-inf")

    # --- the judge interface ---------------------------------------------------------------------

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        self._check()
        return self._note(self.inner.answer(call))

    def answer_many(self, calls: Sequence[JudgeCall]) -> list[JudgeAnswer]:
        self._check()
        return [self._note(answer) for answer in self.inner.answer_many(calls)]

    def answer_as_completed(self, calls: Sequence[JudgeCall], *,
                            stop: Callable[[], bool] = lambda: False) -> Iterator[tuple[int, JudgeAnswer]]:
        """The inner judge's stream, told to send nothing more once a check fails; the answers of calls
        already in flight are still handed over (and stored), then ``JudgeStopped`` is raised."""
        self._check()
        stopped: list[JudgeStopped] = []

        def should_stop() -> bool:
            if not stopped:
                try:
                    self._check()
                except JudgeStopped as reason:
                    stopped.append(reason)
            return bool(stopped) or stop()

        for index, answer in self.inner.answer_as_completed(calls, stop=should_stop):
            yield index, self._note(answer)
        if stopped:
            raise stopped[0]

    # --- what happened ---------------------------------------------------------------------------

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def failure_summary(self, limit: int = 5) -> str:
        """``"k of n judge calls failed: reason (×c); ..."``, the most frequent reasons first."""
        reasons = "; ".join(f"{reason} (×{n})" for reason, n in self.failures.most_common(limit))
        more = len(self.failures) - limit
        tail = f"; {more} other reasons" if more > 0 else ""
        return f"{self.failed} of {self.calls} judge calls failed: {reasons}{tail}"

    def _note(self, answer: JudgeAnswer) -> JudgeAnswer:
        self.calls += 1
        if not answer.ok:
            self.failures[answer.error or "no answer"] += 1
            if answer.extra.get("fatal") and not self.fatal:
                self.fatal = answer.error
        return answer

    def _check(self) -> None:
        if self.fatal:
            raise JudgeStopped(f"the judge endpoint refused this configuration: {self.fatal}", halts_run=True)
        if self.deadline_at is not None and time.time() >= self.deadline_at:
            when = datetime.fromtimestamp(self.deadline_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            raise JudgeStopped(f"the run's deadline passed ({when})", halts_run=True)
        now = time.monotonic()
        if now - self._checked >= self.check_every:
            self._checked = now
            reason = self.stop_reason()
            if reason:
                raise JudgeStopped(reason, halts_run=False)
