"""Create and start an evaluation run from the command line, optionally waiting for it.

    manage.py evaluate --protocol deepsynth --judge NAME --systems a,b \\
        [--task-set NAME[@VERSION] | --tasks k1,k2] [--wait] [--inline]

Jobs run on Celery workers. Without a live worker the command says so: without
``--wait`` the jobs stay queued until a worker starts; ``--wait`` refuses to start.
``--inline`` executes the jobs in this command's own process instead (explicitly, for
a machine without a worker), and with a batch-mode judge polls its batches here too; the web
process never runs jobs.

With ``--wait`` or ``--inline`` the exit status says how the run ended: 0 finished, 3 finished
with failures (some jobs or items failed; the scores are partial), 1 failed or cancelled.
"""

import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from scoring.metric_names import NOT_METRICS, PERCENT_PROTOCOLS, headline_metrics
from benchmark.models import System, Task, TaskSet
from core.workers import live_workers
from scoring.models import JudgeConfig, RunJob
from scoring.pipelines import PIPELINES
from scoring.selectors import run_failure_reasons, run_job_errors, run_progress, run_score_cards, runs_usage
from scoring.services.batches import run_batches_poll
from scoring.services.run_finish import run_finalize
from scoring.services.runs import BrokerUnavailable, job_execute, run_create, run_start

NO_WORKER = (
    "No Celery worker is alive. Start one with `celery -A config worker` (or `manage.py studio`, "
    "which starts the web server and a worker), or run the jobs in this command's process with --inline."
)


EXIT_FINISHED_WITH_FAILURES = 3


class Command(BaseCommand):
    help = "Create and start an evaluation run; --wait shows its progress until it finishes."

    def add_arguments(self, parser):
        parser.add_argument("--protocol", required=True, choices=sorted(PIPELINES))
        parser.add_argument("--judge", required=True, help="name of a stored judge configuration")
        parser.add_argument("--systems", required=True, help="comma-separated system names (NAME or NAME@VERSION)")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--task-set", help="task set NAME or NAME@VERSION (default: its latest version)")
        which.add_argument("--tasks", help="comma-separated task keys")
        parser.add_argument("--name", default="", help="a name for the run")
        parser.add_argument("--wait", action="store_true", help="show progress until the run has finished")
        parser.add_argument(
            "--inline", action="store_true",
            help="execute the jobs in this command's own process instead of on Celery workers",
        )
        parser.add_argument("--poll", type=float, default=2.0,
                            help="seconds between progress updates with --wait (and between batch polls with --inline)")

    def handle(self, *args, protocol, judge, systems, task_set, tasks, name, wait, inline, poll, **options):
        config = JudgeConfig.objects.filter(name=judge).first()
        if config is None:
            known = ", ".join(JudgeConfig.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"no judge configuration named {judge!r} (known: {known})")
        chosen_systems = [_system(spec) for spec in _split(systems)]
        chosen_set = _task_set(task_set) if task_set else None
        chosen_tasks = _tasks(protocol, _split(tasks)) if tasks else None
        if not inline and wait and not live_workers():
            raise CommandError(NO_WORKER)
        try:
            run = run_create(
                protocol=protocol, judge_config=config, systems=chosen_systems, task_set=chosen_set,
                tasks=chosen_tasks, name=name,
            )
            run = run_start(run=run, enqueue=not inline)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        except BrokerUnavailable as exc:
            raise CommandError(f"run #{exc.run_ids[0]}: {exc}") from None
        total = run.jobs.count()
        self.stdout.write(f"run #{run.pk}: {total} job(s), judge {config}")
        if config.is_heuristic:
            self.stdout.write(self.style.WARNING("the judge is the offline heuristic: scores are not LLM judgements"))
        if inline:
            self._run_inline(run, poll)
        elif wait:
            self._wait(run, poll)
        else:
            if not live_workers():
                self.stdout.write(self.style.WARNING(NO_WORKER + " The jobs are queued until then."))
            self.stdout.write(f"follow it with: manage.py evaluate ... --wait, or on the run page (run #{run.pk})")
            return
        run.refresh_from_db()
        print_run_summary(self, run)
        if run.status != run.Status.FINISHED:
            code = EXIT_FINISHED_WITH_FAILURES if run.status == run.Status.FINISHED_WITH_FAILURES else 1
            raise CommandError(f"run #{run.pk} {run.get_status_display().lower()}", returncode=code)

    def _run_inline(self, run, poll: float) -> None:
        """Execute the pending jobs here; in batch mode, poll the run's batches here too (every ``poll``
        seconds) and execute the jobs each answered batch releases, until none waits."""
        job_ids = list(run.jobs.filter(status=RunJob.Status.PENDING).order_by("pk").values_list("pk", flat=True))
        bar = ProgressBar(self.stdout)
        while True:
            for job_id in job_ids:
                job_execute(job_id=job_id, enqueue=False)
                bar.draw(run_progress(run=run))
            run.refresh_from_db(fields=["status"])
            if run.status != run.Status.RUNNING:
                if run.batches.exists():
                    run_batches_poll(run=run, enqueue=False)  # cancelled or halted meanwhile: cancel its batches
                break
            if not run.jobs.filter(status=RunJob.Status.WAITING).exists():
                break
            job_ids = run_batches_poll(run=run, enqueue=False)["released"]
            if not job_ids:
                time.sleep(poll)
        bar.close()
        run_finalize(run=run)

    def _wait(self, run, poll: float) -> None:
        bar = ProgressBar(self.stdout)
        warned = False
        while True:
            run.refresh_from_db(fields=["status"])
            progress = run_progress(run=run)
            bar.draw(progress)
            if run.status != run.Status.RUNNING:
                break
            if not live_workers() and not warned:
                bar.note(NO_WORKER)
                warned = True
            time.sleep(poll)
        bar.close()


class ProgressBar:
    """A one-line text bar: redrawn in place on a terminal, one line per change otherwise."""

    WIDTH = 30

    def __init__(self, out) -> None:
        self.out = out
        self.tty = getattr(getattr(out, "_out", out), "isatty", lambda: False)()
        self.last = ""

    def draw(self, p: dict) -> None:
        settled = p["done"] + p["failed"] + p["cancelled"]
        filled = int(self.WIDTH * settled / p["total"]) if p["total"] else self.WIDTH
        eta = "" if p["eta_seconds"] is None else f"  ETA {_duration(p['eta_seconds'])}"
        line = (
            f"[{'#' * filled}{'-' * (self.WIDTH - filled)}] {settled}/{p['total']} jobs"
            f"  done {p['done']}  failed {p['failed']}  running {p['running']}  pending {p['pending']}"
            + (f"  waiting for a batch {p['waiting']}" if p.get("waiting") else "") + eta
        )
        if line == self.last:
            return
        self.last = line
        if self.tty:
            self.out.write("\r" + line, ending="")
            self.out.flush()
        else:
            self.out.write(line)

    def note(self, message: str) -> None:
        if self.tty:
            self.out.write("")
        self.out.write(message)
        self.last = ""

    def close(self) -> None:
        if self.tty and self.last:
            self.out.write("")


def print_run_summary(command: BaseCommand, run) -> None:
    """The run's status, its failed jobs and its system-level score cards."""
    style = command.style.SUCCESS if run.status == run.Status.FINISHED else command.style.WARNING
    command.stdout.write(style(f"run #{run.pk} {run.status}" + (f": {run.error}" if run.error else "")))
    usage = runs_usage(run_ids=[run.pk])[run.pk]
    command.stdout.write(
        f"judge calls {usage['calls']} ({usage['failed_calls']} failed), HTTP requests {usage['requests']}"
    )
    reasons = run_failure_reasons(run=run)
    if reasons:
        command.stdout.write("why things failed:")
        for row in reasons:
            command.stdout.write(f"  {row['count']:>6} {row['of']:<5} {row['reason']}")
    for job in run_job_errors(run=run):
        command.stdout.write(f"  job #{job.pk} {job.report.system} on {job.report.task.key}: {job.error}")
    print_score_cards(command, run)


def print_score_cards(command: BaseCommand, run) -> None:
    """System cards with the protocol's headline metrics (the leaderboard's columns)."""
    cards = list(run_score_cards(run=run))
    if not cards:
        command.stdout.write("no score cards")
        return
    numeric = sorted({k for c in cards for k, v in c.metrics.items()
                      if (v is None or isinstance(v, (int, float))) and not isinstance(v, bool) and k not in NOT_METRICS})
    keys = headline_metrics(run.protocol, numeric)
    digits = 1 if run.protocol in PERCENT_PROTOCOLS else 3
    widths = [max(len(k), 7) + 2 for k in keys]
    command.stdout.write(f"{'system':<30}" + "".join(f"{k:>{w}}" for k, w in zip(keys, widths))
                         + f"{'judged':>9}{'failed':>8}")
    for card in cards:
        values = "".join(f"{_number(card.metrics.get(k), digits):>{w}}" for k, w in zip(keys, widths))
        command.stdout.write(f"{str(card.system)[:29]:<30}{values}{card.items_judged:>9}{card.items_failed:>8}")


def _number(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else f"{seconds // 60}:{seconds % 60:02d}"


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _system(spec: str) -> System:
    name, _, version = spec.partition("@")
    candidates = System.objects.filter(name=name)
    if version:
        candidates = candidates.filter(version=version)
    found = list(candidates[:10])
    if not found:
        raise CommandError(f"no system named {spec!r}")
    if len(found) > 1:
        versions = ", ".join(f"{name}@{s.version}" for s in found)
        raise CommandError(f"system {name!r} has several versions; choose one of {versions}")
    return found[0]


def _task_set(spec: str) -> TaskSet:
    name, _, version = spec.partition("@")
    sets = TaskSet.objects.filter(name=name)
    if version:
        if not version.isdigit():
            raise CommandError(f"task set version must be a number: {spec!r}")
        sets = sets.filter(version=int(version))
    found = sets.order_by("-version").first()
    if found is None:
        raise CommandError(f"no task set {spec!r}")
    return found


def _tasks(protocol: str, keys: list[str]) -> list[Task]:
    found = {t.key: t for t in Task.objects.filter(protocol=protocol, key__in=keys)}
    missing = [k for k in keys if k not in found]
    if missing:
        raise CommandError(f"no {protocol} task with key(s): {', '.join(missing)}")
    return [found[k] for k in keys]
