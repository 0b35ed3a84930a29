"""Each app serves its own pages: an app's URL module routes only to that app's views, at the
full paths it declares (``config.urls`` mounts scoring and annotation at the root), so the
``/benchmark/…`` pages of scoring (propose) and annotation (exports) are declared by them."""

import importlib

import pytest
from django.urls import URLPattern, URLResolver, resolve


def _routes(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            assert isinstance(pattern, URLPattern)
            yield prefix + str(pattern.pattern), pattern.callback


@pytest.mark.parametrize("app, module", [("benchmark", "benchmark.urls"), ("scoring", "scoring.urls"),
                                         ("annotation", "annotation.urls"),
                                         ("annotation", "annotation.dashboards.urls")])
def test_an_apps_url_module_routes_only_to_its_own_views(app, module):
    routes = list(_routes(importlib.import_module(module).urlpatterns))
    assert routes
    foreign = [(path, view.__module__) for path, view in routes if view.__module__.split(".")[0] != app]
    assert foreign == []


@pytest.mark.parametrize("path, view, name", [
    ("/benchmark/tasks/1/propose/", "scoring.views_proposals.task_propose", "proposals:task_propose"),
    ("/benchmark/exports/", "annotation.views.exports.export_list", "exports:export_list"),
    ("/benchmark/exports/2/download/", "annotation.views.exports.export_download", "exports:export_download"),
    ("/benchmark/tasks/1/", "benchmark.views.task_detail", "benchmark:task_detail"),
    ("/runs/3/", "scoring.views_runs.run_detail", "runs:detail"),
    ("/annotate/tasks/1/curate/", "annotation.views.task_review.task_mark_curated", "annotation:task_curate"),
])
def test_the_benchmark_pages_of_the_apps_above_keep_their_paths_and_names(path, view, name):
    match = resolve(path)
    assert (f"{match.func.__module__}.{match.func.__name__}", match.view_name) == (view, name)
