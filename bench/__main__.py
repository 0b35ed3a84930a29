"""`make bench`: run every ``bench/*_bench.py`` module's BENCHMARKS and print one table.

Each benchmark is ``(name, target_seconds, setup)``; ``setup()`` builds its inputs (not
timed) and returns the callable that is timed. Every figure is the median of several
runs, printed next to its target and the ratio, and written to ``var/bench.json``.
Benchmarks that need the database get a dedicated, migrated database (``ses_bench``),
never the one holding your data.

A module may also define ``FIGURES = [(name, run)]`` for measurements that are not one timing
(percentiles, rates, counts, memory): ``run(quick=...)`` returns rows ``{"figure", "value",
"target" (None: reported only), "unit", "better": "lower" | "higher"}``, printed in the same
table. ``--quick`` asks those modules for a smaller size, for trying them out.

``--against REV`` runs only the web bench's loop rows, for this tree and for REV in turns, and
prints their ratios (``bench/against.py``); it writes ``var/bench_against.json``. With ``--cpu``
the rows are the loops' in-process CPU and statements per labelled item (``bench/loop_cpu.py``,
``var/bench_against_cpu.json``).
"""

import argparse
import importlib
import json
import os
import pkgutil
import statistics
import sys
import time
from pathlib import Path

from bench.against import MIN_ROUNDS

ROOT = Path(__file__).resolve().parent.parent


def _bench_database() -> None:
    """Point Django at a throwaway bench database on the PostgreSQL server in DATABASE_URL."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        import psycopg

        base, _, _ = url.rpartition("/")
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = 'ses_bench'").fetchone()
            if not exists:
                conn.execute("CREATE DATABASE ses_bench")
        os.environ["DATABASE_URL"] = f"{base}/ses_bench"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{ROOT / 'var' / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def discover(only: str | None) -> list[tuple[str, str, float, object]]:
    found = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if not info.name.endswith("_bench") or (only and only not in info.name):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        for name, target, setup in module.BENCHMARKS:
            found.append((info.name.removesuffix("_bench"), name, target, setup))
    return found


def discover_figures(only: str | None) -> list[tuple[str, object]]:
    found = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if not info.name.endswith("_bench") or (only and only not in info.name):
            continue
        module = importlib.import_module(f"bench.{info.name}")
        found.extend((info.name.removesuffix("_bench"), run) for _, run in getattr(module, "FIGURES", ()))
    return found


def ratio_of(value: float, target: float | None, better: str) -> float:
    """≤ 1 meets the target whichever way is better; a target of 0 is met only by 0."""
    if target is None:
        return float("nan")
    if better == "higher":
        return target / value if value else float("inf")
    if target == 0:
        return 0.0 if value == 0 else float("inf")
    return value / target


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only modules whose name contains this")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller sizes for the FIGURES modules (web, memory)")
    parser.add_argument("--against", metavar="REV",
                        help="the web loops' rows of this tree and of REV in turns, as ratios this ÷ REV")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS,
                        help=f"with --against: runs of each side (at least {MIN_ROUNDS})")
    parser.add_argument("--cpu", action="store_true",
                        help="with --against: the loops' in-process CPU and statements per item instead of wall time")
    parser.add_argument("--per-task", type=int, help="with --cpu: nuggets per task of the seed (default 100)")
    args = parser.parse_args(argv)
    if (args.cpu or args.per_task is not None) and args.against is None:
        parser.error("--cpu and --per-task go with --against")
    if args.per_task is not None and (not args.cpu or args.per_task < 1):
        parser.error("--per-task N (N ≥ 1) goes with --cpu")
    if args.against is not None:
        if args.only is not None and args.only not in "web_bench":
            parser.error(f"--against compares the web bench's rows only; --only {args.only} names another module")
        if args.rounds < MIN_ROUNDS:
            parser.error(f"--rounds {args.rounds}: --against needs at least {MIN_ROUNDS} runs of each side")
    elif args.rounds != MIN_ROUNDS:
        parser.error("--rounds goes with --against")
    return args


def run_against(args: argparse.Namespace) -> int:
    from dataclasses import asdict, replace

    from bench import against as against_rev
    from bench import loop_cpu
    from bench.web_bench import QUICK, TEN_THOUSAND

    if args.cpu:
        load = loop_cpu.QUICK if args.quick else loop_cpu.CpuLoad()
        load = replace(load, per_task=args.per_task or load.per_task)
        print(f"against {args.against}: the loops' in-process CPU, {load.loops} loops per mode after {load.warmup} "
              f"untimed, {load.items:,} items seeded, {load.per_task} per task, {args.rounds} runs of each side in "
              "turns (this tree first)", flush=True)
        kinds = {"measure": loop_cpu.measure_side, "summary": loop_cpu.summary}
    else:
        load = QUICK if args.quick else TEN_THOUSAND
        print(f"against {args.against}: the web loops at {load.items:,} items, {args.rounds} runs of each side in "
              "turns (this tree first)", flush=True)
        kinds = {}
    try:
        report = against_rev.compare(args.against, load=asdict(load), rounds=args.rounds,
                                     database_url=os.environ.get("DATABASE_URL", ""),
                                     say=lambda line: print(line, flush=True), **kinds)
    except against_rev.AgainstError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    what = "per labelled item, CPU ms and statements" if args.cpu else "ms per labelled item"
    print(f"medians of {args.rounds} alternating runs per side, {what} ({args.against} = {report['commit'][:12]})")
    print(against_rev.format_table(report["table"], args.against, unit="" if args.cpu else " ms"))
    out = ROOT / "var" / ("bench_against_cpu.json" if args.cpu else "bench_against.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **report},
                              indent=2))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


def main() -> int:
    args = arguments()
    sys.path.insert(0, str(ROOT))
    if args.against is not None:
        return run_against(args)
    _bench_database()
    rows = []
    print(f"{'layer':<10} {'figure':<58} {'median s':>10} {'target s':>9} {'ratio':>7}")
    for layer, name, target, setup in discover(args.only):
        timings = []
        for _ in range(args.repeat):
            run = setup()
            start = time.perf_counter()
            run()
            timings.append(time.perf_counter() - start)
        median = statistics.median(timings)
        ratio = median / target if target else float("nan")
        flag = "" if ratio <= 1 else "  OVER TARGET"
        print(f"{layer:<10} {name:<58} {median:>10.3f} {target:>9.2f} {ratio:>7.2f}{flag}", flush=True)
        rows.append({"layer": layer, "figure": name, "median_seconds": median, "runs": timings,
                     "target_seconds": target, "ratio": ratio})
    for layer, run in discover_figures(args.only):
        for row in run(quick=args.quick):
            ratio = ratio_of(row["value"], row["target"], row["better"])
            target = "-" if row["target"] is None else f"{row['target']:g}"
            flag = "  OVER TARGET" if ratio > 1 else ""
            print(f"{layer:<10} {row['figure'] + ' (' + row['unit'] + ')':<58} {row['value']:>10.3f} {target:>9} "
                  f"{ratio:>7.2f}{flag}", flush=True)
            rows.append({"layer": layer, **row, "ratio": ratio})
    out = ROOT / "var" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
