"""Events other apps react to. Sent inside the transaction that made them true, so a receiver's
writes commit or roll back with it (annotation's webhooks queue their deliveries this way)."""

from django.dispatch import Signal

# A run reached a final status (finished, finished with failures, failed); kwargs: ``run``.
run_finished = Signal()
