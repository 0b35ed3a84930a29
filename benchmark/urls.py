from django.urls import path

from . import views

app_name = "benchmark"
urlpatterns = [
    path("tasks/", views.task_list, name="task_list"),
    path("tasks/<int:task_id>/", views.task_detail, name="task_detail"),
    path("reports/<int:report_id>/", views.report_detail, name="report_detail"),
]
