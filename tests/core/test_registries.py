import pytest

from annotation.models import ExportJob
from benchmark.models import ImportJob, Report
from core.blind import blind_restrict
from core.jobs import job_kinds
from core.models import Job
from scoring.models import ProposalBatch, RunJob


def test_every_job_kind_a_worker_claims_by_hostname_is_registered_for_recovery():
    assert {kind.model for kind in job_kinds()} == {ExportJob, ImportJob, ProposalBatch, RunJob}
    assert all(issubclass(kind.model, Job) for kind in job_kinds())
    export = next(kind for kind in job_kinds() if kind.model is ExportJob)
    assert (ExportJob.running_status, ExportJob.queued_status, export.task.name) == (
        "running", "queued", "benchmark.run_export")
    assert (RunJob.running_status, RunJob.queued_status) == ("running", "pending")


def test_blind_mode_fails_closed_for_a_kind_nobody_registered():
    with pytest.raises(RuntimeError, match="no blind-mode rule registered for 'survey'"):
        blind_restrict("survey", Report.objects.none(), None)
