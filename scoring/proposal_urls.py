"""The task page's propose POST, mounted under ``/benchmark/`` by ``config.urls`` (its path
predates the move of the view to scoring)."""

from django.urls import path

from . import views_proposals

app_name = "proposals"
urlpatterns = [
    path("tasks/<id:task_id>/propose/", views_proposals.task_propose, name="task_propose"),
]
