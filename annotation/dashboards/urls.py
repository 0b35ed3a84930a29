from django.urls import path

from . import views

app_name = "dashboards"
urlpatterns = [
    path("", views.index, name="index"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("human/", views.human_ranking, name="human"),
    path("agreement/", views.agreement, name="agreement"),
    path("charts/verdicts/", views.chart_verdicts, name="chart_verdicts"),
    path("charts/scores/", views.chart_scores, name="chart_scores"),
    path("charts/human-vs-automated/", views.chart_human_vs_auto, name="chart_human_vs_auto"),
]
