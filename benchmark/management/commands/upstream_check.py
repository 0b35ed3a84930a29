"""Import each benchmark repository, as cloned, whole into a fresh database and print the table
``docs/formats.md`` keeps (``make upstream-check UPSTREAM_DIR=...``).

Each repository runs in its own process on its own fresh SQLite database (migrated once, then
copied), so its time and peak memory (the child's max RSS, from ``wait4``) are its own.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count, Q
from django.test.utils import override_settings

from benchmark.importers.base import ImportFailed
from benchmark.importers.catalogue import run_import
from benchmark.importers.upstream import REPOSITORIES, OpenedFiles, Table, clone_files, repository_find, unread_kind


class Command(BaseCommand):
    help = "Import the five benchmark repositories, as cloned in UPSTREAM_DIR, into fresh databases; print the table."

    def add_arguments(self, parser):
        parser.add_argument("upstream_dir", help="the folder holding the clones (SurveyLens, ReportBench, ...)")
        parser.add_argument("--only", action="append", default=[], help="repository name (repeatable)")
        parser.add_argument("--json", dest="json_out", default="", help="also write the tables as JSON here")
        parser.add_argument("--child", default="", help=argparse_hidden())
        parser.add_argument("--out", default="", help=argparse_hidden())

    def handle(self, *args, upstream_dir: str, only: list[str], json_out: str, child: str, out: str, **options):
        if child:
            return self._child(child, Path(upstream_dir), Path(out))
        upstream = Path(upstream_dir)
        if not upstream.is_dir():
            raise CommandError(f"no such folder: {upstream}")
        wanted = [r for r in REPOSITORIES if not only or r.name.lower() in {o.lower() for o in only}]
        tables = []
        with tempfile.TemporaryDirectory(prefix="upstream-check-") as scratch:
            template = Path(scratch) / "template.sqlite3"
            self.stderr.write("migrating a fresh SQLite database ...")
            subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], check=True,
                           env=os.environ | {"DATABASE_URL": f"sqlite:///{template}"})
            for repository in wanted:
                table = Table(repository)
                clone = repository_find(upstream, repository)
                if clone is None:
                    table.found = False
                else:
                    self.stderr.write(f"importing {clone} ...")
                    self._run(table, clone, template, Path(scratch))
                tables.append(table)
                self.stdout.write(table.markdown() + "\n")
        if json_out:
            Path(json_out).write_text(json.dumps([t.__dict__ | {"repository": t.repository.name, "unread": dict(t.unread)}
                                                  for t in tables], indent=1, default=str), encoding="utf-8")

    def _run(self, table: Table, clone: Path, template: Path, scratch: Path) -> None:
        files = clone_files(clone)
        table.files = len(files)
        if (clone / ".git").exists():
            absent = subprocess.run(["git", "-C", str(clone), "ls-files", "--deleted"], capture_output=True, text=True)
            table.absent = [line for line in absent.stdout.splitlines() if line]
        database = scratch / f"{clone.name}.sqlite3"
        shutil.copy(template, database)
        report = scratch / f"{clone.name}.json"
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "manage.py", "upstream_check", str(clone), "--child", table.repository.name,
             "--out", str(report)],
            env=os.environ | {"DATABASE_URL": f"sqlite:///{database}"},
        )
        _, status, usage = os.wait4(process.pid, 0)
        table.seconds = time.monotonic() - started
        table.peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
        if not report.exists():
            table.steps = [{"format": "-", "path": ".", "status": f"crashed (exit status {status >> 8})"}]
            return
        data = json.loads(report.read_text(encoding="utf-8"))
        for key in ("steps", "tasks", "reports", "empty_reports", "preferences", "empty_preferences"):
            setattr(table, key, data[key])
        opened = set(data["opened"])
        table.skipped = [tuple(s) for s in data["skipped"]]
        opened_named = [(f, r) for f, r in data["named"] if str((clone / f).resolve()) not in opened]
        table.skipped += [tuple(s) for s in opened_named if tuple(s) not in table.skipped]
        named = {clone / f for f, _ in table.skipped}
        for path in files:
            if str(path.resolve()) in opened:
                table.read += path not in named
            elif path not in named:
                table.unread[unread_kind(path, clone)] += 1

    def _child(self, name: str, clone: Path, out: Path) -> None:
        repository = next(r for r in REPOSITORIES if r.name == name)
        opened = OpenedFiles(clone)
        steps, skipped, named = [], [], []
        with override_settings(DEBUG=False):  # DEBUG keeps every query's SQL in memory
            for format_name, relative in repository.steps:
                path = clone / relative
                step = {"format": format_name, "path": relative}
                if not path.exists():
                    steps.append(step | {"status": f"no {relative}/ in the clone"})
                    continue
                try:
                    result = run_import(format_name, path)
                except ImportFailed as exc:
                    steps.append(step | {"status": "failed, nothing stored", "error": str(exc)})
                    continue
                base = path if path.is_dir() else path.parent
                for row in result.system_rows():
                    skipped.extend((_inside(clone, base, s["file"]), s["reason"]) for s in row["skipped"])
                for message in result.messages:  # "<file>: not imported (why)" names a file too
                    file, _, reason = message.partition(": ")
                    inside = _inside(clone, base, file)
                    if reason and (clone / inside).is_file():
                        named.append((inside, reason))
                steps.append(step | {"status": "done", "counts": result.counts, "messages": len(result.messages)})
        opened.stop()
        Task, Report = apps.get_model("benchmark", "Task"), apps.get_model("benchmark", "Report")
        reports = Report.objects.values("system__name").annotate(n=Count("id")).order_by("system__name")
        # counted by name: the annotation app sits above benchmark, so no import of its models here
        Preference = apps.get_model("annotation", "PairwisePreference")
        out.write_text(json.dumps({
            "steps": steps,
            "skipped": skipped,
            "named": named,
            "opened": sorted(opened.paths),
            "tasks": Task.objects.count(),
            "reports": {r["system__name"]: r["n"] for r in reports},
            "empty_reports": Report.objects.filter(stats__empty=True).count(),
            "preferences": Preference.objects.count(),
            "empty_preferences": Preference.objects.filter(Q(shown_left="") | Q(shown_right="")).count(),
        }), encoding="utf-8")


def _inside(clone: Path, base: Path, shown: str) -> str:
    """A file as the importer named it (relative to what it was given, or to its parent), as a path in the clone."""
    for root in (base, base.parent, clone):
        if (root / shown).exists():
            return (root / shown).relative_to(clone).as_posix()
    return shown


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS
