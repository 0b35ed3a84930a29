"""Import our native JSONL task format (``docs/formats.md``), written by ``benchmark.exporters.native``.

This module reads a file in batches of tasks; ``native_records`` reads a line (with
``native_fields`` for one field) and ``native_writer`` stores a batch.

Every line is validated field by field (errors name the file, line and dotted field
path) and written in batches with bulk operations: the number of queries grows with
the number of batches, not with the number of tasks or items. Re-importing a file
updates what it describes instead of duplicating it:

* tasks match on (protocol, key); surveys on (source, external_id), else on arXiv id
  among surveys without an external id, else on the task's current survey when that
  has no identity either; disciplines on (taxonomy, code); bibliography entries are
  deduplicated by ``bib_entries_upsert`` (DOI, arXiv id, normalized title);
* a task's items match on their place in the list (the i-th checklist group of the
  task, the j-th item of that group, ...), prompts on their level and gold references
  on their bibliography entry. Matching rows are updated in place when they differ,
  rows the file no longer lists are deleted, new ones are created;
* every update and deletion of a stored row writes an ``import:update`` /
  ``import:delete`` revision (proposable items also get version + 1); creations do not
  (the item's provenance says where it came from);
* ``history`` entries in the file are added to the item's revisions unless an identical
  revision is already stored, so importing the same file twice adds nothing.

Everything runs in one transaction: an error anywhere leaves the database unchanged.
"""

from pathlib import Path

from django.db import transaction

from .base import ImportResult, read_jsonl
from .native_records import FileChecks, TaskLine, parse_line
from .native_writer import Writer

BATCH_TASKS = 100  # tasks written together ...
BATCH_ROWS = 20_000  # ... or fewer, when their items add up to this many rows


def import_native(path: str | Path, *, result: ImportResult) -> None:
    """Import a native JSONL file (``docs/formats.md``) in one transaction, in batches of tasks."""
    path = Path(path)
    checks = FileChecks(path.name)
    writer = Writer(file=path.name, result=result)
    batch: list[TaskLine] = []
    rows = 0
    with transaction.atomic():
        for line, data in read_jsonl(path):
            task = parse_line(data, file=path.name, line=line)
            checks.check(task)
            batch.append(task)
            rows += task.size
            if len(batch) >= BATCH_TASKS or rows >= BATCH_ROWS:
                writer.write(batch)
                batch, rows = [], 0
        if batch:
            writer.write(batch)
