import pytest
from django.urls import reverse

from annotation.assignment import claim_next_item
from annotation.services.labels import label_submit
from tests.annotation_factories import agreement_project, token

pytestmark = pytest.mark.django_db

MODELS = ("annotationproject", "annotationitem", "assignment", "label", "goldlabel", "auditevent", "pairwisepreference")


def test_workspace_admin_pages_are_read_only_views(admin_client, owner, alice):
    project = agreement_project(owner, [alice])
    claim = claim_next_item(project=project, user=alice)
    label_submit(item=claim.item, annotator=alice, value={"label": "correct"}, client_token=token())
    for model in MODELS:
        assert admin_client.get(reverse(f"admin:annotation_{model}_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:annotation_annotationproject_change", args=[project.pk])).status_code == 200
    assert admin_client.get(reverse("admin:annotation_label_add")).status_code == 403
