"""Web load: the annotator loop, the pairwise page and the dashboards under gunicorn, on SQLite and PostgreSQL.

For each database (``var/bench_web.sqlite3`` and ``ses_bench_web`` on the PostgreSQL server of
``DATABASE_URL``; ``--quick`` uses ``*_quick`` ones) the module

1. seeds it once (``bench/seed_web.py``: 100,000 verify items holding 1,000,000 labels, every
   item one label short of its overlap; 10,000 items with ``--quick``) — later runs reuse it
   until too few open items are left, then drop and seed it again;
2. counts SQL queries per request in a subprocess on the same database (Django's test client
   under ``CaptureQueriesContext``: production code carries no counter);
3. serves it with gunicorn (``DEBUG=0``, behind a simulated TLS proxy: ``X-Forwarded-Proto``),
   and drives it from this process over keep-alive HTTP/1.1 connections, one logged-in
   session (CSRF like a browser) per annotator account. A loop is what the workspace does for
   each item: the htmx POST of the shown item's label (accept), whose response is the next
   item's panel, claimed for the annotator in that request. Each browser opens the workspace
   once (the htmx GET that claims its first item, outside the loops; its time is a page row of
   its own). Warm-up loops are not counted;
4. counts over-assignment from the database afterwards (items with more distinct annotators
   among labels and unexpired claims than the overlap) and items whose counter disagrees with
   their labels.

Gunicorn runs ``gthread`` workers, one per core with 4 threads each: on 2 cores that is 8
request slots, one per concurrent annotator, without more processes than cores competing
for the CPU with PostgreSQL; the threads cover the waits on the database (and SQLite's
serialized writers). Keep-alive needs a threaded worker (``sync`` closes every connection).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.memory import MiB, PeakRss
from bench.seed_web import SeedSpec
from bench.web_client import BATCH, MODES, BenchError, Browser, LoopLog, browsers_login, label_form

ROOT = Path(__file__).resolve().parent.parent
SEQUENTIAL_P95_MS = 15.0  # per labelled item (issue #20)
CONCURRENT_LOOPS_PER_S = 100.0
BATCHED_ITEMS_PER_S = 250.0
QUERY_BUDGETS = {  # issue #20's targets per labelled item
    "per item, REST (POST /api/labels/ with next)": 12,
    "per item, REST batch of 10 (claim + submit)": 4,
}
CONCURRENT_P95_MS = 150.0
PAGE_MS = 300.0
WEB_WORKER_MIB = 256.0
DASHBOARDS = (
    ("leaderboard", "/dashboards/leaderboard/?protocol=deepsynth"),
    ("leaderboard CSV", "/dashboards/leaderboard/?protocol=deepsynth&format=csv"),
    ("human ranking", "/dashboards/human/"),
    ("agreement", "/dashboards/agreement/"),
    ("chart verdicts", "/dashboards/charts/verdicts/?protocol=deepsynth"),
    ("chart scores", "/dashboards/charts/scores/?protocol=deepsynth"),
    ("chart human vs automated", "/dashboards/charts/human-vs-automated/"),
)


@dataclass(frozen=True)
class WebLoad:
    """How big the database is and how many loops each phase measures."""

    items: int
    sequential_loops: int
    loops_per_annotator: int
    warmup_loops: int = 5
    page_repeats: int = 20
    query_loops: int = 5
    dashboard_tasks: int = 40
    annotators: int = 8
    workers: int = max(os.cpu_count() or 1, 1)
    threads: int = 4

    @property
    def spec(self) -> SeedSpec:
        return SeedSpec(items=self.items, annotators=self.annotators, dashboard_tasks=self.dashboard_tasks)

    @property
    def loops_per_run(self) -> int:
        """Items one run consumes (each loop completes one item), with room for a second run."""
        per_mode = (self.warmup_loops * (1 + self.annotators) + self.sequential_loops
                    + self.annotators * self.loops_per_annotator)
        return 2 * (3 * self.query_loops + 4 * per_mode)  # the modes: workspace, REST, REST batch (2×)


FULL = WebLoad(items=100_000, sequential_loops=300, loops_per_annotator=100)
TEN_THOUSAND = WebLoad(items=10_000, sequential_loops=300, loops_per_annotator=100)
QUICK = WebLoad(items=10_000, sequential_loops=100, loops_per_annotator=40, page_repeats=10)


class StaleSeed(BenchError):
    """The database holds another seed, or too few open items are left: drop it and seed again."""


def figure(name: str, value: float, target: float | None, unit: str, *, better: str = "lower") -> dict:
    return {"figure": name, "value": value, "target": target, "unit": unit, "better": better}


def percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# --- the database side: a subprocess bound to one database -------------------------------------


def server_environment(*, database_url: str, work_dir: Path) -> dict:
    """Production settings (DEBUG off) on ``database_url``, with the bench's own static and var folders."""
    return dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="0",
        SECRET_KEY=os.environ.get("BENCH_SECRET_KEY") or secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,testserver",
        DATABASE_URL=database_url,
        VAR_DIR=str(work_dir / "var"),
        STATIC_ROOT=str(work_dir / "static"),
        LOG_LEVEL="WARNING",
    )


def _run(args: list[str], env: dict, what: str, timeout: float = 3600) -> str:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise BenchError(f"{what} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


def _db(action: str, env: dict, load: WebLoad) -> dict:
    out = _run([sys.executable, "-m", "bench.web_bench", "db", action, "--load", json.dumps(asdict(load))], env,
               f"bench.web_bench db {action} on {env['DATABASE_URL']}")
    return json.loads(out.strip().splitlines()[-1])


def _db_main(action: str, load: WebLoad) -> dict:
    import django

    django.setup()
    from django.core.management import call_command

    from bench import seed_web

    if action == "prepare":
        call_command("migrate", verbosity=0, interactive=False)
        state = seed_web.seed_state(load.spec, loops_needed=load.loops_per_run)
        if state == "stale":
            return {"state": "stale"}
        seconds = None
        if state == "empty":
            start = time.perf_counter()
            seed_web.seed(load.spec)
            seconds = time.perf_counter() - start
        else:
            seed_web.maintain()  # the earlier runs' dead rows (see there)
        return {"state": state, "seed_seconds": seconds, **seed_web.seed_info(load.spec)}
    if action == "queries":
        return _count_queries(load)
    if action == "check":
        info = seed_web.seed_info(load.spec)
        return {**info, **seed_web.overassignment(project_id=info["project_id"])}
    raise BenchError(f"unknown action {action!r}")


def _count_queries(load: WebLoad) -> dict:
    """Queries per request of the probe annotator's loops, the pairwise page and the dashboards
    (Django's test client in this process; the largest count of each kind)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench import seed_web

    info = seed_web.seed_info(load.spec)
    User = get_user_model()
    counts: dict[str, int] = {}

    def count(kind: str, client: Client, method: str, path: str, expect: int = 200, **kwargs):
        with CaptureQueriesContext(connection) as queries:
            response = getattr(client, method)(path, secure=True, **kwargs)
        if response.status_code != expect:
            raise BenchError(f"{method.upper()} {path}: HTTP {response.status_code}")
        counts[kind] = max(counts.get(kind, 0), len(queries))
        return response.content.decode()

    probe = Client()
    probe.force_login(User.objects.get(username=info["probe"]))
    panel = count("open workspace (htmx GET)", probe, "get", f"/annotate/{info['project_id']}/",
                  headers={"HX-Request": "true"})
    for _ in range(load.query_loops):
        action, token = label_form(panel)
        panel = count("per item, workspace (htmx POST: label, next item)", probe, "post", action,
                      data={"client_token": token, "decision": "accept"}, headers={"HX-Request": "true"})
    project = info["project_id"]
    held = json.loads(count("REST claim", probe, "post", f"/api/projects/{project}/next/"))["assignment"]["item"]
    for _ in range(load.query_loops):
        body = {"item": held, "value": {"decision": "accept"}, "client_token": str(uuid.uuid4()), "next": True}
        answer = json.loads(count("per item, REST (POST /api/labels/ with next)", probe, "post", "/api/labels/",
                                  data=body, content_type="application/json", expect=201))
        held = answer["next"]["assignment"]["item"]
    for _ in range(load.query_loops):
        with CaptureQueriesContext(connection) as queries:
            claims = json.loads(probe.post(f"/api/projects/{project}/next/?count={BATCH}", secure=True).content)
            body = [{"item": c["assignment"]["item"], "value": {"decision": "accept"},
                     "client_token": str(uuid.uuid4())} for c in claims["claims"]]
            probe.post("/api/labels/batch/", data=body, content_type="application/json", secure=True)
        kind = f"per item, REST batch of {BATCH} (claim + submit)"
        counts[kind] = max(counts.get(kind, 0), round(len(queries) / len(body), 1))
    count("pairwise page", probe, "get", f"/annotate/{info['pairwise_project_id']}/")
    curator = Client()
    curator.force_login(User.objects.get(username=info["curator"]))
    for name, path in DASHBOARDS:
        count(f"dashboard {name}", curator, "get", path)
    return counts


# --- the server and the browsers ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gunicorn:
    """``gunicorn config.wsgi`` as a subprocess (its own process group), ready when /login/ answers."""

    def __init__(self, env: dict, log: Path, *, workers: int, threads: int) -> None:
        self.env, self.log, self.workers, self.threads = env, log, workers, threads
        self.port = _free_port()
        self.process: subprocess.Popen | None = None
        self.preexec_fn = None  # e.g. make faults': die with the orchestrator

    def __enter__(self) -> "Gunicorn":
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{self.port}",
             "--worker-class", "gthread", "--workers", str(self.workers), "--threads", str(self.threads),
             "--keep-alive", "30", "--log-level", "warning"],
            cwd=ROOT, env=self.env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=self.preexec_fn,
        )
        try:
            self._wait_ready(deadline=time.monotonic() + 90)
        except BaseException:  # Ctrl-C while it starts too: `with` calls __exit__ only after __enter__ returned
            self.__exit__()
            raise
        return self

    def _wait_ready(self, *, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"gunicorn exited with {self.process.returncode}:\n{self.log.read_text()[-4000:]}")
            try:
                if Browser(self.port).request("GET", "/login/")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise BenchError(f"gunicorn did not answer within 90 s:\n{self.log.read_text()[-4000:]}")

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop_group(self.process)


def stop_group(process: subprocess.Popen) -> None:
    """Stop a subprocess started with ``start_new_session`` and everything it started."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def _concurrent(browsers: list[Browser], project_id: int, load: WebLoad, mode: str) -> tuple[LoopLog, float]:
    """Every annotator warms up, then all start together; returns the log and the wall time."""
    logs = [LoopLog.empty(mode) for _ in browsers]
    start_together = threading.Barrier(len(browsers) + 1)

    def annotate(browser: Browser, log: LoopLog) -> None:
        browser.reconnect()
        LoopLog.empty(mode).run(browser, project_id, load.warmup_loops)
        start_together.wait()
        log.run(browser, project_id, load.loops_per_annotator)

    threads = [threading.Thread(target=annotate, args=(b, log)) for b, log in zip(browsers, logs)]
    for thread in threads:
        thread.start()
    start_together.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    merged = LoopLog.empty(mode)
    for log in logs:
        merged.loops += log.loops
        merged.errors += log.errors
        merged.items += log.items
    return merged, wall


def _page_times(browser: Browser, path: str, repeats: int) -> list[float]:
    browser.reconnect()
    browser.request("GET", path)  # warm-up
    times = []
    for _ in range(repeats):
        status, body, seconds = browser.request("GET", path)
        if status != 200:
            raise BenchError(f"GET {path}: HTTP {status}")
        times.append(seconds)
    return times


def measure(*, database_url: str, label: str, load: WebLoad, work_dir: Path) -> dict:
    """Seed (or reuse) ``database_url``, serve it, load it; every raw number of one database."""
    work_dir.mkdir(parents=True, exist_ok=True)
    env = server_environment(database_url=database_url, work_dir=work_dir)
    _run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], env, "collectstatic")
    prepared = _db("prepare", env, load)
    if prepared["state"] == "stale":
        raise StaleSeed(f"{label}: the database holds another seed or too few open items for a run")
    queries = _db("queries", env, load)
    result: dict = {"database": label, "seed": prepared, "queries": queries, "load": asdict(load)}
    with Gunicorn(env, work_dir / "gunicorn.log", workers=load.workers, threads=load.threads) as server:
        project = prepared["project_id"]
        with PeakRss(server.process.pid) as memory:
            annotators = browsers_login(server.port, prepared["annotators"], prepared["password"])
            first = annotators[0]
            modes = {}
            for mode in MODES:
                LoopLog.empty(mode).run(first, project, load.warmup_loops)
                sequential = LoopLog.empty(mode)
                first.reconnect()
                sequential.run(first, project, load.sequential_loops)
                concurrent, wall = _concurrent(annotators, project, load, mode)
                modes[mode] = {"sequential": asdict(sequential), "concurrent": asdict(concurrent),
                               "concurrent_wall_seconds": wall}
            curator = browsers_login(server.port, [prepared["curator"]], prepared["password"])[0]
            pages = {
                "workspace page (reload: the held item)": _page_times(first, f"/annotate/{project}/",
                                                                      load.page_repeats),
                "pairwise page": _page_times(first, f"/annotate/{prepared['pairwise_project_id']}/",
                                             load.page_repeats),
            }
            for name, path in DASHBOARDS:
                pages[f"dashboard {name}"] = _page_times(curator, path, load.page_repeats)
        result.update(
            modes=modes, pages=pages,
            web_worker_peak_rss=memory.peak_of(exclude_root=True), web_tree_peak_rss=memory.peak_total,
        )
    result["check"] = _db("check", env, load)
    return result


def figures_of(result: dict) -> list[dict]:
    """The table rows of one database's ``measure`` result: per loop (workspace, REST, REST
    batch) side by side, times per labelled item."""
    db, load = result["database"], result["load"]
    n = load["annotators"]
    rows = []
    for mode, measured in result["modes"].items():
        seq, conc = measured["sequential"], measured["concurrent"]
        ms = [1000 * s for s in seq["loops"]] or [float("nan")]
        cms = [1000 * s for s in conc["loops"]] or [float("nan")]
        batched = mode != "workspace" and mode != "REST"
        where = f"{db}, {load['items']:,} items, {mode}"
        rows += [
            figure(f"{where}: sequential p50 per item", percentile(ms, 50), None, "ms"),
            figure(f"{where}: sequential p95 per item", percentile(ms, 95), SEQUENTIAL_P95_MS, "ms"),
            figure(f"{where}: {n} annotators, items/s", conc["items"] / measured["concurrent_wall_seconds"],
                   BATCHED_ITEMS_PER_S if batched else CONCURRENT_LOOPS_PER_S, "items/s", better="higher"),
            figure(f"{where}: {n} annotators, p95 per item", percentile(cms, 95), CONCURRENT_P95_MS, "ms"),
            figure(f"{where}: errors (both phases)", len(seq["errors"]) + len(conc["errors"]), 0, "count"),
        ]
    db = f"{db}, {load['items']:,} items"
    rows += [
        figure(f"{db}: items over their overlap", result["check"]["over_assigned_items"], 0, "count"),
        figure(f"{db}: items whose counter disagrees", result["check"]["miscounted_items"], 0, "count"),
    ]
    rows += [figure(f"{db}: queries, {kind}", count, QUERY_BUDGETS.get(kind), "queries")
             for kind, count in result["queries"].items() if not kind.startswith("dashboard")]
    dashboards = {k: v for k, v in result["queries"].items() if k.startswith("dashboard")}
    if dashboards:
        rows.append(figure(f"{db}: queries, dashboards (most of 7)", max(dashboards.values()), None, "queries"))
    rows += [figure(f"{db}: {page} p95", 1000 * percentile(times, 95), PAGE_MS, "ms")
             for page, times in result["pages"].items()]
    rows.append(figure(f"{db}: web worker peak RSS (gunicorn worker, under load)",
                       result["web_worker_peak_rss"] / MiB, WEB_WORKER_MIB, "MiB"))
    return rows


# --- make bench ---------------------------------------------------------------------------------


def _drop(database_url: str) -> None:
    if database_url.startswith("sqlite"):
        path = Path(database_url.removeprefix("sqlite:///"))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    import psycopg

    base, _, name = database_url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _ensure_postgres(database_url: str) -> None:
    import psycopg

    base, _, name = database_url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def bench_databases(quick: bool, items: int = FULL.items) -> dict[str, str]:
    """The web bench's own databases: never the user's, nor the other benchmarks' ``ses_bench``
    (one per size, so that each keeps its seed)."""
    suffix = "_quick" if quick else ("" if items == FULL.items else f"_{items}")
    databases = {"sqlite": f"sqlite:///{ROOT / 'var' / f'bench_web{suffix}.sqlite3'}"}
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        databases["postgresql"] = f"{url.rpartition('/')[0]}/ses_bench_web{suffix}"
    return databases


def run_figures(*, quick: bool = False) -> list[dict]:
    """Every size (10,000 and 100,000 items; ``quick``: 10,000 with fewer loops) on SQLite and,
    when ``DATABASE_URL`` is a PostgreSQL server, PostgreSQL."""
    rows = []
    for load in [QUICK] if quick else [TEN_THOUSAND, FULL]:
        databases = bench_databases(quick, load.items)
        if "postgresql" not in databases:
            print("    PostgreSQL not measured: DATABASE_URL is not a PostgreSQL server (`make bench` starts one)")
        for label, url in databases.items():
            if label == "postgresql":
                _ensure_postgres(url)
            work_dir = ROOT / "var" / f"bench-web-{label}-{load.items}"
            try:
                result = measure(database_url=url, label=label, load=load, work_dir=work_dir)
            except StaleSeed as exc:
                print(f"    {label}: reseeding ({exc})")
                _drop(url)
                result = measure(database_url=url, label=label, load=load, work_dir=work_dir)
            seeded = result["seed"]
            note = f"seeded in {seeded['seed_seconds']:.0f} s" if seeded["seed_seconds"] else "reused"
            errors = [e for m in result["modes"].values() for e in m["sequential"]["errors"] + m["concurrent"]["errors"]]
            print(f"    {label}: {seeded['items']:,} items, {seeded['labels']:,} labels ({note}); "
                  f"errors: {errors[:3]}", flush=True)
            (work_dir / "result.json").write_text(json.dumps(result, indent=1))
            rows += figures_of(result)
    return rows


FIGURES = [("annotator loop, pairwise page, dashboards, web worker RSS", run_figures)]
BENCHMARKS: list = []


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "db":
        sys.path.insert(0, str(ROOT))
        load_arg = json.loads(sys.argv[sys.argv.index("--load") + 1])
        print(json.dumps(_db_main(sys.argv[2], WebLoad(**load_arg))))
    else:
        raise SystemExit("usage: python -m bench --only web [--quick]")
