from django.urls import path

from . import views, views_imports, views_survey_text, views_tasksets

app_name = "benchmark"
urlpatterns = [
    path("tasks/", views.task_list, name="task_list"),
    path("tasks/<id:task_id>/", views.task_detail, name="task_detail"),
    path("tasks/<id:task_id>/survey-text/", views_survey_text.task_survey_text, name="task_survey_text"),
    path("reports/<id:report_id>/", views.report_detail, name="report_detail"),
    path("task-sets/", views_tasksets.taskset_list, name="taskset_list"),
    path("task-sets/new/", views_tasksets.taskset_new, name="taskset_new"),
    path("task-sets/<id:task_set_id>/", views_tasksets.taskset_detail, name="taskset_detail"),
    path("task-sets/<id:task_set_id>/freeze/", views_tasksets.taskset_freeze_view, name="taskset_freeze"),
    path("task-sets/<id:task_set_id>/new-version/", views_tasksets.taskset_version_view, name="taskset_new_version"),
    path("imports/", views_imports.import_history, name="import_history"),
    path("imports/new/", views_imports.import_new, name="import_new"),
    path("imports/<id:job_id>/", views_imports.import_detail, name="import_detail"),
]
