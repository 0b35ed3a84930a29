import pytest

from annotation.models import ExportJob
from benchmark.models import ImportJob, Report
from core.blind import blind_restrict
from core.jobs import job_kinds
from scoring.models import ProposalBatch


def test_every_job_kind_a_worker_claims_by_hostname_is_registered_for_recovery():
    assert {kind.model for kind in job_kinds()} == {ExportJob, ImportJob, ProposalBatch}
    export = next(kind for kind in job_kinds() if kind.model is ExportJob)
    assert (export.running, export.queued, export.task.name) == ("running", "queued", "benchmark.run_export")


def test_blind_mode_fails_closed_for_a_kind_nobody_registered():
    with pytest.raises(RuntimeError, match="no blind-mode rule registered for 'survey'"):
        blind_restrict("survey", Report.objects.none(), None)
