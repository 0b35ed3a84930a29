import pytest
from django.urls import reverse

from annotation.loop.claims import claim_next_item
from annotation.loop.labels import label_submit
from tests.annotation_factories import agreement_project, token

pytestmark = pytest.mark.django_db

MODELS = ("annotationproject", "annotationitem", "assignment", "label", "goldlabel", "pairwisepreference")


def test_workspace_admin_pages_are_read_only_views(admin_client, owner, alice):
    project = agreement_project(owner, [alice])
    claim = claim_next_item(project=project, user=alice)
    label_submit(item=claim.item, annotator=alice, value={"label": "correct"}, client_token=token())
    for model in MODELS:
        response = admin_client.get(reverse(f"admin:annotation_{model}_changelist"))
        assert response.status_code == 200
        assert response.context["cl"].model._meta.model_name == model
    labels = admin_client.get(reverse("admin:annotation_label_changelist")).context["cl"]
    assert [label.pk for label in labels.result_list] == [claim.item.labels.get().pk]
    assert admin_client.get(reverse("admin:annotation_annotationproject_change", args=[project.pk])).status_code == 200
    assert admin_client.get(reverse("admin:annotation_label_add")).status_code == 403
    assert admin_client.get(reverse("admin:core_auditlog_changelist")).status_code == 200  # the workspace's audit rows
    assert admin_client.get(reverse("admin:core_auditlog_add")).status_code == 403
