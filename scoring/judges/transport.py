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
same endpoint allows eight. A request then also takes one of the endpoint's slots shared
by every process and machine (``scoring.judges.slots``), so the limit holds however many
workers run.

A call has an overall deadline (``RetryPolicy.call_deadline``, option
``call_deadline_seconds``, and the judge's ``deadline_at`` when its run has one): each
attempt's timeout is cut to the time left, and no retry starts (or waits) past it.

HTTP 401, 403 and 404 (a wrong key, a forbidden or unknown model) are *fatal*: retrying
cannot help, and the judge reports them so that the run stops instead of sending every
remaining call. Error texts pass through ``endpoints.redact``; the key a request carries is
the one the settings bind to its URL (``endpoints.key_for``), never another, and only to URLs
under that exact base URL: redirects are not followed, and a request hook drops the key from
any request outside it (``endpoints.url_is_under``).
"""

import logging
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
from django.core.exceptions import ImproperlyConfigured

from .endpoints import KEY_HEADERS, OPENAI_URL, default_url, key_for, normalize_url, redact, url_is_under
from .slots import SHARED_SLOTS, SlotTimeout

T = TypeVar("T")
logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
FATAL_STATUS = frozenset({401, 403, 404})  # wrong key, forbidden, unknown model: the run should stop


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
    def slot(self, endpoint: str, limit: int, timeout: float | None = None):
        """Wait (at most ``timeout`` seconds, then ``SlotTimeout``) for room under ``limit``."""
        waiter = _Waiter(max(1, int(limit)))
        with self._lock:
            self._in_flight.setdefault(endpoint, 0)
            self._waiting.setdefault(endpoint, deque()).append(waiter)
            self._grant(endpoint)
        try:
            # whoever granted the slot counted this call in flight
            if not waiter.granted.wait(None if timeout is None else max(0.0, timeout)):
                raise SlotTimeout(f"no free slot for {endpoint} within {timeout:.1f} s")
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
    timeout: float = 120.0  # one attempt
    call_deadline: float = 300.0  # every attempt, wait and backoff of one call together

    @classmethod
    def from_config(cls, config) -> "RetryPolicy":
        options = getattr(config, "options", None) or {}
        return cls(
            max_retries=int(getattr(config, "max_retries", 5)),
            backoff_base=float(options.get("backoff_base_seconds", 0.5)),
            backoff_cap=float(options.get("backoff_max_seconds", 30.0)),
            max_retry_after=float(options.get("max_retry_after_seconds", 120.0)),
            timeout=float(getattr(config, "timeout_seconds", 120.0) or 120.0),
            call_deadline=float(options.get("call_deadline_seconds", 300.0)),
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
            logger.warning("ignoring an unreadable retry-after-ms header %r", millis[:80])
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass  # not seconds: an HTTP date, tried next
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        logger.warning("ignoring an unreadable Retry-After header %r: backing off on our own schedule", value[:80])
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


class GiveUp(Exception):
    """The call failed for good; ``attempts`` requests were made. ``fatal``: the endpoint refused the
    configuration itself (key, permission, model), so every other call would fail the same way."""

    def __init__(self, reason: str, attempts: int, *, fatal: bool = False) -> None:
        super().__init__(reason)
        self.reason = redact(reason)
        self.attempts = attempts
        self.fatal = fatal


def describe(error: Exception) -> str:
    """A short, redacted account of a failed request."""
    if isinstance(error, openai.APIStatusError):
        text = f"HTTP {error.status_code}: {error.message}"
    elif isinstance(error, openai.APITimeoutError):
        text = "request timed out"
    elif isinstance(error, openai.APIConnectionError):
        text = f"connection error: {error.__cause__ or error}"
    else:
        text = f"{type(error).__name__}: {error}"
    return redact(text)


def is_fatal(error: Exception) -> bool:
    return isinstance(error, openai.APIStatusError) and error.status_code in FATAL_STATUS


def is_retryable(error: Exception) -> bool:
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRYABLE_STATUS
    return isinstance(error, openai.APIConnectionError)  # includes APITimeoutError


def call_with_retries(
    request: Callable[[float], T], *, policy: RetryPolicy, endpoint: str, limit: int, rng: random.Random,
    sleep: Callable[[float], None] = time.sleep, deadline: float | None = None,
) -> tuple[T, int]:
    """Run ``request(timeout)`` inside an endpoint slot until it succeeds: (result, requests made) or ``GiveUp``.

    The slot is held only while the request is on the wire, never while backing off. The call
    ends by ``deadline`` (a ``time.monotonic()`` value; default ``policy.call_deadline`` from now):
    each attempt's timeout is cut to the time left, and a wait that would pass it is not made.
    """
    own = time.monotonic() + policy.call_deadline
    deadline = own if deadline is None else min(own, deadline)
    attempt, last = 0, "no request was sent"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise GiveUp(f"the call's deadline passed after {attempt} attempt(s); last error: {last}", attempt)
        try:
            with ENDPOINTS.slot(endpoint, limit, timeout=left), SHARED_SLOTS.slot(endpoint, limit, deadline=deadline):
                timeout = min(policy.timeout, deadline - time.monotonic())
                if timeout <= 0:
                    raise SlotTimeout("no time left once a slot was free")
                return request(timeout), attempt + 1
        except SlotTimeout:
            raise GiveUp(f"the call's deadline passed waiting for a free slot after {attempt} attempt(s); "
                         f"last error: {last}", attempt) from None
        except openai.OpenAIError as error:
            last = describe(error)
            if is_fatal(error):
                raise GiveUp(last, attempt + 1, fatal=True) from error
            if not is_retryable(error):
                raise GiveUp(last, attempt + 1) from error
            if attempt >= policy.max_retries:
                raise GiveUp(f"gave up after {attempt + 1} attempts; last error: {last}", attempt + 1) from error
            headers = error.response.headers if isinstance(error, openai.APIStatusError) else None
            asked = retry_after_seconds(headers)
            if asked is not None and asked > policy.max_retry_after:
                raise GiveUp(f"{last}; the server asked to retry after {asked:.0f} s, longer than "
                             f"max_retry_after_seconds={policy.max_retry_after:.0f}", attempt + 1) from error
            wait = asked if asked is not None else policy.backoff(attempt, rng)
            if time.monotonic() + wait >= deadline:
                raise GiveUp(f"{last}; the next attempt (in {wait:.1f} s) would start past the call's deadline "
                             f"of {policy.call_deadline:.0f} s", attempt + 1) from error
            sleep(wait)
            attempt += 1


def endpoint_url(config) -> str:
    """The endpoint a configuration talks to: its own base_url, else settings.OPENAI_BASE_URL, else OpenAI's."""
    return normalize_url(getattr(config, "base_url", "")) or default_url()


def client_key(config) -> str:
    """The key a client for the configuration's endpoint carries (``key_for``); ``ImproperlyConfigured``
    when OpenAI itself is the endpoint and no key is set."""
    base_url = endpoint_url(config)
    api_key = key_for(base_url)
    if not api_key:
        if base_url.startswith(OPENAI_URL):
            raise ImproperlyConfigured(
                "OPENAI_API_KEY is not set: set it, or point the judge configuration's base_url "
                "(or OPENAI_BASE_URL) at an OpenAI-compatible server that needs no key"
            )
        api_key = "no-key"  # not a secret: the SDK insists on some key; keyless servers ignore it
    return api_key


def make_client(config) -> openai.OpenAI:
    """An SDK client for the configuration's endpoint with the SDK's own retries disabled. It carries
    the key the settings bind to that endpoint, and no key at all for any other URL."""
    base_url = endpoint_url(config)
    api_key = client_key(config)
    timeout = float(getattr(config, "timeout_seconds", 120.0))
    # Redirects are not followed (the SDK's client follows them, and httpx keeps the key on a
    # same-origin one): a 3xx is an error. The request hook is the rule itself: a request to any
    # URL outside the endpoint's base URL leaves without the key.
    http_client = openai.DefaultHttpxClient(timeout=timeout, follow_redirects=False,
                                            event_hooks={"request": [_key_only_under(base_url)]})
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout, http_client=http_client)


def _key_only_under(base_url: str) -> Callable:
    """An httpx request hook dropping the key from any request whose URL is not under ``base_url``."""

    def hook(request) -> None:
        if not url_is_under(str(request.url), base_url):
            for header in [name for name in request.headers if name.lower() in KEY_HEADERS]:
                del request.headers[header]

    return hook
