import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

APPS = ("core", "benchmark", "annotation", "scoring")
# A proxy model has no rows of its own: its concrete model's admin shows them.
MODELS = [m for m in apps.get_models() if m._meta.app_label in APPS and not m._meta.proxy]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_model_is_in_the_admin_with_search_and_filters(model):
    model_admin = admin.site._registry.get(model)
    assert model_admin is not None, f"{model.__name__} is not registered in the admin"
    assert model_admin.search_fields, f"{model.__name__} admin has no search"
    assert model_admin.list_filter, f"{model.__name__} admin has no filters"


@pytest.mark.django_db
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_admin_changelist_renders_with_a_search(admin_client, model):
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    response = admin_client.get(url, {"q": "x"})
    assert response.status_code == 200
    changelist = response.context["cl"]
    assert (changelist.model, changelist.query) == (model, "x")
    assert 'value="x"' in response.content.decode()  # the page shows the search it answered
