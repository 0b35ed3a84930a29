"""Talking to OpenAI-compatible endpoints: one client per endpoint, our own retries, a shared concurrency limit.

The SDK's own retries are switched off (``max_retries=0``) so that every retry is
ours, counted and bounded by ``JudgeConfig.max_retries``. Retried: HTTP 408, 429 and
5xx, connection errors and timeouts. A ``Retry-After`` (or ``retry-after-ms``) header
is honoured — seconds or an HTTP date — unless it asks for longer than
``max_retry_after_seconds``, in which case we stop and say so; without one we wait
with exponential backoff and full jitter: ``uniform(0, min(cap, base · 2^attempt))``.

Calls in flight are limited per endpoint across every judge and embedder of the
process (``ENDPOINTS``): each caller brings its own limit, and waits while the
endpoint already has that many calls in flight, so a configuration with
``max_concurrency=2`` never adds a third call even when another configuration on the
same endpoint allows eight.
"""

import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TypeVar

import openai
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))


class _Waiter:
    __slots__ = ("limit", "granted")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.granted = threading.Event()


class EndpointLimiter:
    """Counts calls in flight per endpoint; ``slot(endpoint, limit)`` waits for room under the caller's limit.

    Waiters queue in arrival order and a released slot is handed to the first waiter whose
    limit has room, waking only that thread: with dozens of threads waiting on a slow
    endpoint, waking them all on every release (a condition's ``notify_all``) costs more CPU
    than the calls themselves and delays the one thread that gets the slot.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[_Waiter]] = {}

    @contextmanager
    def slot(self, endpoint: str, limit: int):
        waiter = _Waiter(max(1, int(limit)))
        with self._lock:
            self._in_flight.setdefault(endpoint, 0)
            self._waiting.setdefault(endpoint, deque()).append(waiter)
            self._grant(endpoint)
        try:
            waiter.granted.wait()  # whoever granted the slot counted this call in flight
        except BaseException:  # interrupted while waiting (a time limit, Ctrl-C): leave no trace
            with self._lock:
                if waiter in self._waiting[endpoint]:
                    self._waiting[endpoint].remove(waiter)
                    raise
            self._release(endpoint)
            raise
        try:
            yield
        finally:
            self._release(endpoint)

    def _release(self, endpoint: str) -> None:
        with self._lock:
            self._in_flight[endpoint] -= 1
            self._grant(endpoint)

    def _grant(self, endpoint: str) -> None:
        """Hand free room to waiters in arrival order, skipping those whose own limit is still full."""
        queue = self._waiting[endpoint]
        for waiter in list(queue):
            if self._in_flight[endpoint] < waiter.limit:
                queue.remove(waiter)
                self._in_flight[endpoint] += 1
                waiter.granted.set()

    def in_flight(self, endpoint: str) -> int:
        with self._lock:
            return self._in_flight.get(endpoint, 0)


ENDPOINTS = EndpointLimiter()


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    max_retry_after: float = 120.0

    @classmethod
    def from_config(cls, config) -> "RetryPolicy":
        options = getattr(config, "options", None) or {}
        return cls(
            max_retries=int(getattr(config, "max_retries", 5)),
            backoff_base=float(options.get("backoff_base_seconds", 0.5)),
            backoff_cap=float(options.get("backoff_max_seconds", 30.0)),
            max_retry_after=float(options.get("max_retry_after_seconds", 120.0)),
        )

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: a uniform wait between 0 and the capped exponential ceiling."""
        return rng.uniform(0.0, min(self.backoff_cap, self.backoff_base * (2 ** attempt)))


def retry_after_seconds(headers: Mapping[str, str] | None, *, now: datetime | None = None) -> float | None:
    """The wait a server asked for: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


class GiveUp(Exception):
    """The call failed for good; ``attempts`` requests were made."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


def describe(error: Exception) -> str:
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}: {error.message}"
    if isinstance(error, openai.APITimeoutError):
        return "request timed out"
    if isinstance(error, openai.APIConnectionError):
        return f"connection error: {error.__cause__ or error}"
    return f"{type(error).__name__}: {error}"


def is_retryable(error: Exception) -> bool:
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRYABLE_STATUS
    return isinstance(error, openai.APIConnectionError)  # includes APITimeoutError


def call_with_retries(
    request: Callable[[], T], *, policy: RetryPolicy, endpoint: str, limit: int, rng: random.Random,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, int]:
    """Run ``request`` inside an endpoint slot until it succeeds: (result, requests made) or ``GiveUp``.

    The slot is held only while the request is on the wire, never while backing off.
    """
    attempt = 0
    while True:
        try:
            with ENDPOINTS.slot(endpoint, limit):
                return request(), attempt + 1
        except openai.OpenAIError as error:
            if not is_retryable(error):
                raise GiveUp(describe(error), attempt + 1) from error
            if attempt >= policy.max_retries:
                raise GiveUp(f"gave up after {attempt + 1} attempts; last error: {describe(error)}",
                             attempt + 1) from error
            headers = error.response.headers if isinstance(error, openai.APIStatusError) else None
            asked = retry_after_seconds(headers)
            if asked is not None and asked > policy.max_retry_after:
                raise GiveUp(f"{describe(error)}; the server asked to retry after {asked:.0f} s, longer than "
                             f"max_retry_after_seconds={policy.max_retry_after:.0f}", attempt + 1) from error
            sleep(asked if asked is not None else policy.backoff(attempt, rng))
            attempt += 1


def endpoint_url(config) -> str:
    """The endpoint a configuration talks to: its own base_url, else settings.OPENAI_BASE_URL, else OpenAI's."""
    return (getattr(config, "base_url", "") or settings.OPENAI_BASE_URL or "https://api.openai.com/v1").rstrip("/")


def make_client(config) -> openai.OpenAI:
    """An SDK client for the configuration's endpoint with the SDK's own retries disabled."""
    base_url = endpoint_url(config)
    key_env = getattr(config, "api_key_env", "")
    api_key = os.environ.get(key_env, "") if key_env else settings.OPENAI_API_KEY
    if not api_key:
        if base_url.startswith("https://api.openai.com"):
            raise ImproperlyConfigured(
                f"{key_env or 'OPENAI_API_KEY'} is not set: set it, or point the judge configuration's base_url "
                "(or OPENAI_BASE_URL) at an OpenAI-compatible server that needs no key"
            )
        api_key = "no-key"  # local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) ignore the key
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                         timeout=float(getattr(config, "timeout_seconds", 120.0)))
