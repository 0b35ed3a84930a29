"""The product's settings, with task queues of this fault run's own: on a broker shared with
other users (the machine's RabbitMQ or Redis) no message of ours reaches their workers. The
run's workers consume exactly these two (``Stack.queues``): a worker listening on the
product's queue names would leave every message of the run unread."""

import os

from config.settings import *  # noqa: F401,F403

CELERY_TASK_DEFAULT_QUEUE = os.environ["FAULTS_QUEUE"]
EXPORTS_QUEUE = f"{CELERY_TASK_DEFAULT_QUEUE}-exports"
CELERY_TASK_ROUTES = {"benchmark.run_export": {"queue": EXPORTS_QUEUE}}
