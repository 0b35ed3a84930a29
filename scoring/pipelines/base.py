"""The interface every evaluation protocol's pipeline implements, and the registry of pipelines.

A pipeline turns a report into stored verdicts and stored verdicts into scores:

* ``steps_for(report)`` names the job steps a run makes for one report (one ``RunJob`` each);
* ``run_step(run=, report=, step=, judge=)`` asks the judge and stores ``Verdict`` rows,
  reusing finished verdicts so that a re-run of the same configuration makes no call;
* ``score_report(run=, report=)`` computes the report's metrics from stored verdicts only
  (never calls a judge), returning ``{"metrics": {...}, "items_judged": n, "items_failed": m}``;
* ``score_system(report_scores=)`` aggregates report scores to one system-level score;
* ``compare_systems(system_scores=)`` completes the system-level scores of one run with what
  depends on the systems compared together (DeepScholar's geometric mean over the metrics
  every system has), in place; ``{system id: score}``.

The run services (``scoring.services.runs``) never know which protocol they run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from importlib import import_module
from numbers import Real
from typing import Any, Protocol as TypingProtocol

from scoring.judges.base import Judge, JudgeAnswer


class Pipeline(TypingProtocol):
    protocol: str

    def steps_for(self, report) -> list[str]: ...

    def run_step(self, *, run, report, step: str, judge: Judge) -> None: ...

    def score_report(self, *, run, report) -> dict: ...

    def score_system(self, *, report_scores: Sequence[dict]) -> dict: ...

    def compare_systems(self, *, system_scores: dict) -> None: ...


class BasePipeline:
    """Shared behaviour: system-level aggregation and LLM-call recording."""

    protocol = ""

    def compare_systems(self, *, system_scores: dict) -> None:
        """Nothing depends on the other systems of the run by default."""

    def score_system(self, *, report_scores: Sequence[dict]) -> dict:
        """System score = the mean of each numeric report-level metric over the reports where it
        is defined (``None`` is skipped, not counted as 0); ``reports_with`` says how many
        reports each mean is over, so a mean over 1 of 10 reports is visible as such."""
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        keys: list[str] = []
        for score in report_scores:
            for key, value in score["metrics"].items():
                if key not in counts:
                    keys.append(key)
                    sums[key], counts[key] = 0.0, 0
                if isinstance(value, Real) and not isinstance(value, bool):
                    sums[key] += float(value)
                    counts[key] += 1
        metrics: dict[str, Any] = {key: (sums[key] / counts[key] if counts[key] else None) for key in keys}
        metrics["reports"] = len(report_scores)
        metrics["reports_with"] = counts
        # the metric variants the run computed (one per run: its judge configuration's options)
        variants = next((s["metrics"]["variants"] for s in report_scores if isinstance(s["metrics"].get("variants"), dict)),
                        None)
        if variants is not None:
            metrics["variants"] = variants
        return {
            "metrics": metrics,
            "items_judged": sum(s["items_judged"] for s in report_scores),
            "items_failed": sum(s["items_failed"] for s in report_scores),
        }


def variant_option(config, name: str, allowed: Sequence[str]) -> str:
    """Which variant of metric ``name`` a run computes: the judge configuration's
    ``options["variants"][name]``, by default the paper's (``allowed[0]``); the released code's
    behaviour is reproducible by name ("upstream") and shown on the score cards."""
    chosen = ((getattr(config, "options", None) or {}).get("variants") or {}).get(name, allowed[0])
    if chosen not in allowed:
        raise ValueError(f"judge configuration option variants.{name} must be one of {', '.join(allowed)}; got {chosen!r}")
    return chosen


def call_recorder():
    """The judges' ``record_call(answer, *, judge_config, step, run=None) -> LLMCall`` (from
    ``scoring.judges.records``, or re-exported by ``scoring.judges``), or ``None`` while the
    judges package does not provide it: calls are then not stored as ``LLMCall`` rows, and
    verdicts still carry their share of tokens, latency and cost."""
    for name in ("scoring.judges.records", "scoring.judges"):
        try:
            recorder = getattr(import_module(name), "record_call", None)
        except ImportError:
            continue
        if recorder is not None:
            return recorder
    return None


def record_answer(answer: JudgeAnswer, *, run, step: str):
    recorder = call_recorder()
    if recorder is None:
        return None
    return recorder(answer, judge_config=run.judge_config, step=step, run=run)


def fingerprint(*parts: Any) -> str:
    """A short hash of what a verdict was asked about, so a verdict on changed text is not reused."""
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def split_evenly(total: int, n: int) -> list[int]:
    """``total`` split into ``n`` integer shares that add up to it (the first shares take the remainder)."""
    base, extra = divmod(int(total), n)
    return [base + (1 if i < extra else 0) for i in range(n)]


class _Registry(Mapping):
    """Protocol name → pipeline instance, each module imported on first use (like the importer catalogue)."""

    def __init__(self, targets: dict[str, str]) -> None:
        self._targets = targets
        self._instances: dict[str, Pipeline] = {}

    def __getitem__(self, protocol: str) -> Pipeline:
        if protocol not in self._instances:
            if protocol not in self._targets:
                raise KeyError(protocol)
            module, cls = self._targets[protocol].split(":")
            self._instances[protocol] = getattr(import_module(module), cls)()
        return self._instances[protocol]

    def __iter__(self) -> Iterator[str]:
        return iter(self._targets)

    def __len__(self) -> int:
        return len(self._targets)


# Add a protocol here: "protocol": "module:PipelineClass".
PIPELINES: Mapping[str, Pipeline] = _Registry(
    {
        "deepsynth": "scoring.pipelines.deepsynth:DeepSynthPipeline",
        "reportbench": "scoring.pipelines.reportbench:ReportBenchPipeline",
        "deepscholar": "scoring.pipelines.deepscholar.pipeline:DeepScholarPipeline",
        "surveylens": "scoring.pipelines.surveys.surveylens:SurveyLensPipeline",
        "surveyscope": "scoring.pipelines.surveys.surveyscope:SurveyScopePipeline",
    }
)


def pipeline_for(protocol: str) -> Pipeline:
    try:
        return PIPELINES[protocol]
    except KeyError:
        raise ValueError(
            f"no evaluation pipeline for protocol {protocol!r}; available: {', '.join(sorted(PIPELINES))}"
        ) from None
