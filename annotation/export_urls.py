"""Export pages, mounted under ``/benchmark/`` by ``config.urls`` (their paths predate the move)."""

from django.urls import path

from .views import exports

app_name = "exports"
urlpatterns = [
    path("exports/", exports.export_list, name="export_list"),
    path("exports/new/", exports.export_create, name="export_create"),
    path("exports/<id:job_id>/row/", exports.export_row, name="export_row"),
    path("exports/<id:job_id>/download/", exports.export_download, name="export_download"),
    path("exports/<id:job_id>/delete/", exports.export_delete, name="export_delete"),
]
