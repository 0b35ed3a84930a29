from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"

    def ready(self) -> None:
        from benchmark.views import task_page_panel_register
        from core.jobs import JobKind, job_kind_register

        from . import worker_signals  # noqa: F401  (connects the heartbeat to Celery's signals)
        from .models import ProposalBatch
        from .tasks import propose_batch
        from .views_proposals import proposal_panel

        task_page_panel_register(proposal_panel)  # the task page's "Propose with LLM" panel
        job_kind_register(JobKind(ProposalBatch, ProposalBatch.Status.RUNNING, ProposalBatch.Status.PENDING, propose_batch))
