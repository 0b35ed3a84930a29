"""The watched judge of a run's job: failures counted by reason, and a stop that sends nothing more."""

import threading
import time

import pytest

from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.judges.guard import GuardedJudge, JudgeStopped
from scoring.models import JudgeConfig


class Counting(Judge):
    """Answers call ``i`` after ``delay[i]`` seconds with ``outcome[i]`` (an error text, ``"fatal: ..."``, or ok)."""

    def __init__(self, outcomes: list[str], delays: list[float] | None = None, concurrency: int = 2) -> None:
        super().__init__(JudgeConfig(name="c", backend="openai", max_concurrency=concurrency))
        self.outcomes, self.delays = outcomes, delays or [0.0] * len(outcomes)
        self.sent: list[int] = []
        self._lock = threading.Lock()

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        i = call.variables["i"]
        with self._lock:
            self.sent.append(i)
        time.sleep(self.delays[i])
        outcome = self.outcomes[i]
        if not outcome:
            return JudgeAnswer(data={"ok": True})
        fatal = outcome.startswith("fatal: ")
        return JudgeAnswer(data=None, error=outcome.removeprefix("fatal: "), extra={"fatal": True} if fatal else {})


def calls(n: int) -> list[JudgeCall]:
    return [JudgeCall("s", {"i": i}) for i in range(n)]


def test_failures_are_counted_by_reason():
    guard = GuardedJudge(Counting(["", "HTTP 500", "", "HTTP 500", "timed out"]))
    answers = dict(guard.answer_as_completed(calls(5)))
    assert len(answers) == 5 and (guard.calls, guard.failed) == (5, 3)
    assert guard.failure_summary() == "3 of 5 judge calls failed: HTTP 500 (×2); timed out (×1)"


def test_a_fatal_answer_stops_sending_but_hands_over_the_call_in_flight():
    # call 0 is refused at once; call 1 is in flight (0.3 s) when that happens; calls 2..9 are never sent
    inner = Counting(["fatal: HTTP 401: bad key", ""] + [""] * 8, delays=[0.0, 0.3] + [0.0] * 8)
    guard = GuardedJudge(inner)
    handed = []
    with pytest.raises(JudgeStopped, match="the judge endpoint refused this configuration: HTTP 401: bad key") as stop:
        for index, _ in guard.answer_as_completed(calls(10)):
            handed.append(index)
    assert stop.value.halts_run
    assert sorted(handed) == sorted(inner.sent) == [0, 1]
    with pytest.raises(JudgeStopped, match="refused this configuration: HTTP 401: bad key"):
        guard.answer(calls(1)[0])  # nothing more is sent by this job
    assert sorted(inner.sent) == [0, 1]


def test_a_run_halted_elsewhere_stops_the_job_without_halting_again():
    halted = []
    guard = GuardedJudge(Counting([""] * 6, delays=[0.05] * 6, concurrency=1), stop_reason=lambda: halted and "halted",
                         check_every=0.0)
    stream = guard.answer_as_completed(calls(6))
    next(stream)
    halted.append(True)
    with pytest.raises(JudgeStopped, match="halted") as stop:
        list(stream)
    assert not stop.value.halts_run and guard.calls < 6


def test_a_passed_run_deadline_sends_nothing():
    inner = Counting([""] * 3)
    guard = GuardedJudge(inner, deadline_at=time.time() - 1)
    assert inner.deadline_at == guard.deadline_at  # the inner judge bounds its own calls by it too
    with pytest.raises(JudgeStopped, match="the run's deadline passed") as stop:
        list(guard.answer_as_completed(calls(3)))
    assert stop.value.halts_run and inner.sent == []
