"""``python -m bench --against REV``: the web bench's loop rows for this tree and for another
revision, run in turns in one invocation, reported as ratios (this ÷ REV).

REV is exported with ``git archive`` into a temporary folder (no worktree is registered, so
nothing is left in ``.git`` if the process dies). Each side runs its own tree's
``bench.web_bench.measure`` and ``figures_of`` in a subprocess started in that tree (this file
run as a script, ``side`` mode) with the same interpreter, against a database of its own made
fresh for the comparison: ``<name>_against_this`` and ``<name>_against_rev`` on the PostgreSQL
server of ``DATABASE_URL``, else SQLite files in the temporary folder. The sides alternate —
this tree, REV, this tree, REV, … — ``rounds`` runs each; for every row measured in ms per
labelled item (sequential p50 and p95, concurrent p95 of the workspace POST, the REST label
with ``next`` and the REST batch) the table shows each side's median over its runs and their
ratio. The temporary folder and both PostgreSQL databases are removed afterwards, also after
Ctrl-C or SIGTERM (the running side gets one SIGINT and stops its gunicorn first).

Only the standard library is imported at module level: in ``side`` mode this file runs inside
REV's tree, where ``bench`` must be REV's package, not this one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIN_ROUNDS = 3
MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
SIDE_STOP_SECONDS = 90  # a side stopping on SIGINT stops its gunicorn (up to 30 s + 10 s) first


class AgainstError(RuntimeError):
    """The comparison cannot run; the message says what to fix."""


@dataclass(frozen=True)
class Side:
    name: str  # "this tree" or the revision as given
    tree: Path
    database_url: str
    work_dir: Path


def compared(rows: list[dict]) -> dict[str, float]:
    """The rows a comparison keeps: the loops' timings per labelled item (ms), by figure."""
    return {row["figure"]: row["value"] for row in rows if row["unit"] == "ms" and row["figure"].endswith("per item")}


def ratio_rows(this_runs: list[dict[str, float]], rev_runs: list[dict[str, float]]) -> list[dict]:
    """Per figure, each side's median over its runs and this ÷ REV (None when a side lacks it)."""
    figures = list(dict.fromkeys(name for run in this_runs + rev_runs for name in run))
    table = []
    for name in figures:
        this = [run[name] for run in this_runs if name in run]
        rev = [run[name] for run in rev_runs if name in run]
        this_median = statistics.median(this) if this else None
        rev_median = statistics.median(rev) if rev else None
        ratio = this_median / rev_median if this_median is not None and rev_median else None
        table.append({"figure": name, "this_median": this_median, "rev_median": rev_median, "ratio": ratio,
                      "this_runs": this, "rev_runs": rev})
    return table


def format_table(table: list[dict], rev: str, unit: str = " ms") -> str:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    width = max([len(row["figure"]) for row in table] + [6])
    head = f"{rev}{unit}"
    lines = [f"{'figure':<{width}} {'this' + unit:>10} {head:>12} {'this/REV':>9}"]
    for row in table:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(f"{row['figure']:<{width}} {ms(row['this_median']):>10} {ms(row['rev_median']):>12} {ratio:>9}")
    return "\n".join(lines)


def resolve(rev: str) -> str:
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise AgainstError(f"--against {rev}: no such commit in {ROOT}")
    return done.stdout.strip()


def export_tree(commit: str, folder: Path) -> None:
    """REV's files (tracked only) into ``folder``; no worktree registered, nothing to prune."""
    folder.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=ROOT, stdout=subprocess.PIPE)
    extract = subprocess.run(["tar", "-x", "-C", str(folder)], stdin=archive.stdout, capture_output=True)
    archive.stdout.close()
    if archive.wait() != 0 or extract.returncode != 0:
        raise AgainstError(f"could not export {commit} into {folder}: {extract.stderr.decode()[-500:]}")


def side_databases(database_url: str, scratch: Path) -> dict[str, str]:
    """Each side's database: next to ``DATABASE_URL``'s on its PostgreSQL server, else SQLite in ``scratch``."""
    if database_url.startswith("postgres"):
        base, _, name = database_url.rpartition("/")
        return {side: f"{base}/{name}_against_{side}" for side in ("this", "rev")}
    return {side: f"sqlite:///{scratch / f'{side}.sqlite3'}" for side in ("this", "rev")}


def _postgres(database_url: str, *statements: str) -> None:
    import psycopg

    base, _, _ = database_url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def fresh_database(database_url: str) -> None:
    if database_url.startswith("postgres"):
        name = database_url.rpartition("/")[2]
        _postgres(database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')


def drop_database(database_url: str) -> None:
    if database_url.startswith("postgres"):
        _postgres(database_url, f'DROP DATABASE IF EXISTS "{database_url.rpartition("/")[2]}" WITH (FORCE)')


def run_side(side: Side, load: dict, log: Path) -> dict[str, float]:
    """One run of ``side``'s web bench at ``load`` (a WebLoad's fields); its compared rows.

    The subprocess has a session of its own so that a terminal's Ctrl-C reaches only this
    process, which then sends it exactly one SIGINT and waits while it stops its gunicorn."""
    spec = json.dumps({"database_url": side.database_url, "work_dir": str(side.work_dir), "load": load,
                       "label": "postgresql" if side.database_url.startswith("postgres") else "sqlite"})
    with log.open("w") as stderr:
        child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "side", spec], cwd=side.tree,
                                 stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True)
        try:
            out, _ = child.communicate()
        except BaseException:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(SIDE_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            raise
    errors = log.read_text()
    try:
        answer = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except json.JSONDecodeError:  # the side died before its answer: its stderr says why
        answer = {}
    missing = answer.get("missing_module") or (m.group(1) if (m := MISSING_MODULE.search(errors)) else None)
    if missing:
        raise AgainstError(f"{side.name} ({side.tree}) cannot run with this interpreter ({sys.executable}): "
                           f"no module named {missing!r} — it needs a dependency this .venv lacks")
    if child.returncode != 0 or "rows" not in answer:
        raise AgainstError(f"the web bench of {side.name} failed (exit {child.returncode}):\n{errors[-3000:]}")
    return compared(answer["rows"])


def p50_summary(rows: dict[str, float]) -> str:
    p50 = ", ".join(f"{name.split(', ')[-1].split(':')[0]} {value:.2f}"
                    for name, value in rows.items() if name.endswith("sequential p50 per item"))
    return f"sequential p50 ms per item: {p50}"


def compare(rev: str, *, load: dict, rounds: int = MIN_ROUNDS, database_url: str = "",
            measure: Callable[[Side, dict, Path], dict[str, float]] = run_side,
            summary: Callable[[dict[str, float]], str] = p50_summary,
            say: Callable[[str], None] = print) -> dict:
    """Alternate this tree and ``rev`` ``rounds`` times each; the ratio table and every run.
    ``measure`` runs one side (tests pass a fake one to check the order and the cleanup; the loop
    CPU comparison passes ``bench.loop_cpu.measure_side``), ``summary`` says what a run found."""
    commit = resolve(rev)
    scratch = Path(tempfile.mkdtemp(prefix="ses-bench-against-"))
    databases = side_databases(database_url, scratch)
    sides = [Side("this tree", ROOT, databases["this"], scratch / "work-this"),
             Side(rev, scratch / "tree", databases["rev"], scratch / "work-rev")]
    previous_sigterm = signal.signal(signal.SIGTERM, signal.default_int_handler)  # cleanup on `kill` too
    try:
        export_tree(commit, sides[1].tree)
        for side in sides:
            fresh_database(side.database_url)
        runs: dict[str, list[dict[str, float]]] = {"this": [], "rev": []}
        for round_number in range(1, rounds + 1):
            for key, side in zip(("this", "rev"), sides):
                started = time.monotonic()
                rows = measure(side, load, scratch / f"{key}-{round_number}.log")
                runs[key].append(rows)
                say(f"    round {round_number}/{rounds}, {side.name}: {summary(rows)} "
                    f"({time.monotonic() - started:.0f} s)")
        return {"rev": rev, "commit": commit, "rounds": rounds, "load": load,
                "table": ratio_rows(runs["this"], runs["rev"]), "runs": runs}
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        for side in sides:
            drop_database(side.database_url)
        shutil.rmtree(scratch, ignore_errors=True)


# --- side mode: runs inside one tree (this one or REV's), started by run_side ---------------------


def _side_main(spec: dict) -> int:
    sys.path[0] = os.getcwd()  # the tree's own packages, not this file's folder
    try:
        from bench import web_bench

        os.environ.update(web_bench.server_environment(database_url=spec["database_url"],
                                                       work_dir=Path(spec["work_dir"])))
        import django
        from django.conf import settings

        django.setup()
        __import__(settings.ROOT_URLCONF)  # every view's imports, before seeding anything
    except ModuleNotFoundError as exc:
        print(json.dumps({"missing_module": exc.name}))
        return 3
    load = web_bench.WebLoad(**spec["load"])
    url, work_dir = spec["database_url"], Path(spec["work_dir"])
    try:
        result = web_bench.measure(database_url=url, label=spec["label"], load=load, work_dir=work_dir)
    except web_bench.StaleSeed:  # too few open items left for this run: seed again, as `make bench` does
        web_bench._drop(url)
        result = web_bench.measure(database_url=url, label=spec["label"], load=load, work_dir=work_dir)
    print(json.dumps({"rows": web_bench.figures_of(result)}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "side":
        raise SystemExit(_side_main(json.loads(sys.argv[2])))
    raise SystemExit("usage: python -m bench --against REV [--quick] [--rounds N]")
