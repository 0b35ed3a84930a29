"""gunicorn settings for the web processes, read by the systemd unit and the Procfile alike
(``gunicorn -c deploy/gunicorn.conf.py config.wsgi --bind ...``).

``gthread``: a few processes (about one per core) with 4 threads each. Threads cover the
waits on the database, and keep-alive connections from the proxy stay open, which ``sync``
workers cannot do; docs/performance.md measured this shape (8 request slots on 2 cores)."""

import os

worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", os.cpu_count() or 2))
threads = 4
# A request that takes longer is a bug (long work runs on Celery): kill it rather than queue behind it.
timeout = 30
graceful_timeout = 30
keepalive = 5
# Headers from the proxy on the same machine only (X-Forwarded-Proto: see config/settings.py).
forwarded_allow_ips = "127.0.0.1,::1"
accesslog = "-"
errorlog = "-"
