from django.utils.functional import SimpleLazyObject

from core.workers import live_workers


def worker_status(request) -> dict:
    """Every page says when no worker is running, so nobody waits for jobs that cannot start.
    Lazy: only templates that show it (the page layout, not htmx partials) pay its query."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"live_workers": SimpleLazyObject(live_workers)}
