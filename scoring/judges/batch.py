"""The ``openai`` backend in batch mode (``JudgeConfig.batch``): the same calls, answered by the
endpoint's Batch API instead of one request each.

``BatchJudge`` is ``OpenAIJudge`` with one difference: a round of a call (the answer, then
perhaps the one repair) is not requested but looked up in the job's ``BatchStore``:

* answered: the stored reply text goes through the very parsing, validation and repair rule of
  an online answer (``OpenAIJudge.answer``), so a batch run and an online run store the same
  verdicts;
* failed (the line's error, or its batch failed, expired or was cancelled): the round ends as an
  online call whose retries ran out (``GiveUp``), naming the reason;
* not there yet: the request line (``custom_id`` = ``call_key``, the body an online request would
  carry) is handed to the store, and the call is *deferred*.

A line refused with HTTP 400 or 422 while asking for JSON mode is asked again once without it
(``<key>:plain``), as an online call is; once that works the endpoint is remembered as one without
JSON mode for the rest of the process.

A repair round goes out as a line of a follow-up batch (``<request hash>:repair``), sent once
the first reply has been read. ``answer_as_completed`` hands over every answer it has and then
raises ``BatchPending`` when some calls were deferred: the job waits for its batch and runs
again once it is answered (``scoring.services.batches``); verdicts stored meanwhile are reused.

Costs are the configuration's prices less ``batch_discount``; an answer's latency is the time
it took to read it, not the batch's turnaround (``JudgeBatch`` has that).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from .base import JudgeAnswer, JudgeCall
from .openai_judge import _NO_JSON_MODE, _NO_JSON_MODE_LOCK, OpenAIJudge
from .transport import GiveUp, client_key


JSON_MODE_REFUSED = ("HTTP 400:", "HTTP 422:")  # how a line refused with response_format reads (``batch_output.line_read``)


class BatchPending(Exception):
    """Some calls wait for a batch to answer them; their request lines are stored."""

    def __init__(self, deferred: int) -> None:
        super().__init__(f"{deferred} judge call(s) wait for a batch")
        self.deferred = deferred


@dataclass(frozen=True)
class BatchResult:
    content: str = ""
    error: str = ""
    fatal: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    batch_id: str = ""


class BatchStore(Protocol):
    def result(self, custom_id: str) -> BatchResult | None:
        """The answer (or failure) of this round, or None while there is none."""

    def register(self, custom_id: str, body: dict) -> None:
        """Keep this request line for the next batch (idempotent)."""


class BatchJudge(OpenAIJudge):
    requests_online = False  # the batch poller's client sends the batches (``scoring.services.batches``)

    def __init__(self, config, store: BatchStore) -> None:
        super().__init__(config)
        client_key(config)  # no key for OpenAI itself: the run halts now, as an online one would
        self.store = store
        self.discount = float(getattr(config, "batch_discount", 0.5) or 0.0)

    def _round(self, messages, usage, extra, deadline, *, custom_id: str) -> str:
        json_mode = self.endpoint not in _NO_JSON_MODE
        found = self._found(custom_id, messages, json_mode)
        if found.error.startswith(JSON_MODE_REFUSED):
            # as online: a line refused with JSON mode is asked again once without it (a ":plain" line;
            # also when another call has meanwhile taught this process the endpoint has no JSON mode)
            usage.requests += 1
            found = self._found(f"{custom_id}:plain", messages, False)
            json_mode = False
            if not found.error:
                with _NO_JSON_MODE_LOCK:
                    _NO_JSON_MODE.add(self.endpoint)
        usage.tokens_in += found.tokens_in
        usage.tokens_out += found.tokens_out
        usage.requests += 1
        extra["json_mode"] = json_mode
        extra["batch"] = found.batch_id
        if found.error:
            raise GiveUp(found.error, 1, fatal=found.fatal)
        return found.content

    def _found(self, custom_id: str, messages: list[dict], json_mode: bool) -> BatchResult:
        found = self.store.result(custom_id)
        if found is None:
            self.store.register(custom_id, self.request_body(messages, json_mode))
            raise BatchPending(1)
        return found

    def _cost(self, usage) -> float:
        return super()._cost(usage) * (1.0 - self.discount)

    def answer_many(self, calls: Sequence[JudgeCall]) -> list[JudgeAnswer]:
        answers, deferred = [], 0
        for call in calls:
            try:
                answers.append(self.answer(call))
            except BatchPending:
                deferred += 1
        if deferred:
            raise BatchPending(deferred)
        return answers

    def answer_as_completed(self, calls: Sequence[JudgeCall], *,
                            stop: Callable[[], bool] = lambda: False) -> Iterator[tuple[int, JudgeAnswer]]:
        """Every call answered from the store, in order; then ``BatchPending`` if any was deferred (all of
        them are registered first, so one batch carries them together)."""
        deferred = 0
        for index, call in enumerate(calls):
            try:
                answer = self.answer(call)
            except BatchPending:
                deferred += 1
                continue
            yield index, answer
            if stop():
                break
        if deferred:
            raise BatchPending(deferred)


__all__ = ["BatchJudge", "BatchPending", "BatchResult", "BatchStore"]
