import importlib

import pytest
from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.db import transaction

from benchmark.models import ChecklistItem
from core.audit import audit_log_record
from core.audit_actions import LEGACY_SPELLINGS, AuditAction
from core.models import AuditLog
from tests import factories


@pytest.mark.django_db(transaction=True)
def test_an_audit_row_is_refused_outside_the_transaction_of_its_change():
    item = factories.ChecklistItemFactory()
    with pytest.raises(RuntimeError, match="must be written inside the transaction of the change"):
        audit_log_record(target=item, action=AuditAction.PROPOSABLE_EDIT)
    assert not AuditLog.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_audit_row_rolls_back_with_its_change():
    item = factories.ChecklistItemFactory()
    with pytest.raises(ValueError, match="the change failed"), transaction.atomic():
        audit_log_record(target=item, action=AuditAction.PROPOSABLE_EDIT, before={"text": "a"}, after={"text": "b"})
        raise ValueError("the change failed")
    assert not AuditLog.objects.exists()
    with transaction.atomic():
        row = audit_log_record(target=item, action=AuditAction.PROPOSABLE_EDIT, actor_label="import:test", project_id=7)
    stored = AuditLog.objects.get()
    assert stored.pk == row.pk
    assert (stored.content_type, stored.object_id, stored.actor_label, stored.project_id) == (
        ContentType.objects.get_for_model(ChecklistItem), item.pk, "import:test", 7)


@pytest.mark.django_db
def test_an_action_outside_the_enumeration_is_refused_with_its_name():
    item = factories.ChecklistItemFactory()
    for spelling in ("edit", "proposable.edit"):  # free text, even a member's spelling
        with pytest.raises(TypeError, match=rf"audit action '{spelling}' is not a core.audit_actions.AuditAction"):
            audit_log_record(target=item, action=spelling)
    assert not AuditLog.objects.exists()


def test_one_spelling_scheme_and_every_old_spelling_reads_as_a_member():
    for member in AuditAction:
        entity, _, verb = member.value.partition(".")
        assert entity and verb and member.value == member.value.lower() and ":" not in member.value, member
    assert AuditAction.parse("review:accepted") is AuditAction.REVIEW_ACCEPTED
    assert AuditAction.parse("import:delete") is AuditAction.IMPORT_REMOVE
    assert AuditAction.parse("label.submit") is AuditAction.LABEL_SUBMIT
    with pytest.raises(ValueError, match="unknown audit action 'review:maybe'; known: account.create"):
        AuditAction.parse("review:maybe")


@pytest.mark.django_db
def test_the_data_migration_rewrites_every_old_spelling_and_back():
    migration = importlib.import_module("core.migrations.0005_auditlog_action_spellings")
    assert {old: AuditAction(new) for old, new in migration.SPELLINGS.items()} == LEGACY_SPELLINGS
    item = factories.ChecklistItemFactory()
    content_type = ContentType.objects.get_for_model(ChecklistItem)
    for old in migration.SPELLINGS:
        AuditLog.objects.create(content_type=content_type, object_id=item.pk, action=old)
    AuditLog.objects.create(content_type=content_type, object_id=item.pk, action="label.submit")  # already current
    migration.forwards(apps, None)
    stored = list(AuditLog.objects.order_by("pk").values_list("action", flat=True))
    assert stored == [*(LEGACY_SPELLINGS[old].value for old in migration.SPELLINGS), "label.submit"]
    migration.backwards(apps, None)
    back = list(AuditLog.objects.order_by("pk").values_list("action", flat=True))
    merged = {"import:update": "import", "import:delete": "import:remove"}  # synonyms come back as one
    assert back == [*(merged.get(old, old) for old in migration.SPELLINGS), "label.submit"]
