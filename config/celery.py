"""The Celery application. Tasks are discovered in each app's ``tasks`` module."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("survey_eval_studio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
