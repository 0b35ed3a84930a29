from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache

from core.broker import broker_check
from core.workers import live_workers


@never_cache
def healthz(request):
    """Database, broker and worker status for load balancers and humans; 503 when the database is
    down, "degraded" when the broker does not answer or no worker is alive."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = {"ok": True, "vendor": connection.vendor}
    except Exception as exc:  # the point of this endpoint is to report the failure, not raise it
        return JsonResponse({"status": "error", "database": {"ok": False, "error": str(exc)}}, status=503)
    workers = live_workers()
    broker = broker_check()
    body = {
        "status": "ok" if workers and broker["ok"] else "degraded",
        "database": database,
        "broker": broker,
        "workers": {
            "alive": len(workers),
            "hosts": [{"hostname": w.hostname, "pid": w.pid, "last_seen": w.last_seen.isoformat()} for w in workers],
        },
    }
    return JsonResponse(body)
