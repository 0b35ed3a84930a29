"""Row locks for the assignment and labelling services.

PostgreSQL: ``SELECT ... FOR NO KEY UPDATE`` (it does not block inserts that merely reference
the row); ``skip_locked`` lets concurrent annotators pass over items another transaction is
claiming. SQLite has no row locks: the settings open every transaction with ``BEGIN
IMMEDIATE``, which serializes writers, and we refuse to run if that was changed.
"""

from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from core.rawsql import by_pk

from ..models import AnnotationItem


def _check_serialized_writers() -> None:
    mode = connection.settings_dict.get("OPTIONS", {}).get("transaction_mode")
    if connection.vendor == "sqlite" and mode != "IMMEDIATE":
        raise ImproperlyConfigured(
            "the annotation workspace needs SQLite transactions in IMMEDIATE mode to serialize writers; "
            "set DATABASES['default']['OPTIONS']['transaction_mode'] = 'IMMEDIATE' (config.settings does this)"
        )


def item_lock(*, item_id: int) -> AnnotationItem:
    """Wait for and lock one item row (call inside a transaction); ``AnnotationItem.DoesNotExist``
    when there is none."""
    item = by_pk(AnnotationItem, item_id, lock=lock_clause())
    if item is None:
        raise AnnotationItem.DoesNotExist(f"no annotation item {item_id}")
    return item


def lock_clause(*, of: str = "", skip_locked: bool = False) -> str:
    """The end of a raw ``SELECT`` that locks the rows it returns: ``FOR NO KEY UPDATE`` on
    PostgreSQL (``of``: only the rows of that table alias; ``skip_locked``: pass over rows
    another transaction holds); nothing on SQLite, whose IMMEDIATE transaction already holds
    the database's one write lock."""
    _check_serialized_writers()
    if connection.vendor == "sqlite":
        return ""
    return " ".join(["FOR NO KEY UPDATE", *([f"OF {of}"] if of else []), *(["SKIP LOCKED"] if skip_locked else [])])
