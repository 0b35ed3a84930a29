"""Row locks for the assignment and labelling services.

PostgreSQL: ``SELECT ... FOR NO KEY UPDATE`` (it does not block inserts that merely reference
the row); ``skip_locked`` lets concurrent annotators pass over items another transaction is
claiming. SQLite has no row locks: the settings open every transaction with ``BEGIN
IMMEDIATE``, which serializes writers, and we refuse to run if that was changed.
"""

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import QuerySet

from ..models import AnnotationItem


def _check_serialized_writers() -> None:
    mode = connection.settings_dict.get("OPTIONS", {}).get("transaction_mode")
    if connection.vendor == "sqlite" and mode != "IMMEDIATE":
        raise ImproperlyConfigured(
            "the annotation workspace needs SQLite transactions in IMMEDIATE mode to serialize writers; "
            "set DATABASES['default']['OPTIONS']['transaction_mode'] = 'IMMEDIATE' (config.settings does this)"
        )


def item_lock(*, item_id: int) -> AnnotationItem:
    """Wait for and lock one item row (call inside a transaction)."""
    _check_serialized_writers()
    return AnnotationItem.objects.select_for_update(no_key=True).get(pk=item_id)


def first_unlocked(queryset: QuerySet) -> object | None:
    """Lock and return the first row of ``queryset`` that no other transaction holds, or None."""
    _check_serialized_writers()
    return queryset.select_for_update(skip_locked=True, no_key=True, of=("self",)).first()
