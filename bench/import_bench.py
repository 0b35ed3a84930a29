"""Full imports of the real public releases into an empty benchmark database.

Each setup empties the benchmark tables (not timed), then returns the timed import.
"""

from bench import bench_dataset


def _empty_benchmark_tables() -> None:
    from django.db import transaction

    from annotation.models import PairwisePreference
    from benchmark.models import BibEntry, Discipline, Report, Survey, System, Task
    from core.models import AuditLog

    with transaction.atomic():
        PairwisePreference.objects.all().delete()
        Report.objects.all().delete()
        Task.objects.all().delete()  # cascades to prompts, checklists, gold references, nuggets
        Survey.objects.all().delete()
        BibEntry.objects.all().delete()
        System.objects.all().delete()
        Discipline.objects.all().delete()
        AuditLog.objects.all().delete()


def _full_import(name: str, relative: str):
    def setup():
        from benchmark.importers.catalogue import run_import

        path = bench_dataset() / relative
        _empty_benchmark_tables()
        return lambda: run_import(name, path)

    return setup


BENCHMARKS = [
    ("ReportBench v1.1: 100 tasks + 16,204 gold lines, empty DB", 30.0,
     _full_import("reportbench", "reportbench/ReportBench_v1.1.jsonl")),
    ("DeepScholar-bench: 63 papers, citations, nuggets, 8 reports", 30.0,
     _full_import("deepscholar", "deepscholar-bench")),
]
