"""The loop's writes of its decisions (``store.PROPOSABLE_WRITES``: the UPDATE of the decided
benchmark rows, each only while still at its read version, and the audit INSERT) and of its
claims' audit rows (``store.audit_rows_insert``) held to their ORM twins
(``benchmark.services.history.ORM_WRITES``, ``core.audit.audit_log_rows``): the same rows
written, the same count, the same refusal when a row moved."""

import pytest
from django.db import transaction

from annotation.loop import store
from benchmark.models import ChecklistItem
from benchmark.services.history import (
    ORM_WRITES,
    ProposableMovedError,
    proposable_edit,
    proposable_edits_save,
    review_changes,
)
from core.audit import audit_log_rows
from core.audit_actions import AuditAction
from core.models import AuditLog
from tests.annotation_factories import annotator, checklist_task

TIMES = {"updated_at", "created_at"}  # each run stamps its own moment; checked against the instance instead


def _columns(row, *, without=()) -> dict:
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields if f.attname not in without}


def _written(rows: list, model) -> list[dict]:
    """Each row as stored, after checking it is stored as its instance holds it."""
    stored = {row.pk: row for row in model.objects.filter(pk__in=[row.pk for row in rows])}
    for row in rows:
        assert _columns(stored[row.pk]) == _columns(row)
    return [_columns(stored[row.pk], without={"id", *TIMES}) for row in rows]


def _rolled_back(run):
    with transaction.atomic():
        try:
            return run()
        finally:
            transaction.set_rollback(True)


@pytest.mark.parametrize("n_rows", [1, 3])
@pytest.mark.parametrize("moved", [False, True])
def test_the_loops_decision_writes_write_what_the_orms_write(n_rows, moved, db):
    """``n_rows`` decided rows of one model (several: the ``CASE`` per field), one of them with
    an edit of two fields and a reason; ``moved``: another transaction wrote the last one after
    it was read, and both refuse the whole write."""
    _, rows = checklist_task(n_rows)
    actor = annotator("reviewer")
    project_row = dict(actor=actor, action=AuditAction.LABEL_SUBMIT, target_model=ChecklistItem,
                       target_id=rows[0].pk, project_id=7, before={"labels_done": 1},
                       after={"label_id": 3, "value": {"decision": "accept"}})
    results = {}
    for how, writes in (("loop", store.PROPOSABLE_WRITES), ("orm", ORM_WRITES)):
        def run(writes=writes):
            read = list(ChecklistItem.objects.filter(pk__in=[row.pk for row in rows]).order_by("pk"))
            edits = [proposable_edit(current=row, changes=review_changes(
                status="edited" if n == 0 else "accepted", edits={"text": "Edited text", "reward": 0.25} if n == 0
                else None), expected_version=row.version, actor=actor, note=f"decision {n}",
                action=AuditAction.REVIEW_EDITED if n == 0 else AuditAction.REVIEW_ACCEPTED,
                reason={"code": "typo", "text": "fixed"} if n == 0 else None) for n, row in enumerate(read)]
            if moved:
                ChecklistItem.objects.filter(pk=read[-1].pk).update(version=read[-1].version + 5)
                with pytest.raises(ProposableMovedError) as refused, transaction.atomic():
                    proposable_edits_save(edits, audit_rows=[project_row], writes=writes)
                return str(refused.value), [_columns(row, without=TIMES) for row in
                                            ChecklistItem.objects.filter(pk__in=[r.pk for r in rows]).order_by("pk")], \
                    AuditLog.objects.count()
            others = proposable_edits_save(edits, audit_rows=[project_row], writes=writes)
            revisions = [edit.row.latest_revision for edit in edits]
            assert [r.pk for r in revisions + others] == sorted(r.pk for r in revisions + others)
            return _written(read, ChecklistItem), _written(revisions + others, AuditLog)
        results[how] = _rolled_back(run)
    assert results["loop"] == results["orm"]


def test_the_claims_audit_insert_writes_what_audit_log_rows_writes(db):
    """Several rows (``bulk_create`` sends them as arrays on PostgreSQL), JSON and empty ones."""
    actor = annotator("claimer")
    rows = [dict(actor=actor, action=AuditAction.ASSIGNMENT_CLAIM, target_model=ChecklistItem, target_id=n,
                 project_id=3, after={"assignment_id": n, "expires_at": "2026-12-07T10:00:00+00:00", "q": "it's"})
            for n in range(1, 4)] + [dict(action=AuditAction.ASSIGNMENT_CLAIM, actor_label="import", note="x")]
    results = {}
    for how, insert in (("loop", store.audit_rows_insert), ("orm", audit_log_rows)):
        results[how] = _rolled_back(lambda insert=insert: _written(insert([dict(row) for row in rows]), AuditLog))
    assert results["loop"] == results["orm"]
    assert len(results["loop"]) == 4


def test_the_loops_audit_rows_are_refused_outside_a_transaction(transactional_db):
    with pytest.raises(RuntimeError, match="inside the transaction of the change they record"):
        store.audit_rows_insert([dict(action=AuditAction.ASSIGNMENT_CLAIM, actor_label="x")])
    assert AuditLog.objects.count() == 0
