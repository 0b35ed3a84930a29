"""Asking a worker to recompute a project's cached agreement figures (the dashboards read them
through ``annotation.dashboards.agreement.inter_annotator``, which only reads)."""

from django.core.cache import cache

from ..dashboards.agreement import IAA_REFRESH_SECONDS, iaa_cache_key
from ..tasks import refresh_project_agreement


def agreement_refresh_request(*, projects: list[dict]) -> list[int]:
    """Queue one worker refresh (``annotation.refresh_project_agreement``) per project that
    ``inter_annotator`` served stale, once however often the page is opened meanwhile (a
    marker in the cache until the refresh is due); returns the ids queued."""
    queued = []
    for project in projects:
        if "stale_of_labels" in project and cache.add(
                iaa_cache_key(project["id"]) + ":refreshing", 1, timeout=IAA_REFRESH_SECONDS):
            refresh_project_agreement.delay(project["id"])
            queued.append(project["id"])
    return queued
