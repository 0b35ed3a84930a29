"""Loaders for the real system outputs under ``shared/datasets`` (tests,
benchmarks and demos parse these).  Only the standard library is used.

The datasets folder is ``$SURVEY_EVAL_DATASETS`` when set, else
``$SHARED_DIR/datasets`` (the variable ``config.settings`` reads), else
``<repository>/../shared/datasets`` (how CI and the developers' machines lay
out the repository and ``shared/``)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DATASETS_ENV = "SURVEY_EVAL_DATASETS"


@dataclass(frozen=True, slots=True)
class Sample:
    name: str  # e.g. "deepscholar/storm/0", "deepsynth/2", "surveylens/Qwen"
    text: str
    format: str


def datasets_dir() -> Path:
    configured = os.environ.get(DATASETS_ENV)
    if configured:
        return Path(configured)
    shared = os.environ.get("SHARED_DIR")
    if shared:
        return Path(shared) / "datasets"
    return Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


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
    path = (root or datasets_dir()) / "deepsynth-eval" / "example_gen_result.jsonl"
    with path.open(encoding="utf-8") as handle:
        for row, line in enumerate(handle):
            if line.strip():
                yield Sample(f"deepsynth/{row}", json.loads(line).get("survey_result") or "", "text")


def deepscholar_samples(root: Path | None = None) -> Iterator[Sample]:
    base = (root or datasets_dir()) / "deepscholar-bench" / "system_outputs"
    for path in sorted(base.glob("*/*/*.md")):
        system, row = path.parent.parent.name, path.parent.name
        yield Sample(f"deepscholar/{system}/{row}", path.read_text(encoding="utf-8"), "markdown")


def surveylens_samples(root: Path | None = None) -> Iterator[Sample]:
    base = (root or datasets_dir()) / "surveylens" / "luciferase"
    for path in sorted(base.glob("*.json")):
        ssr = json.loads(path.read_text(encoding="utf-8"))
        yield Sample(f"surveylens/{path.stem}", ssr_to_markdown(ssr), "markdown")


def latex_related_work_samples(root: Path | None = None) -> Iterator[Sample]:
    """The human-written related-work sections (LaTeX-ish, ``\\cite{}``)."""
    path = (root or datasets_dir()) / "deepscholar-bench" / "papers_with_related_works.csv"
    csv.field_size_limit(1 << 30)
    with path.open(encoding="utf-8", newline="") as handle:
        for row, record in enumerate(csv.DictReader(handle)):
            yield Sample(f"deepscholar-latex/{row}", record.get("clean_latex_related_works") or "", "markdown")


def system_output_samples(root: Path | None = None) -> list[Sample]:
    """Every generated report in the datasets: DeepSynth surveys, the four
    DeepScholar systems' outputs and the SurveyLens SSR files."""
    return [*deepsynth_samples(root), *deepscholar_samples(root), *surveylens_samples(root)]
