"""Helpers shared by the importer tests."""

import pytest
from django.apps import apps

from benchmark.importers.base import ImportFailed
from benchmark.importers.catalogue import run_import

TRACKED_APPS = ("core", "benchmark", "annotation", "auth")


def model_counts() -> dict[str, int]:
    """Row counts of every model the importers could touch."""
    return {
        model._meta.label: model.objects.count()
        for app in TRACKED_APPS
        for model in apps.get_app_config(app).get_models()
    }


def assert_rejected(name: str, path, *, match: str, **options) -> ImportFailed:
    """The import fails with a message matching ``match`` and stores nothing."""
    before = model_counts()
    with pytest.raises(ImportFailed, match=match) as info:
        run_import(name, path, **options)
    assert model_counts() == before
    return info.value
