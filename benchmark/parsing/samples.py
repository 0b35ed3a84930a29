"""Loaders for the real system outputs in the datasets folder (tests,
benchmarks and demos parse these).  Only the standard library is used.

The folder is ``benchmark.datasets.datasets_dir()``: ``$DATASETS_DIR`` when
set, else the repository's ``datasets/``."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..datasets import DATASETS_ENV, dataset_path, datasets_dir

__all__ = ["DATASETS_ENV", "Sample", "datasets_dir", "deepscholar_samples", "deepsynth_samples",
           "latex_related_work_samples", "ssr_to_markdown", "surveylens_samples", "system_output_samples"]


@dataclass(frozen=True, slots=True)
class Sample:
    name: str  # e.g. "deepscholar/storm/0", "deepsynth/2", "surveylens/Qwen"
    text: str
    format: str


def ssr_to_markdown(ssr: dict) -> str:
    """A SurveyLens Structured Survey Representation as one markdown report:
    ``#``-headings by level, the section contents, then ``# References``
    with one entry per line."""
    parts = []
    for section in ssr.get("content", []):
        parts.append("#" * max(1, int(section.get("level") or 1)) + " " + str(section.get("heading", "")))
        if section.get("content"):
            parts.append(section["content"])
    references = ssr.get("references") or []
    if references:
        parts.append("# References")
        parts.append("\n".join(str(r.get("text", "")) for r in references))
    return "\n\n".join(parts) + "\n"


def deepsynth_samples(root: Path | None = None) -> Iterator[Sample]:
    path = dataset_path("deepsynth-eval/example_gen_result.jsonl", root=root)
    with path.open(encoding="utf-8") as handle:
        for row, line in enumerate(handle):
            if line.strip():
                yield Sample(f"deepsynth/{row}", json.loads(line).get("survey_result") or "", "text")


def deepscholar_samples(root: Path | None = None) -> Iterator[Sample]:
    base = dataset_path("deepscholar-bench/system_outputs", root=root)
    for path in sorted(base.glob("*/*/*.md")):
        system, row = path.parent.parent.name, path.parent.name
        yield Sample(f"deepscholar/{system}/{row}", path.read_text(encoding="utf-8"), "markdown")


def surveylens_samples(root: Path | None = None) -> Iterator[Sample]:
    base = dataset_path("surveylens/luciferase", root=root)
    for path in sorted(base.glob("*.json")):
        ssr = json.loads(path.read_text(encoding="utf-8"))
        yield Sample(f"surveylens/{path.stem}", ssr_to_markdown(ssr), "markdown")


def latex_related_work_samples(root: Path | None = None) -> Iterator[Sample]:
    """The human-written related-work sections (LaTeX-ish, ``\\cite{}``)."""
    path = dataset_path("deepscholar-bench/papers_with_related_works.csv", root=root)
    csv.field_size_limit(1 << 30)
    with path.open(encoding="utf-8", newline="") as handle:
        for row, record in enumerate(csv.DictReader(handle)):
            yield Sample(f"deepscholar-latex/{row}", record.get("clean_latex_related_works") or "", "markdown")


def system_output_samples(root: Path | None = None) -> list[Sample]:
    """Every generated report in the datasets: DeepSynth surveys, the four
    DeepScholar systems' outputs and the SurveyLens SSR files."""
    return [*deepsynth_samples(root), *deepscholar_samples(root), *surveylens_samples(root)]
