from .workers import live_workers


def worker_status(request) -> dict:
    """Every page says when no worker is running, so nobody waits for jobs that cannot start."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"live_workers": live_workers()}
