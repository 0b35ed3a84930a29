"""API routes of the dashboards' newer figures, included under ``/api/dashboards/`` in the ``api`` namespace."""

from django.urls import path

from . import api

urlpatterns = [
    path("charts/recall-by-quartile/", api.RecallByQuartileApi.as_view(), name="dashboard-chart-recall-by-quartile"),
    path("charts/coverage-by-window/", api.CoverageByWindowApi.as_view(), name="dashboard-chart-coverage-by-window"),
    path("charts/discipline-heatmap/", api.DisciplineHeatmapApi.as_view(), name="dashboard-chart-discipline-heatmap"),
    path("judge-sensitivity/", api.JudgeSensitivityApi.as_view(), name="dashboard-judge-sensitivity"),
    path("look-next/", api.LookNextApi.as_view(), name="dashboard-look-next"),
    path("runs/progress/", api.RunProgressApi.as_view(), name="dashboard-run-progress"),
]
