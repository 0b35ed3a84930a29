"""Every page scoring serves, at its full path (``config.urls`` includes this module at the root):
the runs and judge configurations under ``/runs/``, and the task page's propose POST under
``/benchmark/tasks/`` (the task page is benchmark's; the proposals are scoring's)."""

from django.urls import include, path

from . import views_judges, views_proposals, views_runs

run_patterns = [
    path("", views_runs.run_list, name="list"),
    path("new/", views_runs.run_new, name="new"),
    path("judges/", views_judges.judge_list, name="judges"),
    path("judges/new/", views_judges.judge_new, name="judge_new"),
    path("judges/<id:config_id>/", views_judges.judge_edit, name="judge_edit"),
    path("judges/<id:config_id>/test/", views_judges.judge_test, name="judge_test"),
    path("<id:run_id>/", views_runs.run_detail, name="detail"),
    path("<id:run_id>/progress/", views_runs.run_progress_fragment, name="progress"),
    path("<id:run_id>/start/", views_runs.run_start_view, name="start"),
    path("<id:run_id>/cancel/", views_runs.run_cancel_view, name="cancel"),
    path("<id:run_id>/resume/", views_runs.run_resume_view, name="resume"),
]

proposal_patterns = [
    path("tasks/<id:task_id>/propose/", views_proposals.task_propose, name="task_propose"),
]

urlpatterns = [
    path("runs/", include((run_patterns, "runs"))),
    path("benchmark/", include((proposal_patterns, "proposals"))),
]
