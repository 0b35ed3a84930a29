import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from benchmark import models
from benchmark.models import ChecklistItem, Nugget
from benchmark.services.history import (
    ProposableMovedError,
    StaleEditError,
    proposable_edit,
    proposable_edits_save,
    proposable_review,
    proposable_update,
    snapshot,
)
from core.models import AuditLog
from tests import factories

pytestmark = pytest.mark.django_db


def revisions_of(obj) -> list[AuditLog]:
    content_type = ContentType.objects.get_for_model(obj)
    return list(AuditLog.objects.filter(content_type=content_type, object_id=obj.pk))


def test_update_writes_the_change_and_its_revision():
    item = factories.ChecklistItemFactory(text="Old text", reward=1.0)
    expert = factories.UserFactory()

    updated = proposable_update(obj=item, changes={"text": "New text", "reward": 0.5}, expected_version=1,
                                actor=expert, note="typo")

    item.refresh_from_db()
    assert (item.text, item.reward, item.version) == ("New text", 0.5, 2) == (updated.text, 0.5, updated.version)
    [revision] = revisions_of(item)
    assert (revision.action, revision.actor, revision.note) == ("proposable.edit", expert, "typo")
    assert revision.before == {**revision.after, "text": "Old text", "reward": 1.0}
    assert revision.after == snapshot(item)


def test_update_runs_in_one_transaction_with_its_revision():
    item = factories.ChecklistItemFactory()
    with CaptureQueriesContext(connection) as captured:
        proposable_update(obj=item, changes={"text": "x"}, expected_version=1)
    sql = [q["sql"] for q in captured.captured_queries]
    # Inside the test's transaction, the service's atomic block is a savepoint around all its writes.
    assert sql[0].startswith("SAVEPOINT") and sql[-1].startswith("RELEASE SAVEPOINT")
    assert "FOR UPDATE" in sql[1]
    assert [s.split(" ")[0] for s in sql if s.startswith(("UPDATE", "INSERT"))] == ["UPDATE", "INSERT"]
    assert 'INSERT INTO "core_auditlog"' in sql[-2]


def test_a_stale_version_raises_and_changes_nothing():
    item = factories.ChecklistItemFactory(text="Original")
    proposable_update(obj=item, changes={"text": "First editor"}, expected_version=1)

    with pytest.raises(StaleEditError, match="version 2, your edit was based on version 1") as failure:
        proposable_update(obj=item, changes={"text": "Second editor"}, expected_version=1)

    assert (failure.value.expected, failure.value.actual) == (1, 2)
    item.refresh_from_db()
    assert (item.text, item.version) == ("First editor", 2)
    assert len(revisions_of(item)) == 1


def test_an_edit_made_from_a_row_read_without_its_lock_is_written_only_while_the_row_is_as_read():
    item, other = factories.ChecklistItemFactory(text="Original"), factories.ChecklistItemFactory(text="Other")
    edits = [proposable_edit(current=ChecklistItem.objects.get(pk=row.pk), changes={"text": "Edited"}, expected_version=1)
             for row in (item, other)]
    proposable_update(obj=item, changes={"text": "Meanwhile"}, expected_version=1)

    with pytest.raises(ProposableMovedError, match="1 of 2 checklist items were still as read"), transaction.atomic():
        proposable_edits_save(edits)
    item.refresh_from_db()
    other.refresh_from_db()
    assert (item.text, item.version, other.text, other.version) == ("Meanwhile", 2, "Other", 1)
    assert len(revisions_of(item)) == 1 and revisions_of(other) == []

    (edit,) = [proposable_edit(current=ChecklistItem.objects.get(pk=other.pk), changes={"text": "Edited"},
                               expected_version=1)]
    proposable_edits_save([edit])
    other.refresh_from_db()
    assert (other.text, other.version) == ("Edited", 2) and len(revisions_of(other)) == 1


def test_a_rolled_back_change_leaves_no_revision():
    item = factories.ChecklistItemFactory(text="Original")
    with pytest.raises(RuntimeError, match="the caller fails after the update"), transaction.atomic():
        proposable_update(obj=item, changes={"text": "Doomed"}, expected_version=1)
        assert len(revisions_of(item)) == 1  # written, but only inside the transaction
        raise RuntimeError("the caller fails after the update")

    item.refresh_from_db()
    assert (item.text, item.version) == ("Original", 1)
    assert revisions_of(item) == []


def test_an_invalid_change_is_refused_without_revision():
    nugget = factories.NuggetFactory(importance="okay")
    with pytest.raises(ValidationError, match="Value 'essential' is not a valid choice"):
        proposable_update(obj=nugget, changes={"importance": "essential"}, expected_version=1)
    nugget.refresh_from_db()
    assert (nugget.importance, nugget.version) == ("okay", 1)
    assert revisions_of(nugget) == []


def test_untracked_fields_cannot_be_edited():
    item = factories.ChecklistItemFactory()
    with pytest.raises(ValueError, match="no editable field"):
        proposable_update(obj=item, changes={"position": 9}, expected_version=1)
    assert revisions_of(item) == []


def test_review_sets_status_and_records_edits():
    nugget = factories.NuggetFactory(text="Draft")
    expert = factories.UserFactory()
    reviewed = proposable_review(obj=nugget, status="edited", expected_version=1, actor=expert,
                                 edits={"text": "Better"})
    assert (reviewed.review_status, reviewed.text, reviewed.version) == ("edited", "Better", 2)
    [revision] = revisions_of(nugget)
    assert revision.action == "review.edited"
    assert (revision.before["review_status"], revision.after["review_status"]) == ("proposed", "edited")

    with pytest.raises(ValueError, match="needs the edited fields"):
        proposable_review(obj=reviewed, status="edited", expected_version=2)
    with pytest.raises(ValueError, match="unknown review status"):
        proposable_review(obj=reviewed, status="maybe", expected_version=2)
    assert Nugget.objects.get(pk=nugget.pk).version == 2
    assert ChecklistItem.objects.count() == 0


def test_a_change_is_validated_with_the_fields_a_constraint_ties_to_it():
    # (task, level) is unique: changing the level alone is checked against the task's other prompts
    first = factories.TaskPromptFactory(level=models.TaskPrompt.Level.GENERAL)
    second = factories.TaskPromptFactory(task=first.task, level=models.TaskPrompt.Level.DETAIL)
    with pytest.raises(ValidationError, match="Task and Level already exists"):
        proposable_update(obj=second, changes={"level": models.TaskPrompt.Level.GENERAL}, expected_version=1)
    # a group answering a constraint question must stay a constraint group (kind and question together)
    question = models.ConstraintQuestion.objects.create(task=first.task, text="Does it cover 2023?")
    group = factories.ChecklistGroupFactory(task=first.task, kind=models.ChecklistGroup.Kind.CONSTRAINT,
                                            constraint_question=question)
    with pytest.raises(ValidationError, match="group_question_only_for_constraint"):
        proposable_update(obj=group, changes={"kind": models.ChecklistGroup.Kind.GENERAL}, expected_version=1)
    second.refresh_from_db()
    group.refresh_from_db()
    assert (second.level, second.version, group.kind, group.version) == ("detail", 1, "constraint", 1)
    assert revisions_of(second) == [] and revisions_of(group) == []
