"""The product's settings, with a task queue of this fault run's own: on a broker shared with
other users (the machine's RabbitMQ or Redis) no message of ours reaches their workers."""

import os

from config.settings import *  # noqa: F401,F403

CELERY_TASK_DEFAULT_QUEUE = os.environ["FAULTS_QUEUE"]
