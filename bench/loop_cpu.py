"""``python -m bench --against REV --cpu``: the annotator loop's in-process CPU per labelled item,
this tree against REV, in turns (issue #39).

Wall-clock rows (``bench/against.py``) swing 2–3× on a shared machine; the CPU a request costs
the process serving it does not. Each run is one subprocess started in its tree (this file run
as a script, ``side`` mode, with the tree's folder first on ``sys.path``) that drives the tree
through ``django.test.Client`` with production settings (``DEBUG=0``; plain static storage, as
the manifest needs ``collectstatic``) as the probe annotator of the tree's own web seed
(``bench/seed_web.py``: verify items, ``per_task`` nuggets per task, 10 earlier labels each):

- the workspace POST as ``workspace.js`` sends it (``HX-Request``, ``X-Ws-Shown``: the answer is
  the item after the one shown), the REST label with ``next`` and the REST batch of 10 (claim
  and submit) — the tree's own ``bench.web_client.Browser`` loops, whose requests go through the
  test client here and are timed with ``time.process_time()``;
- per mode ``warmup`` untimed loops, then ``loops`` timed ones (a tenth of them for batches);
  per loop its CPU ms and statements per labelled item (``connection.execute_wrapper``); each
  figure is the median over the loops.

Each side's seed is written once into a database of its own (``against.compare`` makes it
fresh) and every run works on a copy of it (PostgreSQL ``CREATE DATABASE … TEMPLATE``, a file
copy on SQLite), so every run starts from the same rows; the copy is dropped after the run.

Only the standard library is imported at module level: in ``side`` mode this file runs inside
REV's tree, where ``bench`` is REV's package.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MODES = ("workspace POST", "REST label + next", "REST batch of 10")
CPU_FIGURE = "{mode}: CPU ms per item"
STATEMENTS_FIGURE = "{mode}: statements per item"
BATCH_SHARE = 10  # a batch loop labels 10 items: a tenth of the loops labels as many items


@dataclass(frozen=True)
class CpuLoad:
    loops: int = 100  # timed loops per mode (batches: a tenth)
    warmup: int = 10
    per_task: int = 100

    @property
    def items(self) -> int:
        """Items one run labels, rounded up to whole tasks, with a task to spare."""
        per_mode = self.warmup + self.loops
        batches = self.warmup // BATCH_SHARE + 1 + max(1, self.loops // BATCH_SHARE)
        needed = 2 * per_mode + BATCH_SHARE * batches
        return (-(-needed // self.per_task) + 1) * self.per_task


QUICK = CpuLoad(loops=30, warmup=5)


def settings_environment(*, database_url: str, work_dir: Path) -> dict:
    """Production settings (DEBUG off) on ``database_url`` with the run's own var folder."""
    return dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", DEBUG="0",
                SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="testserver", DATABASE_URL=database_url,
                VAR_DIR=str(work_dir / "var"), STATIC_ROOT=str(work_dir / "static"), LOG_LEVEL="WARNING")


# --- the parent: one side's run, called by against.compare in turns ---------------------------


def run_copy(database_url: str) -> str:
    """The database a run works on: a copy of the side's seeded one."""
    if database_url.startswith("postgres"):
        return f"{database_url}_run"
    return database_url.removesuffix(".sqlite3") + "-run.sqlite3"


def copy_database(seeded: str, copy: str) -> None:
    from bench import against

    if seeded.startswith("postgres"):
        against.drop_database(copy)
        against._postgres(seeded, f'CREATE DATABASE "{copy.rpartition("/")[2]}" '
                                  f'TEMPLATE "{seeded.rpartition("/")[2]}"')
    else:
        shutil.copyfile(seeded.removeprefix("sqlite:///"), copy.removeprefix("sqlite:///"))


def drop_copy(copy: str) -> None:
    from bench import against

    if copy.startswith("postgres"):
        against.drop_database(copy)
    else:
        Path(copy.removeprefix("sqlite:///")).unlink(missing_ok=True)


def _side(side, action: str, spec: dict, log: Path) -> dict:
    """This file in ``side``'s tree, ``action`` (``seed`` or ``measure``); its JSON answer."""
    from bench import against

    with log.open("a") as stderr:
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "side", action, json.dumps(spec)],
                              cwd=side.tree, stdout=subprocess.PIPE, stderr=stderr, text=True)
    out = done.stdout.strip()
    answer = json.loads(out.splitlines()[-1]) if out else {}
    if answer.get("missing_module"):
        raise against.AgainstError(f"{side.name} ({side.tree}) cannot run with this interpreter ({sys.executable}): "
                                   f"no module named {answer['missing_module']!r}")
    if done.returncode != 0 or "error" in answer or not answer:
        raise against.AgainstError(f"the loop CPU {action} of {side.name} failed (exit {done.returncode}):\n"
                                   f"{answer.get('error', '')}{log.read_text()[-3000:]}")
    return answer


def measure_side(side, load: dict, log: Path) -> dict[str, float]:
    """One run of ``side``: seed its database on its first run, measure on a copy, drop the copy.
    The load average at the start and the end of the run are rows of their own."""
    side.work_dir.mkdir(parents=True, exist_ok=True)
    spec = {"load": load, "work_dir": str(side.work_dir)}
    seeded = side.work_dir / "seeded"
    if not seeded.exists():
        _side(side, "seed", {**spec, "database_url": side.database_url}, log)
        seeded.touch()
    copy = run_copy(side.database_url)
    start_load = os.getloadavg()[0]
    try:
        copy_database(side.database_url, copy)
        answer = _side(side, "measure", {**spec, "database_url": copy}, log)
    finally:
        drop_copy(copy)
    return {**answer["figures"], "load average at start": start_load, "load average at end": os.getloadavg()[0]}


def summary(rows: dict[str, float]) -> str:
    cpu = ", ".join(f"{mode} {rows[CPU_FIGURE.format(mode=mode)]:.2f}" for mode in MODES
                    if CPU_FIGURE.format(mode=mode) in rows)
    return (f"CPU ms per item: {cpu}; load average {rows.get('load average at start', 0):.1f} → "
            f"{rows.get('load average at end', 0):.1f}")


# --- side mode: runs inside one tree (this one or REV's) --------------------------------------


def _django(spec: dict) -> None:
    work_dir = Path(spec["work_dir"])
    (work_dir / "static").mkdir(parents=True, exist_ok=True)  # whitenoise warns of a missing one
    os.environ.update(settings_environment(database_url=spec["database_url"], work_dir=work_dir))
    import django
    from django.conf import settings

    django.setup()
    from django.test.utils import override_settings

    storages = {**settings.STORAGES,
                "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    override_settings(STORAGES=storages).enable()
    __import__(settings.ROOT_URLCONF)  # every view's imports, before anything is timed


def _seed(load: CpuLoad) -> dict:
    from django.core.management import call_command

    from bench import seed_web

    call_command("migrate", verbosity=0, interactive=False)
    seed_web.NUGGETS_PER_TASK = load.per_task
    return seed_web.seed(seed_web.SeedSpec(items=load.items, annotators=1, dashboard_tasks=0), pages=False)


def _test_client_browser():
    """The tree's own ``Browser`` whose requests go through ``django.test.Client``: their
    seconds are the CPU seconds of this process, and it counts their statements."""
    from django.db import connection
    from django.test import Client

    from urllib.parse import urlencode

    from bench import web_client

    class TestClientBrowser(web_client.Browser):
        def __init__(self, client: Client) -> None:
            self.client, self.cookies, self.panel, self.held, self.statements = client, {}, None, None, 0

        def _timed(self, method: str, path: str, **kwargs):
            def counted(execute, sql, params, many, context):
                self.statements += 1
                return execute(sql, params, many, context)

            with connection.execute_wrapper(counted):
                start = time.process_time()
                response = getattr(self.client, method.lower())(path, secure=True, **kwargs)
                cpu = time.process_time() - start
            return response, cpu

        def request(self, method, path, *, data=None, htmx=False, extra=None):
            headers = {**(extra or {}), **({"HX-Request": "true"} if htmx else {})}
            body = {} if data is None else {"data": urlencode(data),
                                            "content_type": "application/x-www-form-urlencoded"}
            response, cpu = self._timed(method, path, headers=headers, **body)
            return response.status_code, response.content.decode(), cpu

        def api(self, method, path, body):
            response, cpu = self._timed(method, path, data=json.dumps(body), content_type="application/json")
            return response.status_code, json.loads(response.content or b"null"), cpu

    return TestClientBrowser


def _measure(load: CpuLoad, profile: str | None = None) -> dict:
    """Each mode's median CPU ms and statements per item; with ``profile``, each mode's timed
    loops run under cProfile (CPU timer) and its stats go to ``<profile>-<mode>.prof``."""
    import cProfile
    import gc

    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotation.models import AnnotationProject
    from bench import seed_web

    project_id = AnnotationProject.objects.get(name=seed_web.PROJECT).pk
    probe = get_user_model().objects.get(username=seed_web.PROBE)
    browser_class = _test_client_browser()
    figures = {}
    for mode, method in zip(MODES, ("workspace_loop", "rest_loop", "rest_batch_loop")):
        client = Client()
        client.force_login(probe)
        browser = browser_class(client)
        if mode == "workspace POST":
            browser.open_workspace(project_id)
        share = BATCH_SHARE if mode == "REST batch of 10" else 1
        for _ in range(max(1, load.warmup // share)):
            getattr(browser, method)(project_id)
        gc.collect()
        cpu, statements = [], []
        profiler = cProfile.Profile(time.process_time) if profile else None
        for _ in range(max(1, load.loops // share)):
            before = browser.statements
            if profiler:
                profiler.enable()
            seconds, items = getattr(browser, method)(project_id)
            if profiler:
                profiler.disable()
            cpu.append(1000 * seconds / items)
            statements.append((browser.statements - before) / items)
        if profiler:
            profiler.dump_stats(f"{profile}-{mode.split()[0].lower()}{'-batch' if share > 1 else ''}.prof")
        figures[CPU_FIGURE.format(mode=mode)] = statistics.median(cpu)
        figures[STATEMENTS_FIGURE.format(mode=mode)] = statistics.median(statements)
    return {"figures": figures}


def _side_main(action: str, spec: dict) -> int:
    sys.path[0] = os.getcwd()  # the tree's own packages, not this file's folder
    try:
        _django(spec)
        __import__("bench.web_client")  # REV must have the loops this file drives
    except ModuleNotFoundError as exc:
        print(json.dumps({"missing_module": exc.name}))
        return 3
    load = CpuLoad(**spec["load"])
    print(json.dumps(_seed(load) if action == "seed" else _measure(load, spec.get("profile"))))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "side":
        raise SystemExit(_side_main(sys.argv[2], json.loads(sys.argv[3])))
    raise SystemExit("usage: python -m bench --against REV --cpu [--quick] [--rounds N]")
