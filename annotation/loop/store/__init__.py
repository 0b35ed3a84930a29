"""The annotator loop's hand-written SQL: the only package of the project that reads or writes
rows with SQL written by hand (elsewhere only advisory locks and a health probe, which the ORM
has no words for): ``reads``, ``writes``, and what they share (``base``).

Everything else reads and writes through the ORM; an import-linter contract keeps this package
inside ``annotation.loop``. Each statement here is one that the ORM
cannot write as one statement, or writes measurably slower on the loop's every request, and its
docstring names its ORM twin (what it does, as the ORM would do it; the tests hold each statement
to its twin and to ``annotation.rules`` on random states) and why it is hand-written. The SQL is
plain enough for SQLite and PostgreSQL alike.

Row locks: PostgreSQL ``FOR NO KEY UPDATE`` (it does not block inserts that merely reference the
row; ``SKIP LOCKED`` lets concurrent annotators pass over items another transaction is
claiming). SQLite has no row locks: the settings open every transaction with ``BEGIN
IMMEDIATE``, which serializes writers, and the loop refuses to run if that was changed.
"""

from .base import item_lock, joined_target, kinds_remember
from .reads import claimable_items, labels_and_claims, locked_items, own_counts, task_settlement
from .writes import (
    PROPOSABLE_WRITES,
    audit_rows_insert,
    claims_insert,
    insert_rows,
    items_count,
    labels_insert,
    proposables_update_as_read,
)

__all__ = [
    "PROPOSABLE_WRITES", "audit_rows_insert", "claimable_items", "claims_insert", "insert_rows", "item_lock",
    "items_count", "joined_target", "kinds_remember", "labels_and_claims", "labels_insert", "locked_items",
    "own_counts", "proposables_update_as_read", "task_settlement",
]
