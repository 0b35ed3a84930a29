"""Delivering outgoing webhooks: signing, the POST, retries with backoff. Which receivers hear
about which event is the app's (``annotation.services.webhooks``); each delivery is a row of a
``core.models.WebhookDeliveryBase`` subclass, created in the transaction of the change it reports.

``webhook_deliveries_enqueue`` sends ``core.deliver_webhook`` per delivery once that transaction
commits. ``webhook_deliver`` makes one attempt: it POSTs the delivery's payload as JSON with

* ``X-Studio-Event``: the event name,
* ``X-Studio-Delivery``: the delivery id (the same on every retry: receivers dedupe on it),
* ``X-Studio-Signature``: ``sha256=<hex HMAC-SHA256 of the raw body, keyed with the secret>``,

and marks the delivery delivered on a 2xx answer. The POST goes through ``core.outbound``: an
internal address (loopback, private, link-local such as the cloud metadata address) or a
non-default port is refused before anything is sent, and a redirect is an error, not followed. Otherwise it records the error and the
response code; the Celery task retries with exponential backoff and jitter
(``webhook_backoff``) until ``MAX_ATTEMPTS`` attempts, after which the delivery is failed.
Delivery is at least once (``acks_late``: a worker killed after the POST sends it again).
"""

from __future__ import annotations

import hashlib
import http.client
import hmac
import json
import logging
import random
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from .models import WebhookDeliveryBase
from .outbound import REDIRECT_STATUS, AddressRefused, outbound_request

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
TIMEOUT_SECONDS = 10
BACKOFF_BASE_SECONDS = 30
BACKOFF_MAX_SECONDS = 3600
Status = WebhookDeliveryBase.Status


def webhook_deliveries_enqueue(deliveries: Sequence[WebhookDeliveryBase]) -> None:
    """Send each delivery's task once the caller's transaction commits. Robust: the change being
    reported is committed; a broker error is logged and the rows stay pending (visible in the
    admin) rather than failing the curator's or worker's call."""
    if not deliveries:
        return
    label = deliveries[0]._meta.label_lower
    ids = [delivery.pk for delivery in deliveries]

    def enqueue() -> None:
        from .tasks import deliver_webhook  # the tasks module imports this one

        for delivery_id in ids:
            deliver_webhook.delay(label, delivery_id)

    transaction.on_commit(enqueue, robust=True)


def webhook_signature(*, secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def webhook_backoff(*, attempts: int) -> float:
    """Seconds before the next attempt after ``attempts`` failed ones: exponential, capped, plus up to 50 % jitter."""
    base = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0))
    return base + random.uniform(0, base / 2)


def webhook_deliver(*, model: type[WebhookDeliveryBase], delivery_id: int) -> WebhookDeliveryBase:
    """One attempt to POST a pending delivery (no transaction is held during the request).

    Returns the delivery: ``delivered`` after a 2xx answer; still ``pending`` after a failure
    with attempts left (the caller retries later); ``failed`` after the last attempt, or when
    the subscription was deactivated meanwhile. Delivered and failed deliveries are left alone."""
    delivery = model.objects.get(pk=delivery_id)
    if delivery.status != Status.PENDING:
        return delivery
    url, secret, active = delivery.receiver()
    if not active:
        return _record(delivery, status=Status.FAILED, error="the webhook was deactivated", code=None, count=False)
    body = json.dumps(delivery.payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "survey-eval-studio-webhooks",
        "X-Studio-Event": delivery.event,
        "X-Studio-Delivery": str(delivery.pk),
        "X-Studio-Signature": webhook_signature(secret=secret, body=body),
    }
    code, error = None, ""
    try:  # the address rule again at delivery: the name may resolve elsewhere than when it was saved
        response = outbound_request(url, method="POST", body=body, headers=headers, timeout=TIMEOUT_SECONDS,
                                    max_bytes=500, follow_redirects=False)
    except AddressRefused as exc:  # never sent; retrying cannot help
        return _record(delivery, status=Status.FAILED, error=f"refused: {exc}", code=None)
    except (http.client.HTTPException, OSError) as exc:  # refused connection, timeout, TLS
        error = f"{type(exc).__name__}: {exc}"
    else:
        code = response.status
        if not 200 <= code < 300:
            moved = " (redirects are not followed)" if code in REDIRECT_STATUS else ""
            error = f"HTTP {code}{moved}: {response.body.decode('utf-8', 'replace')}"
    if code is not None and 200 <= code < 300:
        return _record(delivery, status=Status.DELIVERED, error="", code=code)
    error = error or f"HTTP {code}"
    final = delivery.attempts + 1 >= MAX_ATTEMPTS
    logger.warning("webhook delivery %s to %s failed (attempt %s): %s", delivery.pk, url, delivery.attempts + 1, error)
    return _record(delivery, status=Status.FAILED if final else Status.PENDING, error=error, code=code)


@transaction.atomic
def _record(delivery: WebhookDeliveryBase, *, status: str, error: str, code: int | None, count: bool = True):
    locked = type(delivery).objects.select_for_update().get(pk=delivery.pk)
    if locked.status == Status.DELIVERED:  # another worker's attempt already succeeded
        return locked
    locked.attempts += 1 if count else 0
    locked.status, locked.last_error, locked.response_code = status, error[:2000], code
    if status == Status.DELIVERED:
        locked.delivered_at = timezone.now()
    locked.save(update_fields=["attempts", "status", "last_error", "response_code", "delivered_at"])
    return locked
