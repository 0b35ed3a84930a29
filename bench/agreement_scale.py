"""The agreement page at a million labels, served by gunicorn while a real Celery worker computes
its figures (``dashboards_bench.FIGURES``; issue #33).

On a database of its own (``ses_bench_dashboards`` on the PostgreSQL server of ``DATABASE_URL``,
else ``var/bench_dashboards.sqlite3``) holding the web bench's seed (``bench/seed_web.py``,
written with COPY: 100,000 verify items with 10 labels each, every fifth item disagreeing),
seeded once and reused; the stored figures are deleted before every run, so the first
computation is measured too. Production settings (DEBUG off), the filesystem broker under
``var/bench-dashboards/``, gunicorn as the web bench runs it and a worker
(``--pool=threads --concurrency=2``):

1. the curator opens the agreement page: nothing is stored yet, a worker is asked; the page
   polls its section until the figures are stored (``first computation``);
2. the page, figures stored: ``page_repeats`` timed GETs;
3. an annotator labels a few items through the REST loop: the page serves the stored figures
   marked stale while the worker's next computation is due (debounced); timed GETs, then the
   wait until the new figures are on the page;
4. the gunicorn workers' peak RSS over all of it (``VmHWM``, ``bench/memory.py``), and the
   Celery worker's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from bench.memory import MiB, PeakRss
from bench.seed_web import SeedSpec
from bench.web_bench import (BenchError, Gunicorn, WebLoad, _run, figure, percentile, server_environment,
                             stop_group)
from bench.web_client import browsers_login

ROOT = Path(__file__).resolve().parent.parent
PAGE_MS = 300.0
WEB_WORKER_MIB = 256.0
SPEC = SeedSpec(items=100_000, annotators=1)  # 1,000,000 labels
QUICK_SPEC = SeedSpec(items=10_000, annotators=1)
PAGE = "/dashboards/agreement/"
SECTION = "/dashboards/agreement/inter-annotator/"
STATE = re.compile(r'data-project="(\d+)" data-state="(\w+)"')
NEW_LABELS = 5
PAGE_REPEATS = 20
WAIT_SECONDS = 900  # for the worker's heartbeat, and for each computation


def _database(quick: bool) -> str:
    name = "bench_dashboards_quick" if quick else "bench_dashboards"
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        return f"{url.rpartition('/')[0]}/ses_{name}"
    return f"sqlite:///{ROOT / 'var' / f'{name}.sqlite3'}"


# --- in a subprocess bound to the database ------------------------------------------------------


def _prepare(spec: SeedSpec) -> dict:
    """Seed once (the web bench's seed without its pages), then forget the stored figures."""
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.models import AnnotationItem, AnnotationProject, Label, ProjectStatistics
    from bench import seed_web

    call_command("migrate", verbosity=0, interactive=False)
    state = seed_web.seed_state(spec, loops_needed=4 * NEW_LABELS)
    if state == "stale":
        raise BenchError("the dashboards bench database holds another seed: drop it (it is seeded again)")
    seconds = None
    if state == "empty":
        started = time.perf_counter()
        seed_web.seed(spec, pages=False)
        seconds = time.perf_counter() - started
    else:
        seed_web.maintain()
    project = AnnotationProject.objects.get(name=seed_web.PROJECT)
    ProjectStatistics.objects.filter(project=project).delete()
    return {"project_id": project.pk, "curator": seed_web.CURATOR, "annotators": seed_web.annotator_names(1),
            "password": seed_web.PASSWORD, "items": AnnotationItem.objects.filter(project=project).count(),
            "labels": Label.objects.filter(project=project).count(), "seed_seconds": seconds}


def _stored(project_id: int) -> dict:
    import django

    django.setup()
    from annotation.models import ProjectStatistics

    row = ProjectStatistics.objects.filter(project_id=project_id).values("seconds", "values__n_labels").first()
    return row or {}


# --- in the bench process ---------------------------------------------------------------------


def _subprocess(env: dict, *args: str) -> dict:
    out = _run([sys.executable, "-m", "bench.agreement_scale", *args], env, f"bench.agreement_scale {args[0]}")
    return json.loads(out.strip().splitlines()[-1])


def _state(browser, project_id: int) -> str:
    status, body, _ = browser.request("GET", SECTION, htmx=True)
    if status != 200:
        raise BenchError(f"GET {SECTION}: HTTP {status}")
    states = dict(STATE.findall(body))
    return states.get(str(project_id), "missing")


def _wait_current(browser, project_id: int, worker, log: Path) -> float:
    """Poll the section as the page does until the project's figures are current; seconds waited."""
    started = time.perf_counter()
    while (state := _state(browser, project_id)) != "current":
        if worker.poll() is not None:
            raise BenchError(f"the Celery worker exited:\n{log.read_text()[-3000:]}")
        if time.perf_counter() - started > WAIT_SECONDS:
            raise BenchError(f"figures still {state!r} after {WAIT_SECONDS} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    return time.perf_counter() - started


def _page_times(browser, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        status, body, seconds = browser.request("GET", PAGE)
        if status != 200:
            raise BenchError(f"GET {PAGE}: HTTP {status}")
        times.append(seconds)
    return times


def run_figures(*, quick: bool = False) -> list[dict]:
    from bench.web_bench import _ensure_postgres

    spec = QUICK_SPEC if quick else SPEC
    url = _database(quick)
    if url.startswith("postgres"):
        _ensure_postgres(url)
    work_dir = ROOT / "var" / "bench-dashboards"
    work_dir.mkdir(parents=True, exist_ok=True)
    env = server_environment(database_url=url, work_dir=work_dir)
    env.update(WORKER_HEARTBEAT_SECONDS="1")
    _run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], env, "collectstatic")
    seeded = _subprocess(env, "prepare", json.dumps(spec.__dict__))
    project = seeded["project_id"]
    note = f"seeded in {seeded['seed_seconds']:.0f} s" if seeded["seed_seconds"] else "reused"
    print(f"    {seeded['labels']:,} labels on {seeded['items']:,} items ({note})", flush=True)
    log = work_dir / "celery.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--queues=celery,exports", "--pool=threads", "--concurrency=2",
         "--hostname=bench-dashboards@%h", "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
    load = WebLoad(items=spec.items, sequential_loops=0, loops_per_annotator=0)
    try:
        with PeakRss(worker.pid) as worker_memory, \
                Gunicorn(env, work_dir / "gunicorn.log", workers=load.workers, threads=load.threads) as server, \
                PeakRss(server.process.pid) as web_memory:
            curator = browsers_login(server.port, [seeded["curator"]], seeded["password"])[0]
            deadline = time.monotonic() + WAIT_SECONDS
            while _state(curator, project) == "no_worker":  # the worker's first heartbeat
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise BenchError(f"no worker heartbeat:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
            first_view = _page_times(curator, 1)[0]  # nothing stored: a worker is asked
            first_computation = _wait_current(curator, project, worker, log)
            computed = _subprocess(env, "stored", str(project))
            stored = _page_times(curator, PAGE_REPEATS)
            annotator = browsers_login(server.port, seeded["annotators"], seeded["password"])[0]
            for _ in range(NEW_LABELS):  # labels change through the loop's REST API
                annotator.rest_loop(project)
            labelled = time.perf_counter()
            if _state(curator, project) != "updating":
                raise BenchError("the page did not take the new labels for a change")
            stale = _page_times(curator, PAGE_REPEATS)
            _wait_current(curator, project, worker, log)
            to_fresh = time.perf_counter() - labelled
            recomputed = _subprocess(env, "stored", str(project))
    finally:
        stop_group(worker)
    if recomputed.get("values__n_labels") != computed.get("values__n_labels", 0) + NEW_LABELS:
        raise BenchError(f"the new figures are not of the new labels: {computed} then {recomputed}")
    where = f"agreement page, {spec.items * spec.labels_per_item:,} seeded labels"  # the runs' new labels come on top
    return [
        figure(f"{where}: figures stored, p95", 1000 * percentile(stored, 95), PAGE_MS, "ms"),
        figure(f"{where}: labels changed, worker due, p95", 1000 * percentile(stale, 95), PAGE_MS, "ms"),
        figure(f"{where}: first view (worker asked)", 1000 * first_view, PAGE_MS, "ms"),
        figure(f"{where}: web worker peak RSS (gunicorn worker)", web_memory.peak_of(exclude_root=True) / MiB,
               WEB_WORKER_MIB, "MiB"),
        figure(f"{where}: worker's computation", computed["seconds"], None, "s"),
        figure(f"{where}: first view to figures on the page", first_computation, None, "s"),
        figure(f"{where}: {NEW_LABELS} new labels to new figures on the page (debounced)", to_fresh, None, "s"),
        figure(f"{where}: Celery worker peak RSS", worker_memory.peak_of() / MiB, None, "MiB"),
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if len(sys.argv) == 3 and sys.argv[1] == "prepare":
        print(json.dumps(_prepare(SeedSpec(**json.loads(sys.argv[2])))))
    elif len(sys.argv) == 3 and sys.argv[1] == "stored":
        print(json.dumps(_stored(int(sys.argv[2]))))
    else:
        raise SystemExit("usage: python -m bench --only dashboards")
