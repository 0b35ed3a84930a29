import pytest

from core.models import AuditLog

from annotation.models import AnnotationItem, AnnotationProject
from annotation.services.previews import project_preview
from annotation.services.projects import project_create
from tests.annotation_factories import checklist_task

pytestmark = pytest.mark.django_db


def test_preview_counts_what_creation_makes_and_keeps_nothing(owner):
    task, _ = checklist_task(4)
    other, _ = checklist_task(1)
    preview = project_preview(name="p", kind="verify", created_by=owner, tasks=[task, other],
                              item_kinds=["checklist_item"], overlap=3)
    assert (preview["items"], preview["tasks"], preview["overlap"]) == (5, 2, 3)
    assert preview["label_set"]["decision"] == ["accept", "edit", "reject"]
    assert not AnnotationProject.objects.exists() and not AnnotationItem.objects.exists()
    assert not AuditLog.objects.exists()
    project = project_create(name="p", kind="verify", created_by=owner, tasks=[task, other],
                             item_kinds=["checklist_item"], overlap=3)
    assert project.items.count() == preview["items"]


def test_preview_refuses_as_creation_does(owner, alice):
    task, _ = checklist_task(1)
    with pytest.raises(ValueError, match="overlap: verify projects need k"):
        project_preview(name="p", kind="verify", created_by=owner, tasks=[task], overlap=1)
    with pytest.raises(PermissionError, match="only curators create"):
        project_preview(name="p", kind="verify", created_by=alice, tasks=[task])
