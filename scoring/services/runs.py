"""Evaluation runs: create, start, cancel, resume, execute one job (how a run ends — finalize,
halt, rescore — is ``scoring.services.run_finish``).

A run fans out into ``RunJob`` rows, one per (report, pipeline step). Each job is a
Celery task (``scoring.tasks.execute_job``) enqueued after the transaction commits;
jobs never run in the web process.

Claim and recovery are those of every background job (``core.jobs``): ``job_execute`` claims
a pending job of a running run with one conditional UPDATE that records the worker, so two
messages for one job execute it once. A job left ``running`` by a killed worker (or by a task
that ended without settling it) is put back to pending and enqueued again by
``core.jobs.jobs_recover`` (when a worker starts and every ``JOB_RECOVERY_SECONDS`` in each
worker) or by ``run_resume``; when a worker is found lost, the pending jobs are enqueued again
too, as the filesystem broker deletes a message when it hands it out. Whatever a job stored
before the kill stays: verdicts are committed as each judge answer arrives and are reused,
never duplicated, when the job runs again.

Sending. A run whose jobs are being sent is marked ``jobs_unsent`` in the transaction
that makes them pending, and unmarked only once every message is on the broker. When
the broker cannot be reached the caller gets ``BrokerUnavailable`` (the run stays
running, its jobs pending), and recovery sends them again: at every recovery for a marked
run (the ``unsent`` of the job kind registered in ``scoring.apps``), and for every running
run when a worker starts or is found lost.

Batch mode (``JudgeConfig.batch``): a job whose calls went to a batch turns ``waiting`` (an active
status that recovery leaves alone) and ``scoring.services.batches`` makes it pending again once
its batch answered; cancelling a run cancels its batches, resuming it sends only the failed calls.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from benchmark.models import Report, System, Task, TaskSet
from core.broker import BrokerUnavailable, broker_address
from core.jobs import job_claim, job_release, jobs_enqueue_on_commit, orphaned
from scoring.judges.endpoints import redact
from scoring.judges.guard import GuardedJudge, JudgeStopped
from scoring.models import EvaluationRun, JudgeBatch, JudgeConfig, RunJob
from scoring.pipelines import pipeline_for
from scoring.services.judge_configs import judge_config_runnable
from scoring.services.run_finish import (ACTIVE_JOB_STATUSES, TRANSIENT_DB_ERRORS, Job, Run, _lock_run, run_finalize,
                                         run_halt)

logger = logging.getLogger(__name__)


class JudgeUnavailable(RuntimeError):
    """The judge backends are not installed (``scoring.judges.judge_for`` is missing)."""


class DuplicateRunError(ValidationError):
    """A run with the same judge configuration (prompt version included), systems and tasks is
    running or finished: a second one would pay the judge again for the same verdicts. ``run`` is
    that run; ``force`` makes another one all the same."""

    def __init__(self, run: EvaluationRun) -> None:
        super().__init__(
            f"run #{run.pk} “{run}” ({run.get_status_display().lower()}) already evaluates these systems on "
            f"these tasks with judge configuration {run.judge_config.name!r}, prompts "
            f"{run.judge_config.prompt_version}; open it, or start another one anyway (force)", code="duplicate")
        self.run = run


DUPLICATE_STATUSES = (Run.RUNNING, Run.FINISHED, Run.FINISHED_WITH_FAILURES)


def run_duplicate_of(*, protocol: str, judge_config: JudgeConfig, systems: Sequence[System],
                     tasks: Sequence[Task]) -> EvaluationRun | None:
    """The latest running or finished run of this protocol with this judge configuration, as it
    is now (a configuration changed since — model, prompts, options — makes another run), on
    exactly these systems and these tasks; ``None`` when there is none."""
    system_ids, task_ids = {s.pk for s in systems}, {t.pk for t in tasks}
    candidates = (EvaluationRun.objects.filter(protocol=protocol, judge_config=judge_config,
                                               status__in=DUPLICATE_STATUSES,
                                               created_at__gte=judge_config.updated_at)
                  .select_related("judge_config", "task_set").prefetch_related("systems", "tasks", "task_set__tasks")
                  .order_by("-created_at")[:100])
    for run in candidates:
        run_tasks = run.task_set.tasks.all() if run.task_set_id else run.tasks.all()
        if {s.pk for s in run.systems.all()} == system_ids and {t.pk for t in run_tasks} == task_ids:
            return run
    return None


# --- creating and steering runs ----------------------------------------------------------


@transaction.atomic
def run_create(
    *,
    protocol: str,
    judge_config: JudgeConfig,
    systems: Iterable[System],
    task_set: TaskSet | None = None,
    tasks: Iterable[Task] | None = None,
    name: str = "",
    actor=None,
) -> EvaluationRun:
    """A pending run with one job per (report, step) for every report of these tasks by these systems."""
    try:
        pipeline = pipeline_for(protocol)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    judge_config_runnable(judge_config)
    systems = list(systems)
    if not systems:
        raise ValidationError("choose at least one system to evaluate")
    if (task_set is None) == (tasks is None):
        raise ValidationError("give either a task set or a list of tasks (exactly one of them)")
    task_list = list(task_set.tasks.all()) if task_set is not None else list(tasks)
    if not task_list:
        raise ValidationError("the run has no task to evaluate")
    foreign = sorted(t.key for t in task_list if t.protocol != protocol)
    if foreign:
        raise ValidationError(f"tasks of another protocol than {protocol!r}: {', '.join(foreign[:10])}")
    reports = list(
        Report.objects.filter(task__in=task_list, system__in=systems)
        .select_related("task", "system")
        .defer("text", "parsed")
        .order_by("task__key", "system__name", "system__version")
    )
    if not reports:
        raise ValidationError("none of these systems has a report on these tasks: nothing to evaluate")
    run = EvaluationRun.objects.create(
        name=name, protocol=protocol, task_set=task_set, judge_config=judge_config,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    run.systems.set(systems)
    if task_set is None:
        run.tasks.set(task_list)
    RunJob.objects.bulk_create(
        [RunJob(run=run, report=report, step=step) for report in reports for step in pipeline.steps_for(report)]
    )
    return run


@transaction.atomic
def run_start(*, run: EvaluationRun, enqueue: bool = True) -> EvaluationRun:
    """Mark a pending run running and enqueue its jobs once committed.

    ``enqueue=False`` is for the ``evaluate --inline`` command only, which then executes
    the jobs in its own process."""
    run = _lock_run(run)
    if run.status != Run.PENDING:
        raise ValidationError(f"run #{run.pk} is {run.status}; only a pending run starts (resume it instead)")
    judge_config_runnable(run.judge_config)
    run.status, run.started_at, run.finished_at, run.error = Run.RUNNING, timezone.now(), None, ""
    run.deadline_at = _deadline(run)
    run.save(update_fields=["status", "started_at", "finished_at", "error", "deadline_at", "updated_at"])
    if enqueue:
        _enqueue_jobs(list(run.jobs.filter(status=Job.PENDING).order_by("pk").values_list("pk", flat=True)),
                      run_ids=[run.pk])
    return run


@transaction.atomic
def run_launch(*, actor=None, start: bool = True, force: bool = False, **arguments) -> EvaluationRun:
    """A new run, as the run page and the API make one: ``run_create`` then, when ``start``,
    ``run_start``, in one transaction: a run that cannot start is not kept half-made.
    ``BrokerUnavailable`` still means committed (the run starts once the broker answers).

    ``DuplicateRunError`` (nothing made) when the same run is running or finished, unless
    ``force``: a person resubmitting a form pays the judge twice for the same verdicts. Scripts
    calling ``run_create`` (``evaluate``, the benches) repeat a run on purpose and are not asked."""
    task_set, tasks = arguments.get("task_set"), arguments.get("tasks")
    if not force and arguments.get("judge_config") is not None and (task_set is not None or tasks is not None):
        duplicate = run_duplicate_of(
            protocol=arguments.get("protocol", ""), judge_config=arguments["judge_config"],
            systems=list(arguments.get("systems") or ()),
            tasks=list(task_set.tasks.all()) if task_set is not None else list(tasks))
        if duplicate is not None:
            raise DuplicateRunError(duplicate)
    run = run_create(**arguments, actor=actor)
    return run_start(run=run) if start else run


def _deadline(run: EvaluationRun):
    """When the judge calls of a run (re)started now must end: the configuration's
    ``run_deadline_seconds`` option from now, or None (no run deadline)."""
    seconds = (run.judge_config.options or {}).get("run_deadline_seconds")
    if seconds in (None, "", 0):
        return None
    try:
        return timezone.now() + timedelta(seconds=float(seconds))
    except (TypeError, ValueError, OverflowError):
        raise ValidationError(f"judge configuration {run.judge_config.name!r}: options.run_deadline_seconds must be "
                              f"a number of seconds, not {seconds!r}") from None


@transaction.atomic
def run_cancel(*, run: EvaluationRun) -> EvaluationRun:
    """Cancel pending jobs; jobs already running finish (workers check the run before claiming)."""
    run = _lock_run(run)
    if run.status not in (Run.PENDING, Run.RUNNING):
        raise ValidationError(f"run #{run.pk} is {run.status}; only a pending or running run can be cancelled")
    now = timezone.now()
    run.jobs.filter(status__in=(Job.PENDING, Job.WAITING)).update(status=Job.CANCELLED, finished_at=now, updated_at=now)
    run.status, run.finished_at = Run.CANCELLED, now
    run.save(update_fields=["status", "finished_at", "updated_at"])
    if run.batches.filter(status__in=JudgeBatch.OPEN).exists():
        from scoring.services.batches import poll_enqueue

        poll_enqueue(run.pk)  # the poller cancels the run's batches at the provider
    return run


@transaction.atomic
def run_resume(*, run: EvaluationRun, enqueue: bool = True) -> EvaluationRun:
    """Re-enqueue pending, failed and cancelled jobs, jobs a dead worker left running, and done
    jobs whose report's score card counts items the judge failed on.

    Verdicts already stored are reused, so resuming makes calls only for what is missing
    or errored. A run with nothing left to do is finalized again at once."""
    run = _lock_run(run)
    if run.status == Run.PENDING:
        raise ValidationError(f"run #{run.pk} has not started; start it instead")
    judge_config_runnable(run.judge_config)
    retry = set(run.jobs.filter(status__in=[Job.PENDING, Job.FAILED, Job.CANCELLED]).values_list("pk", flat=True))
    incomplete = run.score_cards.filter(report__isnull=False, items_failed__gt=0).values("report_id")
    retry |= set(run.jobs.filter(status=Job.DONE, report_id__in=incomplete).values_list("pk", flat=True))
    # an explicit resume takes a command's running jobs too: the command may have been killed
    retry |= set(orphaned(run.jobs.filter(status=Job.RUNNING), claimed_by_command=True).values_list("pk", flat=True))
    now = timezone.now()
    RunJob.objects.filter(pk__in=retry).update(status=Job.PENDING, error="", worker="", finished_at=None,
                                               updated_at=now)
    if run.judge_config.batch:
        from scoring.services.batches import batch_calls_retry

        batch_calls_retry(run=run)  # only the calls that failed are sent again
    run.status, run.finished_at, run.error, run.deadline_at = Run.RUNNING, None, "", _deadline(run)
    run.save(update_fields=["status", "finished_at", "error", "deadline_at", "updated_at"])
    if enqueue:
        _enqueue_jobs(sorted(retry), run_ids=[run.pk])
    if not run.jobs.filter(status__in=ACTIVE_JOB_STATUSES).exists():
        run = run_finalize(run=run)
    return run


def run_jobs_resend(job_ids: Sequence[int]) -> None:
    """Send these pending jobs again (recovery, ``core.jobs``); their runs stay marked ``jobs_unsent``
    until every message went out."""
    run_ids = set(RunJob.objects.filter(pk__in=job_ids).values_list("run_id", flat=True))
    _enqueue_jobs(job_ids, run_ids=run_ids, raise_unsent=False)




# --- executing one job -------------------------------------------------------------------


def job_execute(*, job_id: int, judge=None, enqueue: bool = True, worker: str = "") -> str:
    """Execute one job at most once at a time; idempotent. Returns what happened:

    ``done`` / ``failed`` (executed; a failure's error is on the job), ``waiting`` (batch mode: some
    calls wait for a batch, ``scoring.services.batches``), ``cancelled`` (its run
    was cancelled before it started), ``skipped`` (claimed already — another delivery executes
    it — or settled, or its run is not running), ``missing``.

    A job fails when its step raised, or when any of its judge calls failed (its error then
    counts them by reason; the verdicts of the calls that worked are kept, so a resume asks only
    for the rest). An endpoint refusing the configuration (401, 403, 404), a missing key or the
    run's deadline halts the whole run (``run_halt``) instead of sending every remaining call.

    ``judge`` replaces the configured judge (tests, benchmarks); ``enqueue=False`` does not
    enqueue the finalization when this job settles the run (``evaluate --inline``); ``worker``
    is the Celery worker's hostname, recorded on the job for recovery (empty in a command).
    Transient database errors put the job back to pending and propagate, so the Celery
    task retries it."""
    outcome = _job_claim(job_id, worker=worker)
    if outcome != "claimed":
        return outcome
    job = RunJob.objects.select_related("run__judge_config", "report__task", "report__system").get(pk=job_id)
    # Here, not at the top: scoring.judges.batch imports the openai client (openai, pydantic, httpx: ~45 MiB),
    # and this module is imported by the URL configuration of every web process, which never runs a job.
    from scoring.judges.batch import BatchPending

    guard = None
    try:
        pipeline = pipeline_for(job.run.protocol)
        deadline_at = job.run.deadline_at.timestamp() if job.run.deadline_at else None
        if judge is None:
            judge = _batch_judge_for(job) if job.run.judge_config.batch else _judge_for(job.run.judge_config)
        guard = GuardedJudge(judge,
                             stop_reason=lambda: _stop_reason(job.run_id), deadline_at=deadline_at)
        pipeline.run_step(run=job.run, report=job.report, step=job.step, judge=guard)
    except TRANSIENT_DB_ERRORS:
        job_release(RunJob, job_id)
        raise
    except BatchPending as pending:
        _job_wait(job, deferred=pending.deferred, enqueue=enqueue)
        return "waiting"
    except JudgeStopped as stop:
        if stop.halts_run:
            run_halt(run=job.run, job=job, reason=stop.reason)
        else:
            _job_settle(job, status=Job.FAILED, error=f"stopped: {stop.reason}", enqueue=enqueue)
        return "failed"
    except ImproperlyConfigured as exc:  # e.g. no key for the endpoint: no job of this run can succeed
        run_halt(run=job.run, job=job, reason=str(exc))
        return "failed"
    except Exception as exc:
        logger.exception("job %s (%s on report %s) failed", job_id, job.step, job.report_id)
        _job_settle(job, status=Job.FAILED, error=f"{type(exc).__name__}: {exc}", enqueue=enqueue)
        return "failed"
    except BaseException:  # worker shutdown: let the next delivery run it
        job_release(RunJob, job_id)
        raise
    if guard.fatal:  # the last call of the job was the fatal one
        run_halt(run=job.run, job=job, reason=f"the judge endpoint refused this configuration: {guard.fatal}")
        return "failed"
    if guard.failed:
        _job_settle(job, status=Job.FAILED, error=guard.failure_summary(), enqueue=enqueue)
        return "failed"
    _job_settle(job, status=Job.DONE, error="", enqueue=enqueue)
    return "done"


def _stop_reason(run_id: int) -> str:
    """Why a job of this run must stop sending calls now: the run was halted (``run_halt``, in another
    worker perhaps). "" otherwise — a cancelled run lets its running jobs finish (``run_cancel``)."""
    row = EvaluationRun.objects.filter(pk=run_id).values_list("status", "error").first()
    if row is None:
        return "the run was deleted"
    status, error = row
    return f"the run {error or 'failed'}" if status == Run.FAILED else ""


def _batch_judge_for(job: RunJob):
    """Batch mode: the judge that answers from the job's batches (``scoring.services.batches``)."""
    from scoring.services.batches import batch_judge_for

    try:
        judge_config_runnable(job.run.judge_config)
    except ValidationError as exc:
        raise ImproperlyConfigured(" ".join(exc.messages)) from None
    return batch_judge_for(job)


def _judge_for(config: JudgeConfig):
    try:  # a row that breaks the value rules halts the run with the reason, not a crash per job
        judge_config_runnable(config)
    except ValidationError as exc:
        raise ImproperlyConfigured(" ".join(exc.messages)) from None
    try:
        from scoring.judges import judge_for
    except ImportError as exc:
        raise JudgeUnavailable(
            "the judge backends are not installed: scoring.judges.judge_for is missing"
        ) from exc
    return judge_for(config)


def _job_claim(job_id: int, *, worker: str = "") -> str:
    """Pending → running when its run is running (``core.jobs.job_claim``); else why not."""
    now = timezone.now()
    run_running = EvaluationRun.objects.filter(pk=OuterRef("run_id"), status=Run.RUNNING)
    if job_claim(RunJob, job_id, Exists(run_running), worker=worker, attempts=F("attempts") + 1,
                 finished_at=None, error=""):
        return "claimed"
    row = RunJob.objects.filter(pk=job_id).values("status", "run__status").first()
    if row is None:
        return "missing"
    if row["status"] == Job.PENDING and row["run__status"] == Run.CANCELLED:
        RunJob.objects.filter(pk=job_id, status=Job.PENDING).update(status=Job.CANCELLED, finished_at=now, updated_at=now)
        return "cancelled"
    return "skipped"


def _job_settle(job: RunJob, *, status: str, error: str, enqueue: bool) -> None:
    """Mark the job settled; the job that settles the run's last one enqueues its finalization.
    Locking the run row serializes settling jobs, so exactly one sees the run settled."""
    from scoring.tasks import finalize_run

    with transaction.atomic():
        run = _lock_run(job.run)
        now = timezone.now()
        RunJob.objects.filter(pk=job.pk, status=Job.RUNNING).update(
            status=status, error=redact(error), finished_at=now, updated_at=now
        )
        settled = run.status == Run.RUNNING and not run.jobs.filter(status__in=ACTIVE_JOB_STATUSES).exists()
        if settled and enqueue:  # unsent: recovery finalizes settled runs (``runs_settled_finalize``)
            jobs_enqueue_on_commit(finalize_run, [run.pk])


def _job_wait(job: RunJob, *, deferred: int, enqueue: bool) -> None:
    """Running → waiting for its batch (batch mode, ``scoring.services.batches``). The job that leaves
    its run with nothing else to execute asks for a poll now, so the batch goes out at once."""
    with transaction.atomic():
        run = _lock_run(job.run)
        now = timezone.now()
        RunJob.objects.filter(pk=job.pk, status=Job.RUNNING).update(
            status=Job.WAITING, error=f"waiting for a batch to answer {deferred} judge call(s)", updated_at=now)
        idle = not run.jobs.filter(status__in=(Job.PENDING, Job.RUNNING)).exists()
        if idle and enqueue:
            from scoring.services.batches import poll_enqueue

            poll_enqueue(run.pk)


def _enqueue_jobs(job_ids: Sequence[int], *, run_ids: Iterable[int], raise_unsent: bool = True) -> None:
    """Send the jobs' messages once committed (``core.jobs.jobs_enqueue_on_commit``). Their runs
    are marked ``jobs_unsent`` in this transaction and unmarked only after every message went
    out, so a broker that cannot be reached, or this process dying first, leaves them to recovery
    (``core.jobs.jobs_recover``). A broker that cannot be reached raises ``BrokerUnavailable`` from
    the commit (``raise_unsent``: the caller hears of it) or is logged (recovery tries again later)."""
    from scoring.tasks import execute_job

    if not job_ids:
        return
    run_ids = sorted(set(run_ids))
    EvaluationRun.objects.filter(pk__in=run_ids, jobs_unsent=False).update(jobs_unsent=True)

    def unsent(exc: Exception) -> None:
        if raise_unsent:
            raise BrokerUnavailable(
                f"the task queue (broker at {broker_address()}) cannot be reached ({type(exc).__name__}: {exc}); "
                f"the run is saved and its jobs are sent as soon as a worker reaches the broker again",
                run_ids=run_ids,
            ) from exc

    def sent() -> None:
        EvaluationRun.objects.filter(pk__in=run_ids, jobs_unsent=True).update(jobs_unsent=False)

    jobs_enqueue_on_commit(execute_job, job_ids, unsent=unsent, sent=sent)
