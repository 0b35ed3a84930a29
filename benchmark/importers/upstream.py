"""The five benchmark repositories as cloned, each imported whole: what to run on which folder,
and the table that says what came of it (``manage.py upstream_check``, ``make upstream-check``).

A repository's plan is a list of ``(format, folder inside the clone)`` steps, each one
``run_import``. What a step read is known from the files it opened (an audit hook on ``open``
watches the clone), so "files read" counts every importer alike; files not read are named with
the importer's reason where it gave one, else counted by kind (code, documentation, figures).
"""

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Repository:
    name: str  # the folder name of the clone, as GitHub names the repository
    github: str
    steps: tuple[tuple[str, str], ...]  # (import format, path inside the clone)
    note: str = ""


REPOSITORIES = [
    Repository("SurveyLens", "TechnicolorGUO/SurveyLens",
               (("surveylens", "results/processed"), ("surveylens-annotations", "human_annotation"))),
    Repository("deepscholar-bench", "guestrin-lab/deepscholar-bench", (("deepscholar", "."),)),
    Repository("ReportBench", "ByteDance-BandAI/ReportBench", (("reportbench", "."),)),
    Repository("DeepSynth-Eval", "Kwai-Klear/DeepSynth-Eval", (("deepsynth", "."),)),
    Repository("SciSage", "TechnicolorGUO/SciSage", (),
               note="the repository publishes SciSage's code; its benchmark (SurveyScope) is released on the "
                    "Hugging Face Hub, not here, so nothing in it is benchmark data"),
]


def repository_find(upstream_dir: Path, repository: Repository) -> Path | None:
    """The clone's folder in ``upstream_dir``, matched up to case."""
    for child in sorted(upstream_dir.iterdir()) if upstream_dir.is_dir() else []:
        if child.is_dir() and child.name.lower() == repository.name.lower():
            return child
    return None


def clone_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts)


class OpenedFiles:
    """Files under ``root`` the process opens from now on (``sys.addaudithook``; a hook cannot be
    removed, so ``stop`` makes it inert)."""

    def __init__(self, root: Path) -> None:
        self.root = str(root.resolve())
        self.paths: set[str] = set()
        self.active = True
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if self.active and event == "open" and args and isinstance(args[0], (str, Path)):
            path = str(Path(args[0]).resolve()) if not str(args[0]).startswith(self.root) else str(args[0])
            if path.startswith(self.root + "/"):
                self.paths.add(path)

    def stop(self) -> None:
        self.active = False


_KINDS = {
    ".py": "code", ".sh": "code", ".ipynb": "code", ".pyc": "code", ".toml": "build/config", ".cfg": "build/config",
    ".ini": "build/config", ".txt": "text", ".md": "documentation", ".pdf": "documentation", ".cff": "documentation",
    ".png": "figures", ".jpg": "figures", ".jpeg": "figures", ".svg": "figures", ".gif": "figures",
    ".html": "web page", ".json": "JSON", ".jsonl": "JSONL", ".csv": "CSV",
}


@dataclass
class Table:
    """One repository's row set, as ``docs/formats.md`` shows it."""

    repository: Repository
    found: bool = True
    files: int = 0
    absent: list[str] = field(default_factory=list)  # in the git tree, not in the checkout
    read: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, reason) named by an importer
    unread: Counter = field(default_factory=Counter)  # "folder (kind)" → files no step opened
    tasks: int = 0
    reports: dict[str, int] = field(default_factory=dict)
    empty_reports: int = 0
    preferences: int = 0
    empty_preferences: int = 0
    seconds: float = 0.0
    peak_mb: float = 0.0
    steps: list[dict] = field(default_factory=list)  # per step: format, path, status, counts, error

    def rows(self) -> list[tuple[str, str]]:
        if not self.found:
            return [("clone", "not found in the upstream folder")]
        reports = ", ".join(f"{name} {n}" for name, n in sorted(self.reports.items())) or "none"
        steps = "; ".join(f"`{s['format']} {s['path']}`: {s['status']}" + (f" ({s['error']})" if s.get("error") else "")
                          for s in self.steps) or self.repository.note
        unread = ", ".join(f"`{where}` {n}" for where, n in self.unread.most_common(10))
        if len(self.unread) > 10:
            unread += f", {sum(n for _, n in self.unread.most_common()[10:])} elsewhere"
        return [
            ("imports run", steps),
            ("files in the clone", f"{self.files}" + (f" (+{len(self.absent)} in git but absent from the checkout: "
                                                      + ", ".join(self.absent) + ")" if self.absent else "")),
            ("files read", str(self.read)),
            ("not read, named by the importer with the reason", self._skipped()),
            ("not read, no reason given (by folder and kind)", unread or "none"),
            ("tasks", str(self.tasks)),
            ("reports per system", reports + (f" ({self.empty_reports} empty, flagged)" if self.empty_reports else "")),
            ("preferences", f"{self.preferences}" + (f" ({self.empty_preferences} with an empty response)"
                                                     if self.empty_preferences else "")),
            ("time", f"{self.seconds:.1f} s"),
            ("peak memory (max RSS)", f"{self.peak_mb:.0f} MB"),
        ]

    def _skipped(self) -> str:
        """Skipped files by reason (a reason naming its file is its own group), each with one example."""
        by_reason: dict[str, list[str]] = {}
        for file, reason in self.skipped:
            by_reason.setdefault(reason, []).append(file)
        parts = [f"{len(files)} × {reason} (e.g. `{files[0]}`)" if len(files) > 1 else f"`{files[0]}`: {reason}"
                 for reason, files in sorted(by_reason.items(), key=lambda kv: -len(kv[1]))]
        return f"{len(self.skipped)}" + "".join(f"<br>{p}" for p in parts[:15]) + (
            f"<br>… {len(parts) - 15} more reasons" if len(parts) > 15 else "")

    def markdown(self) -> str:
        lines = [f"#### {self.repository.name} ({self.repository.github})", "", "| | |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in self.rows()]
        return "\n".join(lines)


def unread_kind(path: Path, clone: Path) -> str:
    """``dataset (CSV)``, ``core (code)``: where a file nobody read sits (two folders deep) and what it is."""
    folder = "/".join(path.relative_to(clone).parts[:-1][:2]) or "."
    return f"{folder} ({_KINDS.get(path.suffix.lower(), 'other')})"
