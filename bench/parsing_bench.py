"""Report-parser throughput on the real datasets (no database needed).

``BENCHMARKS``: (name, target seconds, setup); ``setup()`` loads the inputs
(not timed) and returns the zero-argument callable that is timed.  The timed
callable returns how many reports it parsed, so reports/second is that number
divided by the time.  Run ``python bench/parsing_bench.py`` for the median of
three runs of each.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark.datasets import DatasetsMissing  # noqa: E402
from benchmark.parsing import parse_report, samples  # noqa: E402


def _parse_all(load: Callable[[], list[samples.Sample]]) -> Callable[[], Callable[[], int]]:
    def setup() -> Callable[[], int]:
        try:
            inputs = [(s.text, s.format) for s in load()]
        except DatasetsMissing as exc:
            raise SystemExit(str(exc)) from None
        if not inputs:
            raise SystemExit(f"no inputs found under {samples.datasets_dir()}")

        def run() -> int:
            for text, fmt in inputs:
                parse_report(text, format=fmt)
            return len(inputs)

        return run

    return setup


def _five_megabytes() -> list[samples.Sample]:
    base = "\n\n".join(s.text for s in samples.deepscholar_samples())
    return [samples.Sample("5 MB of DeepScholar outputs", (base * (5_000_000 // len(base) + 1))[:5_000_000], "markdown")]


BENCHMARKS = [
    (
        "parse every real system output once (20 reports: DeepSynth, DeepScholar, SurveyLens); "
        "returns reports parsed",
        1.0,
        _parse_all(samples.system_output_samples),
    ),
    (
        "parse the 63 LaTeX related-work exemplars (DeepScholar CSV); returns reports parsed",
        1.0,
        _parse_all(lambda: list(samples.latex_related_work_samples())),
    ),
    ("parse one 5 MB markdown report; returns 1", 10.0, _parse_all(_five_megabytes)),
]


def main() -> None:
    for name, target, setup in BENCHMARKS:
        run = setup()
        times = []
        count = 0
        for _ in range(3):
            started = time.perf_counter()
            count = run()
            times.append(time.perf_counter() - started)
        median = statistics.median(times)
        verdict = "ok" if median <= target else "SLOWER THAN TARGET"
        print(f"{median:8.3f} s  (target {target:.1f} s, {count / median:,.1f} reports/s)  {verdict}  {name}")


if __name__ == "__main__":
    main()
