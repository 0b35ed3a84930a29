"""Reading a finished batch's output and error files into its calls (``scoring.services.batches``).

The files are streamed (``files.with_streaming_response.content``), never held whole, within the
cap ``batch_output.output_cap`` gives the batch; every line is checked by ``batch_output.line_read``.
Answers are written ``WRITE_CHUNK`` lines at a time, so memory stays bounded by a chunk and the set
of the batch's call ids, whatever the file's size.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from scoring.judges.batch_output import Line, line_read, lines_split
from scoring.judges.endpoints import redact
from scoring.models import BatchCall, JudgeBatch

logger = logging.getLogger("scoring.services.batches")

Call = BatchCall.Status
WRITE_CHUNK = 1000
READ_CHUNK = 64 * 1024  # bytes read from a streamed file at a time


def max_tokens(config) -> int | None:
    value = (config.options or {}).get("max_tokens") if isinstance(config.options, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def files_read(client, batch: JudgeBatch, remote, cap: int) -> str:
    """The output and error files streamed line by line (within ``cap`` bytes together) into the
    batch's calls, ``WRITE_CHUNK`` lines at a time. A malformed line fails the call it names; a
    second line for the same call fails that call; a line naming no call of the batch is only
    counted. Returns a note on such lines for the batch's error ("" when there was none)."""
    known = set(batch.calls.values_list("custom_id", flat=True).distinct())
    budget, seen, chunk = [cap], {}, []
    malformed = strays = 0
    first_bad = ""
    for file, file_id in (("output", getattr(remote, "output_file_id", None)),
                          ("error", getattr(remote, "error_file_id", None))):
        if not file_id:
            continue
        with client.files.with_streaming_response.content(str(file_id)) as response:
            for number, raw in enumerate(lines_split(response.iter_bytes(READ_CHUNK), budget=budget), 1):
                line = line_read(number, raw, file)
                if line is None:
                    continue
                if line.malformed:
                    malformed += 1
                    first_bad = first_bad or line.error
                if line.custom_id not in known:
                    strays += not line.malformed
                    continue
                if line.custom_id in seen:
                    line = Line(number, line.custom_id, malformed=True,
                                error=f"malformed batch {file} file: line {number} repeats the call of "
                                      f"{seen[line.custom_id]}; neither answer is used")
                    malformed += 1
                    first_bad = first_bad or line.error
                seen[line.custom_id] = f"{file} file line {number}"
                chunk.append(line)
                if len(chunk) >= WRITE_CHUNK:
                    _lines_settle(batch, chunk)
                    chunk = []
    _lines_settle(batch, chunk)
    notes = []
    if malformed:
        notes.append(f"{malformed} malformed line(s), each failing only its own call (first: {first_bad})")
    if strays:
        notes.append(f"{strays} line(s) naming no call of this batch, ignored")
    if malformed or strays:
        logger.warning("run %s: batch %s: %s", batch.run_id, batch.batch_id, "; ".join(notes))
    return "; ".join(notes)


def _lines_settle(batch: JudgeBatch, lines: list[Line]) -> None:
    """The batch's calls named by ``lines`` answered or failed; a later line of a call (a repeat,
    which fails it) wins. The tokens go to the first row of a ``custom_id`` only (the request was
    sent, and paid, once)."""
    by_id = {line.custom_id: line for line in lines}
    if not by_id:
        return
    rows = list(batch.calls.filter(custom_id__in=list(by_id)).order_by("pk"))
    seen, now = set(), timezone.now()
    for row in rows:
        line = by_id[row.custom_id]
        if line.content is not None and not line.error:
            first = row.custom_id not in seen
            row.status, row.content, row.error = Call.ANSWERED, redact(line.content), ""
            row.tokens_in, row.tokens_out = (line.tokens_in, line.tokens_out) if first else (0, 0)
        else:
            row.status, row.content, row.error = Call.FAILED, "", redact(line.error)[:1000]
        seen.add(row.custom_id)
        row.updated_at = now
    BatchCall.objects.bulk_update(rows, ["status", "content", "error", "tokens_in", "tokens_out", "updated_at"],
                                  batch_size=WRITE_CHUNK)
