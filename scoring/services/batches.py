"""Batch mode of evaluation runs (``JudgeConfig.batch``): a job's judge calls become Batch API
request lines, a periodic poller submits them, reads the answers back, and runs the job again.

A job of a batch-mode run executes its pipeline step with ``scoring.judges.batch.BatchJudge``
reading from a ``JobBatchStore``. Every call the store cannot answer yet becomes a ``BatchCall``
row (queued, ``custom_id`` = the call key) and the job turns ``waiting`` (``runs.job_execute``);
the verdicts of the calls that could be answered are stored as usual.

``run_batches_poll`` (one run) does, in turn:

1. a run no longer running (cancelled, halted): its open batches are cancelled at the provider and
   its unanswered calls failed with that reason;
2. every batch in progress is asked for its state (``batches.retrieve``); once it ended, its output
   and error files are streamed line by line (``batch_files``: each line checked against its schema,
   the files within a cap tied to the batch's request lines) into its calls: answered with the reply
   text and usage, or failed with the line's error, or with what is malformed in its line; a call no
   line speaks of fails with the batch's end (failed, expired, cancelled). A batch the provider
   ended always ends here: files refused or unreadable fail its calls with the reason;
3. the queued calls are submitted as batches of at most 50,000 lines and 190 MB — when no job of the run is still pending or
   running, or the oldest has waited ``BATCH_GATHER_SECONDS`` — in two steps: the ``JudgeBatch``
   row and its calls are committed first (``submitting``), then the JSONL file is uploaded
   (``files.create(purpose="batch")``), the batch created (``batches.create``, endpoint
   ``/v1/chat/completions``, window 24h, ``metadata.studio_batch`` = the row's id) and its id
   stored in the same transaction that holds the row. A poller that finds a row still
   ``submitting`` (its submitter was killed) first looks for a batch with that metadata
   (``batches.list``) and adopts it, so a batch is not paid twice;
4. waiting jobs with no call still queued or submitted go back to pending and are enqueued: they
   execute again, answered from the store (a repair round registers a follow-up line).

Who polls: a ``scoring.poll_batches`` task, enqueued by every worker's periodic recovery
(``core.jobs``; every ``JOB_RECOVERY_SECONDS``) while some run has batch work, and at once by the
job that leaves a run with nothing but waiting jobs, or by cancelling a run. Pollers may run at
the same time: rows are taken with ``skip_locked``. ``evaluate --inline`` polls in its own process.

Every client is ``transport.make_client``'s: the key bound to the endpoint only, no redirects;
every text read from the endpoint passes through ``redact`` before it is stored.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections import defaultdict
from datetime import timedelta

import openai
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from scoring.judges.batch import BatchJudge, BatchResult
from scoring.judges.batch_output import OutputTooLarge, output_cap
from scoring.judges.endpoints import redact
from scoring.judges.transport import FATAL_STATUS, describe, make_client
from scoring.models import BatchCall, EvaluationRun, JudgeBatch, RunJob

from .batch_files import files_read, max_tokens

logger = logging.getLogger(__name__)

Call = BatchCall.Status
Batch = JudgeBatch.Status
ENDPOINT = "/v1/chat/completions"
WINDOW = "24h"
ENDED = {"completed": Batch.COMPLETED, "failed": Batch.FAILED, "expired": Batch.EXPIRED, "cancelled": Batch.CANCELLED}
WHY_UNANSWERED = {
    Batch.FAILED: "the batch failed before answering this call",
    Batch.EXPIRED: "the batch expired (24 h) before answering this call",
    Batch.CANCELLED: "the batch was cancelled before answering this call",
}
OPEN_CALLS = (Call.QUEUED, Call.SUBMITTED)
BATCH_MAX_LINES = 50_000  # OpenAI's limits of one batch
BATCH_MAX_BYTES = 190 * 1024 * 1024  # of its 200 MB
ADOPT_LOOKUP = 100  # the most recent batches searched for one a killed submitter created
WRITE_CHUNK = 1000


# --- the judge's view: one job's calls ---------------------------------------------------------


class JobBatchStore:
    """``BatchStore`` of one job: its own rows (read once), and answered rows of the same configuration
    (any job, any run) as a cache — an answer once paid for is not asked again. One query per call
    the job has no row for, one insert per call it registers."""

    def __init__(self, job: RunJob) -> None:
        self.job = job
        self.config = job.run.judge_config
        self.own = {row.custom_id: row for row in BatchCall.objects.filter(job=job).select_related("batch")}
        self.in_batch: dict[str, BatchCall] = {}  # another job's row of the same call, in a batch now

    def result(self, custom_id: str) -> BatchResult | None:
        own = self.own.get(custom_id)
        if own is not None:
            if own.status == Call.ANSWERED:
                return _result(own)
            if own.status == Call.FAILED:
                return BatchResult(error=own.error, fatal=own.error.startswith(_FATAL_PREFIXES),
                                   batch_id=own.batch.batch_id if own.batch else "")
            return None  # still queued or in a batch
        others = list(BatchCall.objects.filter(judge_config=self.config, custom_id=custom_id,
                                               status__in=(Call.ANSWERED, Call.SUBMITTED))
                      .select_related("batch").order_by("pk")[:20])
        answered = next((row for row in others if row.status == Call.ANSWERED), None)
        if answered is not None:
            found = _result(answered)
            return BatchResult(content=found.content, batch_id=found.batch_id)  # paid once, by its own job
        submitted = next((row for row in others if row.status == Call.SUBMITTED), None)
        if submitted is not None:
            self.in_batch[custom_id] = submitted
        return None

    def register(self, custom_id: str, body: dict) -> None:
        """A queued row for this job; when another job's row of the same call is in a batch now, this
        one joins that batch instead of being sent again. A row an earlier execution of this job
        registered is kept (the unique key; no error)."""
        row = BatchCall(run_id=self.job.run_id, job=self.job, judge_config=self.config, custom_id=custom_id,
                        body=body)
        sibling = self.in_batch.pop(custom_id, None)
        if sibling is not None:
            row.batch_id, row.status = sibling.batch_id, Call.SUBMITTED
        BatchCall.objects.bulk_create([row], ignore_conflicts=True)
        self.own[custom_id] = row


_FATAL_PREFIXES = tuple(f"HTTP {status}:" for status in sorted(FATAL_STATUS))


def _result(row: BatchCall) -> BatchResult:
    return BatchResult(content=row.content, tokens_in=row.tokens_in, tokens_out=row.tokens_out,
                       batch_id=row.batch.batch_id if row.batch else "")


def batch_judge_for(job: RunJob) -> BatchJudge:
    return BatchJudge(job.run.judge_config, JobBatchStore(job))


# --- what runs.py calls ------------------------------------------------------------------------


def batch_calls_retry(*, run: EvaluationRun) -> int:
    """Forget the run's failed batch calls (``run_resume``): the jobs executing again register them
    anew and only they are sent; answered calls are read back, never sent again."""
    return BatchCall.objects.filter(run=run, status=Call.FAILED).delete()[0]


def batch_work_exists() -> bool:
    """Whether any run has batch work a poller should look at (cheap: indexed reads)."""
    return (JudgeBatch.objects.filter(status__in=JudgeBatch.OPEN).exists()
            or BatchCall.objects.filter(status=Call.QUEUED).exists()
            or RunJob.objects.filter(status=RunJob.Status.WAITING).exists())


def poll_enqueue(run_id: int | None = None) -> None:
    """Ask a worker to poll now (once committed); a broker that cannot take it is only logged, as the
    periodic recovery polls anyway."""
    from scoring.tasks import poll_batches

    def send() -> None:
        try:
            poll_batches.delay(run_id)
        except Exception as exc:  # the next recovery polls
            logger.warning("could not enqueue a batch poll (%s); the next recovery polls", exc)

    transaction.on_commit(send)


def runs_recovered() -> dict[str, int]:
    """After each recovery (``core.jobs``): settled runs finalized, and a batch poll enqueued while
    some run has batch work."""
    from .run_finish import runs_settled_finalize

    counts = runs_settled_finalize()
    if batch_work_exists():
        poll_enqueue()
        counts["batch_polls"] = 1
    return counts


# --- polling -------------------------------------------------------------------------------------


def batches_poll(*, run_id: int | None = None) -> dict[str, int]:
    """``run_batches_poll`` for one run, or for every run with batch work, each in a guarded step of its
    own: whatever goes wrong polling one run (its endpoint, its files, a bug) is logged and recorded
    on that run (``POLL_FAILED`` in its ``error``, until a poll succeeds), and the others are still
    polled; nothing escapes to the task."""
    runs = EvaluationRun.objects.select_related("judge_config")
    if run_id is not None:
        runs = runs.filter(pk=run_id)
    else:
        runs = runs.filter(
            Q(Exists(JudgeBatch.objects.filter(run=OuterRef("pk"), status__in=JudgeBatch.OPEN)))
            | Q(Exists(BatchCall.objects.filter(run=OuterRef("pk"), status=Call.QUEUED)))
            | Q(Exists(RunJob.objects.filter(run=OuterRef("pk"), status=RunJob.Status.WAITING)))
        )
    totals: dict[str, int] = defaultdict(int)
    for run in list(runs.order_by("pk")):
        try:
            for key, value in run_batches_poll(run=run).items():
                totals[key] += value if isinstance(value, int) else len(value)
        except ImproperlyConfigured as exc:  # e.g. the key was unset since the run started
            from .run_finish import run_halt

            _guarded(run, lambda: run_halt(run=run, reason=str(exc)))
        except Exception as exc:  # one run's trouble is that run's, never the other runs'
            why = describe(exc) if isinstance(exc, openai.OpenAIError) else f"{type(exc).__name__}: {exc}"
            log = logger.warning if isinstance(exc, openai.OpenAIError) else logger.exception
            log("polling the batches of run %s: %s", run.pk, why)
            totals["failed"] += 1
            _guarded(run, lambda: _poll_failure_record(run, why))
        else:
            _guarded(run, lambda: EvaluationRun.objects.filter(pk=run.pk, error__startswith=POLL_FAILED)
                     .update(error=""))
    return dict(totals)


POLL_FAILED = "polling its batches failed"


def _poll_failure_record(run: EvaluationRun, why: str) -> None:
    EvaluationRun.objects.filter(pk=run.pk, status=EvaluationRun.Status.RUNNING).filter(
        Q(error="") | Q(error__startswith=POLL_FAILED)).update(
        error=f"{POLL_FAILED}: {redact(why)[:500]} (tried again at the next poll)")


def _guarded(run: EvaluationRun, step) -> None:
    """A bookkeeping step of the poller that must not stop it either."""
    try:
        with transaction.atomic():
            step()
    except Exception:
        logger.exception("recording the poll of run %s", run.pk)


def run_batches_poll(*, run: EvaluationRun, enqueue: bool = True) -> dict:
    """One look at a run's batches (the module's steps 1–4); ``released``: the job ids made pending
    again (enqueued unless ``enqueue=False``, ``evaluate --inline``)."""
    run = EvaluationRun.objects.select_related("judge_config").get(pk=run.pk)
    if run.status != EvaluationRun.Status.RUNNING:
        return {"cancelled": _run_batches_cancel(run), "released": []}
    client = None
    checked = submitted = 0
    for batch in run.batches.filter(status=Batch.IN_PROGRESS).order_by("pk"):
        client = client or make_client(run.judge_config)
        checked += _batch_check(client, batch)
    for batch in run.batches.filter(status=Batch.SUBMITTING).order_by("pk"):
        client = client or make_client(run.judge_config)
        submitted += _batch_send(client, batch, fresh=False)
    # a row that joined another job's batch just as that batch was read back: forgotten, so its job
    # reads the answer from the cache (or registers the call anew)
    run.batch_calls.filter(status=Call.SUBMITTED).exclude(batch__status__in=JudgeBatch.OPEN).delete()
    while _submit_due(run):
        batch = _calls_take(run)
        if batch is None:
            break
        client = client or make_client(run.judge_config)
        submitted += _batch_send(client, batch, fresh=True)
    return {"checked": checked, "submitted": submitted, "released": jobs_release(run=run, enqueue=enqueue)}


def _submit_due(run: EvaluationRun) -> bool:
    queued = run.batch_calls.filter(status=Call.QUEUED)
    if not queued.exists():
        return False
    executing = run.jobs.filter(status__in=(RunJob.Status.PENDING, RunJob.Status.RUNNING)).exists()
    gathered = timezone.now() - timedelta(seconds=settings.BATCH_GATHER_SECONDS)
    return not executing or queued.filter(created_at__lte=gathered).exists()


def _calls_take(run: EvaluationRun) -> JudgeBatch | None:
    """The run's queued calls, oldest first, as many as one batch may carry (``BATCH_MAX_LINES``
    distinct lines, ``BATCH_MAX_BYTES`` of JSONL: OpenAI's limits are 50,000 and 200 MB), into a new
    ``submitting`` batch row, committed before anything is sent."""
    with transaction.atomic():
        queued = (run.batch_calls.select_for_update(skip_locked=True).filter(status=Call.QUEUED).order_by("pk")
                  .values_list("pk", "custom_id", "body"))
        ids, lines, size = [], set(), 0
        for pk, custom_id, body in queued.iterator(chunk_size=1000):
            if custom_id not in lines:
                length = len(_line(custom_id, body)) + 1
                if lines and (len(lines) >= BATCH_MAX_LINES or size + length > BATCH_MAX_BYTES):
                    break
                lines.add(custom_id)
                size += length
            ids.append(pk)
        if not ids:
            return None
        batch = JudgeBatch.objects.create(run=run)
        BatchCall.objects.filter(pk__in=ids, status=Call.QUEUED).update(batch=batch, status=Call.SUBMITTED,
                                                                        updated_at=timezone.now())
    return batch


def _line(custom_id: str, body: dict) -> bytes:
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body},
                      ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def request_lines(batch: JudgeBatch):
    """The batch's JSONL input, one line per distinct ``custom_id`` of its calls, in a temporary file
    (in memory up to 8 MiB), rewound; and the number of lines."""
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)
    seen: set[str] = set()
    for custom_id, body in batch.calls.order_by("pk").values_list("custom_id", "body").iterator(chunk_size=1000):
        if custom_id in seen:
            continue
        seen.add(custom_id)
        spool.write(_line(custom_id, body) + b"\n")
    spool.seek(0)
    return spool, len(seen)


def _batch_send(client, batch: JudgeBatch, *, fresh: bool) -> int:
    """Submit a ``submitting`` row, holding it locked until its provider id is stored. ``fresh``: made
    just now by this poller (else a killed submitter may have created it at the provider: adopted)."""
    with transaction.atomic():
        batch = JudgeBatch.objects.select_for_update(skip_locked=True).filter(pk=batch.pk,
                                                                              status=Batch.SUBMITTING).first()
        if batch is None:
            return 0
        try:
            remote = None if fresh else _adopt(client, batch)
            if remote is None:
                data, batch.requests = request_lines(batch)
                with data:
                    uploaded = client.files.create(
                        file=(f"studio-batch-{batch.pk}.jsonl", data, "application/jsonl"), purpose="batch")
                remote = client.batches.create(
                    input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window=WINDOW,
                    metadata={"studio_batch": str(batch.pk), "studio_run": str(batch.run_id)},
                )
        except openai.APIStatusError as exc:
            if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
                batch.error = describe(exc)
                batch.save(update_fields=["error", "updated_at"])
                return 0  # the next poll tries again
            _batch_end(batch, Batch.FAILED, f"the endpoint refused the batch: {describe(exc)}")
            return 0
        except openai.APIConnectionError as exc:
            batch.error = describe(exc)
            batch.save(update_fields=["error", "updated_at"])
            return 0
        batch.batch_id = redact(str(remote.id))[:200]
        batch.input_file_id = redact(str(getattr(remote, "input_file_id", "") or ""))[:200]
        batch.provider_status = str(getattr(remote, "status", "") or "")[:40]
        batch.status, batch.error, batch.submitted_at = Batch.IN_PROGRESS, "", timezone.now()
        batch.save()
    logger.info("run %s: batch %s submitted (%s line(s))", batch.run_id, batch.batch_id, batch.requests)
    return 1


def _adopt(client, batch: JudgeBatch):
    """The provider's batch that carries this row's id in its metadata, if a killed submitter made one."""
    for index, remote in enumerate(client.batches.list(limit=ADOPT_LOOKUP)):
        if index >= ADOPT_LOOKUP:
            break
        if (getattr(remote, "metadata", None) or {}).get("studio_batch") == str(batch.pk):
            logger.warning("run %s: adopted batch %s that a killed submitter created", batch.run_id, remote.id)
            return remote
    return None


def _batch_check(client, batch: JudgeBatch) -> int:
    """Ask the provider about a batch in progress; once it ended, read its files into its calls.
    A batch the provider says ended always ends here too: files that cannot be read or pass the cap
    fail its calls with the reason; only a transient error reading them (connection, 408/429/5xx) is
    left for the next poll."""
    with transaction.atomic():
        batch = JudgeBatch.objects.select_for_update(skip_locked=True).filter(pk=batch.pk,
                                                                              status=Batch.IN_PROGRESS).first()
        if batch is None:
            return 0
        remote = client.batches.retrieve(batch.batch_id)
        batch.provider_status = str(getattr(remote, "status", "") or "")[:40]
        ended = ENDED.get(getattr(remote, "status", None))
        if ended is None:
            batch.save(update_fields=["provider_status", "updated_at"])
            return 0
        errors = getattr(getattr(remote, "errors", None), "data", None) or []
        why = "; ".join(redact(str(getattr(e, "message", "") or "")) for e in errors[:3])
        calls_why = ""
        cap = output_cap(batch.requests, max_tokens(batch.run.judge_config))
        try:
            with transaction.atomic():  # a file refused halfway leaves none of its answers behind
                notes = files_read(client, batch, remote, cap)
            why = "; ".join(part for part in (why, notes) if part)
        except OutputTooLarge:
            ended = Batch.FAILED
            why = calls_why = (f"refused: the batch's output and error files pass {cap / 2**20:.1f} MiB, the most "
                               f"{batch.requests} request line(s) may return; resume the run to ask again")
        except openai.APIStatusError as exc:
            if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
                raise  # transient: the next poll reads the files again
            ended, why = Batch.FAILED, f"its files could not be read: {describe(exc)}"
        except openai.APIConnectionError:
            raise
        except Exception as exc:  # the provider ended it: the run must not wait for it forever
            logger.exception("run %s: reading batch %s", batch.run_id, batch.batch_id)
            ended, why = Batch.FAILED, f"its files could not be read: {type(exc).__name__}: {str(exc)[:300]}"
        _batch_end(batch, ended, why, calls_why=calls_why)
    return 1


def _batch_end(batch: JudgeBatch, status: str, error: str = "", *, calls_why: str = "") -> None:
    """The batch ended ``status``; its calls no line answered fail with ``calls_why``, or the status's
    reason (with ``error``)."""
    batch.status, batch.finished_at = status, timezone.now()
    batch.error = redact(error)[:2000]
    batch.save()
    why = calls_why or WHY_UNANSWERED.get(status, "no line of the batch's files answered this call")
    if error and not calls_why:
        why = f"{why} ({batch.error[:300]})"
    batch.calls.filter(status__in=OPEN_CALLS).update(status=Call.FAILED, error=why, updated_at=timezone.now())


def _run_batches_cancel(run: EvaluationRun) -> int:
    """A run that stopped (cancelled, halted): its open batches cancelled at the provider, its calls
    not answered failed with the run's state."""
    cancelled = 0
    client = None
    for batch in run.batches.filter(status__in=JudgeBatch.OPEN).order_by("pk"):
        with transaction.atomic():
            batch = JudgeBatch.objects.select_for_update(skip_locked=True).filter(
                pk=batch.pk, status__in=JudgeBatch.OPEN).first()
            if batch is None:
                continue
            client = client or make_client(run.judge_config)
            remote_id = batch.batch_id or getattr(_adopt(client, batch), "id", "")
            if remote_id:
                try:
                    client.batches.cancel(remote_id)
                except openai.APIStatusError as exc:  # already ended at the provider: nothing to cancel
                    logger.warning("cancelling batch %s of run %s: %s", remote_id, run.pk, describe(exc))
            _batch_end(batch, Batch.CANCELLED, f"the run was {run.status}")
            cancelled += 1
    run.batch_calls.filter(status=Call.QUEUED).update(status=Call.FAILED, error=f"not sent: the run was {run.status}",
                                                      updated_at=timezone.now())
    return cancelled


def jobs_release(*, run: EvaluationRun, enqueue: bool = True) -> list[int]:
    """Waiting jobs of the run none of whose calls is still queued or in a batch: pending again (and
    enqueued), to execute once more, answered from the store."""
    from .runs import _enqueue_jobs

    open_calls = BatchCall.objects.filter(job=OuterRef("pk"), status__in=OPEN_CALLS)
    with transaction.atomic():
        ids = sorted(run.jobs.select_for_update(skip_locked=True).filter(status=RunJob.Status.WAITING)
                     .exclude(Exists(open_calls)).values_list("pk", flat=True))
        if not ids:
            return []
        RunJob.objects.filter(pk__in=ids, status=RunJob.Status.WAITING).update(
            status=RunJob.Status.PENDING, error="", updated_at=timezone.now())
        if enqueue:
            _enqueue_jobs(ids, run_ids=[run.pk], raise_unsent=False)
    return ids
