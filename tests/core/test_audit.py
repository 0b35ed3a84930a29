import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import transaction

from benchmark.models import ChecklistItem
from core.audit import audit_log_record
from core.models import AuditLog
from tests import factories


@pytest.mark.django_db(transaction=True)
def test_an_audit_row_is_refused_outside_the_transaction_of_its_change():
    item = factories.ChecklistItemFactory()
    with pytest.raises(RuntimeError, match="must be written inside the transaction of the change"):
        audit_log_record(target=item, action="edit")
    assert not AuditLog.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_audit_row_rolls_back_with_its_change():
    item = factories.ChecklistItemFactory()
    with pytest.raises(ValueError, match="the change failed"), transaction.atomic():
        audit_log_record(target=item, action="edit", before={"text": "a"}, after={"text": "b"})
        raise ValueError("the change failed")
    assert not AuditLog.objects.exists()
    with transaction.atomic():
        row = audit_log_record(target=item, action="edit", actor_label="import:test", project_id=7)
    stored = AuditLog.objects.get()
    assert stored.pk == row.pk
    assert (stored.content_type, stored.object_id, stored.actor_label, stored.project_id) == (
        ContentType.objects.get_for_model(ChecklistItem), item.pk, "import:test", 7)
