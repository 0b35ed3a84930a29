from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    name = "benchmark"
    verbose_name = "Benchmark data"

    def ready(self) -> None:
        from core.jobs import JobKind, job_kind_register

        from .models import ImportJob
        from .tasks import run_import_job

        job_kind_register(JobKind(ImportJob, run_import_job))
