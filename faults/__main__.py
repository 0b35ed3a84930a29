"""``python -m faults`` (``make faults``): start the topology, run every scenario, print the table.

``--only NAME ...`` runs some scenarios (``--list`` names them). Interrupted (Ctrl-C, SIGTERM or
SIGHUP, e.g. ``timeout``), it stops everything it started before it exits; killed outright
(SIGKILL), the kernel stops its processes for it (each is started with ``die_with_parent``)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

from .batch_providers import KINDS as BATCH_PROVIDER_KINDS, batch_provider_fault
from .scenarios import (
    Row,
    annotators_web_kill,
    batch_worker_kill,
    broker_cut,
    disk_full_export,
    fake_batch_judge,
    fake_judge,
    postgres_restart,
    worker_kill,
)
from .services import MACHINE_RABBITMQ, Postgres, Redis, TcpProxy, answers, rabbitmq_url
from .stack import Stack

SCENARIOS = ("redis", "rabbitmq", "sqlite", "postgres-restart", "annotators", "batch", "batch-providers")


class Interrupted(BaseException):
    """SIGTERM or SIGHUP: unwinds like Ctrl-C, through every cleanup step."""


def interrupted(signum, frame) -> None:
    raise Interrupted(signal.Signals(signum).name)


def attempt(rows: list[Row], scenario: str, broker: str, function, *args, **kwargs) -> None:
    """Run one scenario; a crash is a failed row with its reason, and the others still run."""
    started = time.monotonic()
    try:
        found = function(*args, **kwargs)
    except Exception as exc:  # the table must say what broke, then go on
        traceback.print_exc(file=sys.stderr)
        found = [Row(scenario, broker, "—", f"did not complete: {type(exc).__name__}: {str(exc)[:300]}", False)]
    for row in found:
        row.numbers += f" [{time.monotonic() - started:.0f} s]"
    rows.extend(found)
    for row in found:
        print_row(row)


def print_row(row: Row) -> None:
    print(f"| {'ok' if row.ok else 'LOST'} | {row.scenario} | {row.broker} | {row.checked} | {row.numbers} |",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs) afterwards")
    parser.add_argument("--list", action="store_true", help="name the scenarios and stop")
    args = parser.parse_args()
    if args.list:
        print("\n".join(SCENARIOS))
        return 0
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupted)
    started = time.monotonic()
    work_dir = Path(tempfile.mkdtemp(prefix="ses-faults."))
    suffix = os.getpid()
    rows: list[Row] = []
    cleanup = []
    print(f"faults: work folder {work_dir}", flush=True)
    try:
        judge = fake_judge().start()
        cleanup.append(judge.stop)
        postgres = Postgres.machine_or_throwaway()
        cleanup.append(postgres.stop)
        redis = Redis()
        cleanup.append(redis.stop)
        print(f"faults: PostgreSQL {'of our own' if postgres.own else 'of the machine'}, "
              f"Redis {'of our own' if redis.own else 'of the machine'} at {redis.address[1]}", flush=True)

        def database(purpose: str) -> str:
            name = f"ses_faults_{purpose}_{suffix}"
            cleanup.append(lambda: postgres.drop(name))
            return postgres.database(name)

        def stack_up(name: str, database_url: str, broker_url: str, *, web: bool) -> Stack:
            stack = Stack(name=name, database_url=database_url, broker_url=broker_url, work_dir=work_dir)
            cleanup.append(stack.stop)
            stack.migrate()
            stack.start_worker("w1@faults")
            stack.start_worker("w2@faults")
            if web:
                stack.start_web()
            return stack

        if "redis" in args.only:
            proxy = TcpProxy(redis.address)
            proxy.start()
            cleanup.append(proxy.stop)
            stack = stack_up("pg-redis", database("redis"), redis.url(proxy.address), web=True)
            attempt(rows, "worker kill -9 mid-run", "Redis", worker_kill, stack, "Redis", judge.base_url)
            attempt(rows, "broker cut when a run starts", "Redis", broker_cut, stack, "Redis", judge.base_url, proxy)
            attempt(rows, "disk full while writing an export", "Redis", disk_full_export, stack, "Redis")
            stack.stop()
        if "rabbitmq" in args.only:
            if not answers(MACHINE_RABBITMQ):
                rows.append(Row("worker kill -9 mid-run", "RabbitMQ", "—",
                                "not run: no RabbitMQ answers on 127.0.0.1:5672", False))
            else:
                proxy = TcpProxy(MACHINE_RABBITMQ)
                proxy.start()
                cleanup.append(proxy.stop)
                stack = stack_up("pg-rabbitmq", database("rabbitmq"), rabbitmq_url(proxy.address), web=True)
                attempt(rows, "worker kill -9 mid-run", "RabbitMQ", worker_kill, stack, "RabbitMQ", judge.base_url)
                attempt(rows, "broker cut when a run starts", "RabbitMQ", broker_cut, stack, "RabbitMQ",
                        judge.base_url, proxy)
                stack.stop()
        if "sqlite" in args.only:
            (work_dir / "sqlite-fs").mkdir()
            stack = stack_up("sqlite-fs", f"sqlite:///{work_dir / 'sqlite-fs' / 'studio.sqlite3'}", "filesystem://",
                             web=False)
            attempt(rows, "worker kill -9 mid-run", "SQLite + filesystem", worker_kill, stack,
                    "SQLite + filesystem", judge.base_url)
            stack.stop()
        if "postgres-restart" in args.only:
            own = Postgres.throwaway()
            cleanup.append(own.stop)
            stack = stack_up("pg-restart", own.database("ses_faults_restart"), redis.url(), web=False)
            attempt(rows, "PostgreSQL restarted mid-run", "Redis", postgres_restart, stack, "Redis", judge.base_url,
                    own)
            stack.stop()
        if "batch" in args.only:
            batch_server = fake_batch_judge().start()
            cleanup.append(batch_server.stop)
            stack = stack_up("pg-batch", database("batch"), redis.url(), web=False)
            attempt(rows, "worker kill -9 while a batch is pending", "Redis", batch_worker_kill, stack, "Redis",
                    judge.base_url, batch_server)
            stack.stop()
        if "batch-providers" in args.only:
            stack = stack_up("pg-batch-providers", database("providers"), redis.url(), web=False)
            for kind in BATCH_PROVIDER_KINDS:
                attempt(rows, f"batch provider: {kind}", "Redis", batch_provider_fault, stack, "Redis", kind)
            stack.stop()
        if "annotators" in args.only:
            stack = Stack(name="pg-web", database_url=database("web"), broker_url=redis.url(), work_dir=work_dir)
            cleanup.append(stack.stop)
            stack.migrate()
            attempt(rows, "50 annotators, web kill -9", "Redis", annotators_web_kill, stack, "Redis")
            stack.stop()
    except (KeyboardInterrupt, Interrupted) as exc:
        print(f"faults: interrupted ({type(exc).__name__} {exc}): stopping everything started", file=sys.stderr,
              flush=True)
        rows.append(Row("(interrupted)", "—", "—", f"{type(exc).__name__} {exc}", False))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        for step in reversed(cleanup):
            try:
                step()
            except Exception as exc:  # clean up the rest regardless
                print(f"faults: cleanup step failed: {exc}", file=sys.stderr)
        if not args.keep:
            shutil.rmtree(work_dir, ignore_errors=True)
    print()
    print("| result | scenario | broker | checked | numbers |")
    print("|---|---|---|---|---|")
    for row in rows:
        print_row(row)
    lost = [row for row in rows if not row.ok]
    print(f"\nfaults: {len(rows) - len(lost)} of {len(rows)} scenarios kept everything, "
          f"{time.monotonic() - started:.0f} s in all")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
