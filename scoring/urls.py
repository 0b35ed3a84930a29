from django.urls import path

from . import views_runs

app_name = "runs"
urlpatterns = [
    path("", views_runs.run_list, name="list"),
    path("new/", views_runs.run_new, name="new"),
    path("<id:run_id>/", views_runs.run_detail, name="detail"),
    path("<id:run_id>/progress/", views_runs.run_progress_fragment, name="progress"),
    path("<id:run_id>/start/", views_runs.run_start_view, name="start"),
    path("<id:run_id>/cancel/", views_runs.run_cancel_view, name="cancel"),
    path("<id:run_id>/resume/", views_runs.run_resume_view, name="resume"),
]
