"""Peak resident memory of the processes that do the heavy work (the web worker's is in ``web_bench``).

On a database of its own, emptied every time (``ses_bench_memory`` on PostgreSQL, else
``var/bench_memory.sqlite3``), with production settings (DEBUG off) and a filesystem broker
under ``var/bench-memory/``:

- the largest import — the whole ReportBench v1.1 release (100 tasks, 16,204 gold
  references) through ``manage.py import_data`` into the empty database, as the README
  documents it (imports are not Celery jobs; the upload API takes single files only);
- a real Celery worker (``--pool=threads --concurrency=8``) during a 100-report DeepSynth run
  (25 systems × the 4 example tasks, 1,225 calls to a loopback OpenAI-compatible server
  answering after 200 ms), started by ``manage.py evaluate --wait``.

Peaks are ``VmHWM`` of every process of the tree (``bench/memory.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import bench_dataset
from bench.memory import MiB, PeakRss
from bench.web_bench import BenchError, _drop, _run, figure, server_environment, stop_group

ROOT = Path(__file__).resolve().parent.parent
IMPORT_MIB = 512.0
WORKER_MIB = 512.0
NO_WORKER_WAIT = 120  # seconds for the worker's first heartbeat


def _database() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        return f"{url.rpartition('/')[0]}/ses_bench_memory"
    return f"sqlite:///{ROOT / 'var' / 'bench_memory.sqlite3'}"


def _prepare_run(base_url: str) -> dict:
    """In the subprocess: the 100 reports (``runs_bench``) and a judge configuration for the loopback server."""
    import django

    django.setup()
    from bench.runs_bench import CONCURRENCY, _reports
    from scoring.models import JudgeConfig

    tasks, systems = _reports()
    config = JudgeConfig.objects.create(name=f"bench-memory-{int(time.time())}", backend="openai", base_url=base_url,
                                        model="loopback", max_concurrency=CONCURRENCY, max_retries=0)
    return {"judge": config.name, "systems": ",".join(s.name for s in systems),
            "tasks": ",".join(t.key for t in tasks), "reports": len(systems) * len(tasks)}


def _import_peak(env: dict, datasets: Path) -> int:
    command = [sys.executable, "manage.py", "import_data", "reportbench",
               str(datasets / "reportbench" / "ReportBench_v1.1.jsonl")]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    with PeakRss(process.pid) as memory:
        _, err = process.communicate()
    if process.returncode != 0:
        raise BenchError(f"import_data reportbench failed:\n{err[-4000:]}")
    return memory.peak_of()


def _run_peak(env: dict, work_dir: Path) -> tuple[int, float, dict]:
    from tests.support.fake_openai import FakeOpenAIProcess

    server = FakeOpenAIProcess(latency=0.2, responder="labelled-checklist").start()
    log = work_dir / "celery.log"
    worker = None
    try:
        out = _run([sys.executable, "-m", "bench.memory_bench", "prepare-run", server.base_url], env, "prepare-run")
        run = json.loads(out.strip().splitlines()[-1])
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--queues=celery,exports", "--pool=threads", "--concurrency=8",
             "--hostname=bench-memory@%h", "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        evaluate = [sys.executable, "manage.py", "evaluate", "--protocol", "deepsynth", "--judge", run["judge"],
                    "--systems", run["systems"], "--tasks", run["tasks"], "--wait", "--poll", "0.5"]
        with PeakRss(worker.pid) as memory:
            deadline = time.monotonic() + NO_WORKER_WAIT
            while True:  # evaluate --wait refuses until the worker's first heartbeat is stored
                started = time.perf_counter()
                done = subprocess.run(evaluate, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
                if done.returncode == 0:
                    break
                if "worker" not in done.stderr.lower() or time.monotonic() > deadline or worker.poll() is not None:
                    raise BenchError(f"evaluate failed:\n{done.stderr[-3000:]}\n{log.read_text()[-3000:]}")
                time.sleep(1)
            seconds = time.perf_counter() - started
        stats = server.stats()
    finally:
        if worker is not None:
            stop_group(worker)
        server.stop()
    return memory.peak_of(), seconds, {**run, "calls": stats["requests"]}


def run_figures(*, quick: bool = False) -> list[dict]:
    url = _database()
    _drop(url)  # an empty database every time: the import is a first, full one
    work_dir = ROOT / "var" / "bench-memory"
    work_dir.mkdir(parents=True, exist_ok=True)
    env = server_environment(database_url=url, work_dir=work_dir)
    env.update(CELERY_BROKER_URL="filesystem://", WORKER_HEARTBEAT_SECONDS="1")
    _run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], env, "migrate")
    import_peak = _import_peak(env, bench_dataset())
    worker_peak, seconds, run = _run_peak(env, work_dir)
    print(f"    {run['reports']} reports, {run['calls']} judge calls in {seconds:.1f} s", flush=True)
    return [
        figure("import_data reportbench (whole release), process peak RSS", import_peak / MiB, IMPORT_MIB, "MiB"),
        figure(f"Celery worker (8 threads), {run['reports']}-report run, peak RSS", worker_peak / MiB, WORKER_MIB,
               "MiB"),
    ]


FIGURES = [("import and Celery worker peak RSS", run_figures)]
BENCHMARKS: list = []


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "prepare-run":
        sys.path.insert(0, str(ROOT))
        print(json.dumps(_prepare_run(sys.argv[2])))
    else:
        raise SystemExit("usage: python -m bench --only memory")
