from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from django.db.models import Q

        from benchmark.views import task_page_panel_register
        from core.jobs import JobKind, job_kind_register

        from .models import EvaluationRun, ProposalBatch, RunJob
        from .services.runs import run_jobs_resend
        from .tasks import execute_job, propose_batch
        from .views_proposals import proposal_panel

        task_page_panel_register(proposal_panel)  # the task page's "Propose with LLM" panel
        job_kind_register(JobKind(ProposalBatch, propose_batch))
        # Only the jobs of running runs; a marked run's pending jobs may never have reached the broker.
        job_kind_register(JobKind(
            RunJob, execute_job, scope=Q(run__status=EvaluationRun.Status.RUNNING), unsent=Q(run__jobs_unsent=True),
            enqueue=run_jobs_resend, recovered=_runs_recovered,
        ))


def _runs_recovered() -> dict[str, int]:
    # Imported on the first recovery (a worker's), not in ready(): scoring.services.batches imports the
    # openai client (openai, pydantic, httpx: ~45 MiB), which a web process never needs.
    from .services.batches import runs_recovered

    return runs_recovered()
