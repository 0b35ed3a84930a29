"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint answers the steps.

One call per ``JudgeCall``: the shared system prompt (with the step's JSON Schema) and
the step's versioned prompt, ``response_format={"type": "json_object"}`` and the
configured temperature. An endpoint that rejects ``response_format`` (HTTP 400/422)
is asked again without it once; when that works the endpoint is remembered as one
without JSON mode for the rest of the process.

A reply that is not a JSON object, or does not fit the schema (including every
requested id answered exactly once), gets exactly one repair round: the reply and
the problems are sent back asking for a corrected object. A second bad reply makes
the answer an error naming the problems — except for steps that judge a list of items
whose reply still holds that list: then the answer keeps it (the problems in
``extra["answer_problems"]``) and the pipeline fails only the items that are wrong, keeping
the valid ones. Transport failures are retried as ``scoring.judges.transport`` describes;
when retries run out the answer is an error, never an exception; ``extra["fatal"]`` marks an
error the endpoint gives every call of this configuration (401, 403, 404).

Each call ends by its deadline: ``call_deadline_seconds`` (300) from its start, or the
judge's ``deadline_at`` (the run's deadline) when that comes first.

Every answer carries tokens (from ``usage``, summed over all requests of the call),
wall-clock latency, the estimated cost from the configuration's prices per million
tokens, and the number of requests made; ``extra`` holds ``request_hash``,
``prompt_version``, ``retries``, ``repairs`` and ``json_mode``.

Options (``JudgeConfig.options``): ``backoff_base_seconds`` (0.5),
``backoff_max_seconds`` (30), ``max_retry_after_seconds`` (120), ``call_deadline_seconds``
(300), ``max_tokens`` (unset: the server's default).
"""

import json
import logging
import random
import re
import threading
import time

import openai
from django.conf import settings

from .base import Judge, JudgeAnswer, JudgeCall
from .endpoints import redact
from .steps import (
    StepError, get_step, render_messages, repair_message, request_hash, validate_answer, validate_variables,
)
from .transport import GiveUp, RetryPolicy, call_with_retries, endpoint_url, make_client

logger = logging.getLogger(__name__)
_NO_JSON_MODE: set[str] = set()
_NO_JSON_MODE_LOCK = threading.Lock()
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_json_object(content: str) -> tuple[dict | None, str]:
    """The JSON object in a reply (a surrounding markdown fence is tolerated), or the reason there is none."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    if not text:
        return None, "the reply was empty"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"the reply is not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
    if not isinstance(data, dict):
        return None, f"the reply is JSON but not an object (got {type(data).__name__})"
    return data, ""


def call_key(request_hash: str, round_: str = "answer") -> str:
    """The key of one round of a call: its request hash, with ``:repair`` for the repair round
    (a batch request line's ``custom_id``)."""
    return request_hash if round_ == "answer" else f"{request_hash}:{round_}"


def _holds_item_list(step_name: str, data) -> bool:
    """An answer to a step that judges a list of items that does hold that list (its entries may be wrong)."""
    step = get_step(step_name)
    return bool(step.items) and isinstance(data, dict) and isinstance(data.get(step.items[1]), list)


class _Usage:
    def __init__(self) -> None:
        self.tokens_in = 0
        self.tokens_out = 0
        self.requests = 0
        self.retries = 0

    def add(self, response, requests: int) -> None:
        usage = getattr(response, "usage", None)
        self.tokens_in += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.tokens_out += int(getattr(usage, "completion_tokens", 0) or 0)
        self.requests += requests
        self.retries += requests - 1


class OpenAIJudge(Judge):
    heuristic = False
    requests_online = True  # the batch judge reads its answers instead, and needs no client of its own

    def __init__(self, config) -> None:
        super().__init__(config)
        self.endpoint = endpoint_url(config)
        self.model = getattr(config, "model", "") or settings.JUDGE_MODEL
        self.prompt_version = getattr(config, "prompt_version", "") or "v1"
        self.temperature = float(getattr(config, "temperature", 0.0) or 0.0)
        self.limit = int(getattr(config, "max_concurrency", 1) or 1)
        self.policy = RetryPolicy.from_config(config)
        self.options = getattr(config, "options", None) or {}
        self.client = make_client(config) if self.requests_online else None
        self._rng = random.Random()

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        started = time.perf_counter()
        usage = _Usage()
        deadline = time.monotonic() + self.policy.call_deadline
        if self.deadline_at is not None:
            deadline = min(deadline, time.monotonic() + (self.deadline_at - time.time()))
        extra = {"prompt_version": self.prompt_version, "retries": 0, "repairs": 0, "json_mode": None,
                 "request_hash": request_hash(model=self.model, prompt_version=self.prompt_version, step=call.step,
                                              variables=call.variables, repeat=call.repeat)}

        def finish(data: dict | None, error: str = "", raw: str = "") -> JudgeAnswer:
            extra["retries"] = usage.retries
            return JudgeAnswer(  # the endpoint's own words are redacted before anything can store them
                data=None if error else data, error=redact(error), raw=redact(raw), model=self.model,
                tokens_in=usage.tokens_in, tokens_out=usage.tokens_out,
                latency_ms=(time.perf_counter() - started) * 1000.0, cost_usd=self._cost(usage),
                attempts=usage.requests, extra=extra,  # 0 when no request was sent (a deadline)
            )

        try:
            get_step(call.step)
            problems = validate_variables(call.step, call.variables)
            if problems:
                return finish(None, "invalid variables: " + "; ".join(problems))
            messages = render_messages(call.step, call.variables, self.prompt_version)
        except StepError as error:
            return finish(None, str(error))

        content = ""
        for round_ in ("answer", "repair"):
            try:  # redacted before it is parsed: nothing read from the answer can carry the key
                content = redact(self._round(messages, usage, extra, deadline,
                                             custom_id=call_key(extra["request_hash"], round_)))
            except GiveUp as failure:
                if failure.fatal:
                    extra["fatal"] = True
                return finish(None, failure.reason, content)
            data, problem = parse_json_object(content)
            problems = [problem] if problem else validate_answer(call.step, data, call.variables)
            if not problems:
                return finish(data, raw=content)
            if round_ == "repair":
                if _holds_item_list(call.step, data):
                    extra["answer_problems"] = problems
                    return finish(data, raw=content)
                return finish(None, "invalid answer after one repair: " + "; ".join(problems), content)
            extra["repairs"] = 1
            extra["first_problems"] = problems
            messages = [*messages, {"role": "assistant", "content": content},
                        repair_message(problems, self.prompt_version)]
        raise AssertionError("unreachable")

    def _round(self, messages: list[dict], usage: _Usage, extra: dict, deadline: float, *, custom_id: str) -> str:
        """One round's reply text (the answer, then perhaps the repair); ``custom_id`` names the round
        (``call_key``). Online: a completion now; the batch judge (``scoring.judges.batch``) reads it
        from the batch that answered it instead."""
        return self._complete(messages, usage, extra, deadline)

    def _complete(self, messages: list[dict], usage: _Usage, extra: dict, deadline: float) -> str:
        """One completion with retries; falls back to plain text mode if the endpoint rejects JSON mode."""
        json_mode = self.endpoint not in _NO_JSON_MODE
        try:
            response, requests = self._request(messages, json_mode, deadline)
        except GiveUp as failure:
            usage.requests += failure.attempts
            usage.retries += failure.attempts - 1
            cause = failure.__cause__
            if not (json_mode and isinstance(cause, openai.APIStatusError) and cause.status_code in (400, 422)):
                raise
            try:
                response, requests = self._request(messages, False, deadline)
            except GiveUp as second:
                usage.requests += second.attempts
                usage.retries += second.attempts - 1
                raise GiveUp(f"{failure.reason} (with JSON mode); without JSON mode: {second.reason}",
                             second.attempts, fatal=second.fatal) from second
            json_mode = False
            with _NO_JSON_MODE_LOCK:
                _NO_JSON_MODE.add(self.endpoint)
            logger.warning("%s refused JSON mode (HTTP %s): its answers are asked for as plain text from now on",
                           redact(self.endpoint), cause.status_code)
        usage.add(response, requests)
        extra["json_mode"] = json_mode
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise GiveUp("the endpoint returned no choices", requests)
        return choices[0].message.content or ""

    def request_body(self, messages: list[dict], json_mode: bool) -> dict:
        """What a chat completion is asked with (online, and as a batch request line's body)."""
        kwargs = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if self.options.get("max_tokens"):
            kwargs["max_tokens"] = int(self.options["max_tokens"])
        return kwargs

    def _request(self, messages: list[dict], json_mode: bool, deadline: float):
        kwargs = self.request_body(messages, json_mode)
        return call_with_retries(lambda timeout: self.client.chat.completions.create(**kwargs, timeout=timeout),
                                 policy=self.policy, endpoint=self.endpoint, limit=self.limit, rng=self._rng,
                                 deadline=deadline)

    def _cost(self, usage: _Usage) -> float:
        price_in = float(getattr(self.config, "price_input_per_million", 0.0) or 0.0)
        price_out = float(getattr(self.config, "price_output_per_million", 0.0) or 0.0)
        return (usage.tokens_in * price_in + usage.tokens_out * price_out) / 1_000_000


__all__ = ["OpenAIJudge", "call_key", "parse_json_object"]
