"""The export job's constraints reject a bad row in the database (the model moved here from benchmark)."""

import pytest
from django.db import IntegrityError, transaction

from annotation.models import ExportJob
from tests import factories

pytestmark = pytest.mark.django_db

VIOLATIONS = {
    "exportjob_progress_bounded": dict(kind="taskset", progress_done=3, progress_total=2),
    "exportjob_done_has_file": dict(kind="taskset", status="done", file_path=""),
}


def test_every_constraint_has_a_violation_case():
    assert {c.name for c in ExportJob._meta.constraints} == set(VIOLATIONS)


@pytest.mark.parametrize("name", sorted(VIOLATIONS))
def test_constraint_rejects_a_bad_row(name):
    with pytest.raises(IntegrityError, match=name), transaction.atomic():
        ExportJob.objects.create(requested_by=factories.UserFactory(), **VIOLATIONS[name])
