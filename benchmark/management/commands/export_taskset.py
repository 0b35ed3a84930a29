import shutil
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.services.bundles import HUGGINGFACE, taskset_dataset_write
from benchmark.services.tasksets import TaskSetError, taskset_export, taskset_get


class TaskSetCommand(BaseCommand):
    """A command on one task set version: ``<name> [--version N]`` (also used by ``freeze_taskset``)."""

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Our --version is the task set's version; it replaces Django's "show the Django version".
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--version", type=int, help="version number (default: the latest)")


class Command(TaskSetCommand):
    help = (
        "Write a task set as native JSONL (docs/formats.md): a frozen version's snapshot, "
        "an unfrozen version's live tasks; or, with --format huggingface, a frozen version as a "
        "Hugging Face dataset folder (Parquet files and README.md) to publish with hf upload."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--format", choices=["native", HUGGINGFACE], default="native",
                            help="native JSONL (default) or a Hugging Face dataset folder (needs -o FOLDER)")
        parser.add_argument("--include-history", action="store_true", help="add each item's revision history")
        parser.add_argument("-o", "--output", help="file to write (default: standard output); with --format "
                            "huggingface, a new or empty folder")

    def handle(self, *args, name: str, version: int | None, include_history: bool, output: str | None, **options):
        if options["format"] == HUGGINGFACE:
            return self.dataset(name, version, include_history, output)
        try:
            task_set = taskset_get(name=name, version=version)
            text = taskset_export(task_set=task_set, include_history=include_history)
        except TaskSetError as exc:
            raise CommandError(str(exc)) from None
        if output:
            Path(output).write_text(text, encoding="utf-8")
            state = f"frozen, sha256 {task_set.content_hash}" if task_set.is_frozen else "not frozen: live tasks"
            self.stderr.write(f"wrote {task_set} ({text.count(chr(10))} tasks, {state}) to {output}")
        else:
            self.stdout.write(text, ending="")

    def dataset(self, name: str, version: int | None, include_history: bool, output: str | None) -> None:
        if include_history:
            raise CommandError("--include-history: the Hugging Face format carries no review history")
        if not output:
            raise CommandError("--format huggingface writes a folder: name it with -o FOLDER")
        folder = Path(output)
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise CommandError(f"{folder} exists and is not an empty folder; name a new one")
        try:
            task_set = taskset_get(name=name, version=version)
            if not task_set.is_frozen:
                raise CommandError(f"{task_set} is not frozen; freeze it first (manage.py freeze_taskset)")
        except TaskSetError as exc:
            raise CommandError(str(exc)) from None
        created = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        try:
            rows = taskset_dataset_write(task_set=task_set, folder=folder)
        except BaseException as exc:
            # No half-written dataset left to upload by mistake; the folder was new or empty.
            shutil.rmtree(folder, ignore_errors=True)
            if not created:
                folder.mkdir()
            if isinstance(exc, ValueError):
                raise CommandError(str(exc)) from None
            raise
        counts = ", ".join(f"{config} {n}" for config, n in rows.items())
        self.stderr.write(f"wrote {task_set} (sha256 {task_set.content_hash}) as a Hugging Face dataset to {folder}: "
                          f"{counts} rows; publish it with: hf upload <user>/<dataset> {folder} --repo-type dataset "
                          "(docs/formats.md)")
