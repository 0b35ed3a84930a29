"""Let a judge propose benchmark material for tasks; experts review it afterwards.

    manage.py propose --judge NAME (--tasks k1,k2 [--protocol P] | --task-set NAME[@VERSION] | --protocol P)
        [--stage question,topic_groups,...] [--wait | --inline]

Without ``--stage`` every stage of each task's protocol runs (``scoring.services.proposals``).
Like ``evaluate``: by default the batch is queued for a Celery worker; ``--wait`` follows it
with a progress bar (and refuses without a live worker); ``--inline`` runs it in this
command's own process. Either way ends with the summary table.
"""

import time

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Protocol, Task
from core.workers import live_workers
from scoring.models import JudgeConfig, ProposalBatch
from scoring.services.proposals import STAGES, proposal_batch_create, proposal_batch_execute

from .evaluate import NO_WORKER, ProgressBar, _split, _task_set


class Command(BaseCommand):
    help = "Propose benchmark material (questions, checklists, prompts, rubric criteria, nuggets) with a judge."

    def add_arguments(self, parser):
        parser.add_argument("--judge", required=True, help="name of a stored judge configuration")
        parser.add_argument("--stage", default="", help=f"comma-separated stages (default: all of the tasks' "
                                                        f"protocols): {', '.join(STAGES)}")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--tasks", help="comma-separated task keys (with --protocol when keys are ambiguous)")
        which.add_argument("--task-set", help="task set NAME or NAME@VERSION (default: its latest version)")
        parser.add_argument("--protocol", choices=Protocol.values, help="every task of this protocol, or the "
                                                                        "protocol of the --tasks keys")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--wait", action="store_true", help="follow the queued batch until it has finished")
        mode.add_argument("--inline", action="store_true", help="run the batch in this command's own process")
        parser.add_argument("--poll", type=float, default=2.0, help="seconds between progress updates with --wait")

    def handle(self, *args, judge, stage, tasks, task_set, protocol, wait, inline, poll, **options):
        config = JudgeConfig.objects.filter(name=judge).first()
        if config is None:
            known = ", ".join(JudgeConfig.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"no judge configuration named {judge!r} (known: {known})")
        chosen = self._tasks(tasks, task_set, protocol)
        if wait and not live_workers():
            raise CommandError(NO_WORKER)
        try:
            batch = proposal_batch_create(tasks=chosen, stages=_split(stage), judge_config=config, enqueue=not inline)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"proposals #{batch.pk}: {batch.total} unit(s) ({', '.join(batch.stages)}) on "
                          f"{len(chosen)} task(s), judge {config}")
        if config.is_heuristic:
            self.stdout.write(self.style.WARNING("the judge is the offline heuristic: its proposals are templates "
                                                 "and extracts, not an LLM's"))
        if inline:
            bar, started, failed = ProgressBar(self.stdout), time.monotonic(), []

            def draw(settled: int, total: int, outcome) -> None:
                failed.extend([outcome] if outcome.status == "failed" else [])
                bar.draw(_progress(settled, total, started, failed=len(failed), running=True))

            proposal_batch_execute(batch_id=batch.pk, progress=draw)
            bar.close()
        elif wait:
            self._wait(batch, poll)
        else:
            if not live_workers():
                self.stdout.write(self.style.WARNING(NO_WORKER + " The batch is queued until then."))
            self.stdout.write(f"follow it on the task pages, or run again with --wait (proposals #{batch.pk})")
            return
        batch.refresh_from_db()
        print_batch_summary(self, batch)

    def _tasks(self, keys: str | None, task_set: str | None, protocol: str | None) -> list[Task]:
        if task_set:
            found = list(_task_set(task_set).tasks.select_related("survey__discipline"))
            if protocol:
                found = [t for t in found if t.protocol == protocol]
            if not found:
                raise CommandError(f"task set {task_set!r} has no{' ' + protocol if protocol else ''} task")
            return found
        if keys:
            wanted = _split(keys)
            rows = Task.objects.filter(key__in=wanted).select_related("survey__discipline")
            if protocol:
                rows = rows.filter(protocol=protocol)
            by_key: dict[str, list[Task]] = {}
            for task in rows:
                by_key.setdefault(task.key, []).append(task)
            missing = [k for k in wanted if k not in by_key]
            if missing:
                raise CommandError(f"no {protocol + ' ' if protocol else ''}task with key(s): {', '.join(missing)}")
            ambiguous = {k: v for k, v in by_key.items() if len(v) > 1}
            if ambiguous:
                named = "; ".join(f"{k} ({', '.join(t.protocol for t in v)})" for k, v in ambiguous.items())
                raise CommandError(f"task key(s) in several protocols: {named}; add --protocol")
            return [by_key[k][0] for k in dict.fromkeys(wanted)]
        if protocol:
            found = list(Task.objects.filter(protocol=protocol).select_related("survey__discipline"))
            if not found:
                raise CommandError(f"there is no {protocol} task")
            return found
        raise CommandError("choose the tasks: --tasks k1,k2, --task-set NAME or --protocol P")

    def _wait(self, batch: ProposalBatch, poll: float) -> None:
        bar = ProgressBar(self.stdout)
        started, warned = time.monotonic(), False
        while True:
            batch.refresh_from_db(fields=["status", "done", "failed", "total"])
            bar.draw(_progress(batch.done + batch.failed, batch.total, started, failed=batch.failed,
                               running=batch.status == ProposalBatch.Status.RUNNING))
            if batch.status in (ProposalBatch.Status.FINISHED, ProposalBatch.Status.FAILED):
                break
            if not live_workers() and not warned:
                bar.note(NO_WORKER)
                warned = True
            time.sleep(poll)
        bar.close()


def _progress(settled: int, total: int, started: float, *, failed: int, running: bool) -> dict:
    """The counters ``ProgressBar`` draws, for a batch of units (one unit runs at a time)."""
    elapsed = time.monotonic() - started
    remaining = max(total - settled, 0)
    eta = elapsed / settled * remaining if settled and remaining else None
    return {"total": total, "done": settled - failed, "failed": failed, "cancelled": 0,
            "running": 1 if running and remaining else 0, "pending": max(remaining - 1, 0) if running else remaining,
            "eta_seconds": eta}


def print_batch_summary(command: BaseCommand, batch: ProposalBatch) -> None:
    """Status, proposed rows per kind, calls, tokens, cost, then every failed unit with its reason."""
    s = batch.summary or {}
    style = command.style.SUCCESS if batch.status == ProposalBatch.Status.FINISHED else command.style.WARNING
    command.stdout.write(style(f"proposals #{batch.pk} {batch.status}" + (f": {batch.error}" if batch.error else "")))
    units = s.get("units", {})
    command.stdout.write("units: " + (", ".join(f"{n} {status}" for status, n in units.items()) or "none"))
    command.stdout.write(f"{'proposed':<24}{'rows':>8}")
    for kind, n in s.get("proposed", {}).items():
        command.stdout.write(f"{kind:<24}{n:>8}")
    if not s.get("proposed"):
        command.stdout.write(f"{'(nothing new)':<24}{0:>8}")
    if s.get("revised"):
        command.stdout.write(f"{'revised prompts':<24}{s['revised']:>8}")
    command.stdout.write(f"calls {s.get('calls', 0)}  tokens in {s.get('tokens_in', 0)}  out {s.get('tokens_out', 0)}"
                         f"  cost ${s.get('cost_usd', 0.0):.4f}")
    failures = s.get("failures", [])
    command.stdout.write(f"failures {len(failures)}")
    for failure in failures:
        command.stdout.write(f"  {failure['stage']} on {failure['task']}: {failure['reason']}")
    for skipped in s.get("skipped", []):
        command.stdout.write(f"  skipped {skipped['stage']} on {skipped['task']}: {skipped['reason']}")
