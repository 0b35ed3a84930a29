"""The Celery broker as the web process sees it: its address (without credentials) and whether
it answers within ``BROKER_TIMEOUT`` (``/healthz``), and the error for messages it did not take."""

import time

from django.conf import settings
from kombu.utils.url import maybe_sanitize_url


def broker_address() -> str:
    return maybe_sanitize_url(settings.CELERY_BROKER_URL)


def broker_check() -> dict:
    """Connect once, giving up after ``BROKER_TIMEOUT`` seconds; never raises."""
    from celery import current_app as app  # the app config/celery.py made current; core imports no project module

    started = time.monotonic()
    try:
        with app.connection_for_write() as connection:
            # one attempt: AMQP completes its handshake, Redis answers a PING (a silent broker times out)
            connection.ensure_connection(max_retries=0, timeout=settings.BROKER_TIMEOUT)
    except Exception as exc:  # reporting the failure is the point
        return {"ok": False, "url": broker_address(), "error": f"{type(exc).__name__}: {exc}",
                "seconds": round(time.monotonic() - started, 3)}
    return {"ok": True, "url": broker_address(), "seconds": round(time.monotonic() - started, 3)}


class BrokerUnavailable(RuntimeError):
    """The jobs are stored, but their messages could not be sent; recovery sends them later."""

    def __init__(self, message: str, *, run_ids) -> None:
        super().__init__(message)
        self.run_ids = list(run_ids)
