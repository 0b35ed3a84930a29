"""One deployment of the app for a scenario: a database, a broker, Celery worker processes and
gunicorn, each a subprocess in its own process group (so ``kill -9`` takes the whole group)."""

from __future__ import annotations

import json
import os
import resource
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.web_bench import Gunicorn, stop_group

from .services import FaultsError, die_with_parent, wait_until

ROOT = Path(__file__).resolve().parent.parent


class Stack:
    def __init__(self, *, name: str, database_url: str, broker_url: str, work_dir: Path) -> None:
        self.name, self.database_url, self.broker_url = name, database_url, broker_url
        self.work_dir = work_dir / name
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.workers: dict[str, subprocess.Popen] = {}
        self.web: Gunicorn | None = None
        self.seeded: dict[str, dict] = {}  # what the scenarios seeded, by name
        queue = f"faults-{name}-{secrets.token_hex(4)}"
        self.queues = f"{queue},{queue}-exports"  # faults.settings: this run's default and exports queues
        self.env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="faults.settings",
            FAULTS_QUEUE=queue,
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(50),
            ALLOWED_HOSTS="127.0.0.1,testserver",
            DATABASE_URL=database_url,
            CELERY_BROKER_URL=broker_url,
            VAR_DIR=str(self.work_dir / "var"),
            STATIC_ROOT=str(work_dir / "static"),  # one collectstatic for every stack
            LOG_LEVEL="WARNING",
            WORKER_HEARTBEAT_SECONDS="1",
            JOB_RECOVERY_SECONDS="5",
            PYTHONUNBUFFERED="1",
        )

    # --- the database side --------------------------------------------------------------------

    def manage(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=timeout, preexec_fn=die_with_parent)

    def migrate(self) -> None:
        done = self.manage("migrate", "--noinput")
        if done.returncode != 0:
            raise FaultsError(f"[{self.name}] migrate failed: {done.stderr[-3000:]}")

    def probe(self, action: str, **arguments) -> dict:
        done = subprocess.run([sys.executable, "-m", "faults.probe", action, json.dumps(arguments)], cwd=ROOT,
                              env=self.env, capture_output=True, text=True, timeout=600, preexec_fn=die_with_parent)
        if done.returncode != 0:
            raise FaultsError(f"[{self.name}] probe {action} failed: {done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    # --- Celery workers -----------------------------------------------------------------------

    def start_worker(self, hostname: str, *, file_size_limit: int | None = None) -> None:
        """A worker process (two threads) named ``hostname``; ready once its heartbeat appears.
        ``file_size_limit``: RLIMIT_FSIZE in bytes (the disk-full scenario; its output then goes
        to a pipe, which the limit does not apply to)."""
        log = self.work_dir / f"worker-{hostname.split('@')[0]}.log"

        def limit() -> None:
            die_with_parent()
            if file_size_limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", f"--queues={self.queues}", "--pool=threads",
             "--concurrency=2", f"--hostname={hostname}", "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=self.env, start_new_session=True, preexec_fn=limit,
            stdout=subprocess.DEVNULL if file_size_limit else log.open("ab"), stderr=subprocess.STDOUT,
        )
        self.workers[hostname] = process
        wait_until(lambda: process.poll() is not None or self.beating(hostname, process.pid), 90, f"worker {hostname}")
        if process.poll() is not None:
            raise FaultsError(f"[{self.name}] worker {hostname} exited: {log.read_text()[-3000:] if log.exists() else ''}")

    def beating(self, hostname: str, pid: int) -> bool:
        """Whether this worker process has written its heartbeat row (a killed predecessor's row
        under the same name has another pid)."""
        return bool(self.sql("SELECT 1 FROM scoring_workerheartbeat WHERE hostname = %s AND pid = %s",
                             [hostname, pid]))

    def sql(self, query: str, params: list) -> list[tuple]:
        """A read on the scenario's database, straight from this process (no Django here)."""
        if self.database_url.startswith("sqlite:///"):
            import sqlite3

            with sqlite3.connect(self.database_url.removeprefix("sqlite:///"), timeout=30) as conn:
                return conn.execute(query.replace("%s", "?"), params).fetchall()
        import psycopg

        try:
            with psycopg.connect(self.database_url, connect_timeout=5) as conn:
                return conn.execute(query, params).fetchall()
        except psycopg.OperationalError:
            return []  # the database restarting: ask again

    def peak_rss_mib(self) -> dict[str, float]:
        """Each live worker process's peak resident memory so far (``VmHWM``), MiB."""
        found = {}
        for hostname, process in self.workers.items():
            try:
                status = Path(f"/proc/{process.pid}/status").read_text()
            except OSError:
                continue
            line = next((row for row in status.splitlines() if row.startswith("VmHWM:")), "")
            if line:
                found[hostname] = int(line.split()[1]) / 1024
        return found

    def kill_worker(self, hostname: str) -> None:
        process = self.workers.pop(hostname)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    # --- gunicorn -----------------------------------------------------------------------------

    def start_web(self, *, port: int | None = None) -> Gunicorn:
        if not (Path(self.env["STATIC_ROOT"]) / "staticfiles.json").exists():
            done = self.manage("collectstatic", "--noinput")
            if done.returncode != 0:
                raise FaultsError(f"[{self.name}] collectstatic failed: {done.stderr[-3000:]}")
        self.web = Gunicorn(self.env, self.work_dir / "gunicorn.log", workers=2, threads=4)
        self.web.preexec_fn = die_with_parent
        if port is not None:
            self.web.port = port
        return self.web.__enter__()

    def kill_web(self) -> None:
        os.killpg(self.web.process.pid, signal.SIGKILL)
        self.web.process.wait(10)

    def api(self, method: str, path: str, *, token: str, body: dict | None = None,
            timeout: float = 60) -> tuple[int, dict | str, float]:
        """One API request through gunicorn (as behind a TLS proxy); status, body, seconds."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.web.port}{path}", method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json",
                     "X-Forwarded-Proto": "https", "Accept": "application/json"},
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, text, kind = response.status, response.read().decode(), response.headers.get_content_type()
        except urllib.error.HTTPError as error:
            status, text, kind = error.code, error.read().decode(), error.headers.get_content_type()
        seconds = time.monotonic() - started
        return status, json.loads(text) if kind == "application/json" else text, seconds

    def stop(self) -> None:
        for process in self.workers.values():
            stop_group(process)
        self.workers.clear()
        if self.web is not None and self.web.process is not None:
            stop_group(self.web.process)
