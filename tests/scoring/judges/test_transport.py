import logging
import random
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

from scoring.judges.transport import EndpointLimiter, RetryPolicy, retry_after_seconds


def test_retry_after_in_seconds_milliseconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    http_date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"retry-after": http_date}, now=now) == 30.0
    assert retry_after_seconds({"retry-after": format_datetime(now - timedelta(seconds=5), usegmt=True)}, now=now) == 0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


def test_backoff_is_full_jitter_under_a_capped_exponential():
    policy = RetryPolicy(backoff_base=0.5, backoff_cap=4.0)
    rng = random.Random(1)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (8, 4.0)]:
        waits = [policy.backoff(attempt, rng) for _ in range(200)]
        assert 0 <= min(waits) and max(waits) <= ceiling
        assert max(waits) > 0.8 * ceiling  # spread over the whole range, not a fixed delay


def test_the_endpoint_limiter_applies_each_callers_limit_to_the_shared_count():
    limiter = EndpointLimiter()
    peak, times, lock = [0], {}, threading.Lock()

    def wide():
        with limiter.slot("http://endpoint", 4):
            with lock:
                peak[0] = max(peak[0], limiter.in_flight("http://endpoint"))
            time.sleep(0.2)
            with lock:
                times["wide_released"] = time.monotonic()  # the last wide call to finish writes last

    def narrow():
        with limiter.slot("http://endpoint", 1):  # waits while anything is in flight at the endpoint
            times["narrow_entered"] = time.monotonic()

    threads = [threading.Thread(target=wide) for _ in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    late = threading.Thread(target=narrow)
    late.start()
    for t in [*threads, late]:
        t.join()
    assert peak[0] == 4
    assert times["narrow_entered"] >= times["wide_released"]
    assert limiter.in_flight("http://endpoint") == 0


def test_the_endpoint_limiter_hands_slots_to_waiters_in_arrival_order():
    limiter = EndpointLimiter()
    order, entered = [], threading.Event()
    release = threading.Event()

    def holder():
        with limiter.slot("http://endpoint", 1):
            entered.set()
            release.wait(5)

    def waiter(n):
        with limiter.slot("http://endpoint", 1):
            order.append(n)

    first = threading.Thread(target=holder)
    first.start()
    entered.wait(5)
    waiters = []
    for n in range(5):
        t = threading.Thread(target=waiter, args=(n,))
        t.start()
        waiters.append(t)
        while len(limiter._waiting["http://endpoint"]) < n + 1:  # queued before the next one arrives
            time.sleep(0.001)
    release.set()
    for t in [first, *waiters]:
        t.join(5)
    assert order == [0, 1, 2, 3, 4]
    assert limiter.in_flight("http://endpoint") == 0


def test_an_unreadable_retry_after_is_ignored_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="scoring.judges.transport"):
        assert retry_after_seconds({"retry-after": "soon"}) is None
        assert retry_after_seconds({"retry-after-ms": "later", "retry-after": "3"}) == 3.0
    assert [r.getMessage() for r in caplog.records] == [
        "ignoring an unreadable Retry-After header 'soon': backing off on our own schedule",
        "ignoring an unreadable retry-after-ms header 'later'",
    ]
