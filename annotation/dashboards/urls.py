from django.urls import path

from . import views, views_compute, views_reading

app_name = "dashboards"
urlpatterns = [
    path("", views.index, name="index"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("human/", views.human_ranking, name="human"),
    path("human/compute/", views_compute.human_compute_here, name="human_compute_here"),
    path("agreement/", views.agreement, name="agreement"),
    path("agreement/inter-annotator/", views.agreement_inter_annotator, name="agreement_inter_annotator"),
    path("agreement/inter-annotator/compute/", views_compute.agreement_compute_here, name="agreement_compute_here"),
    path("agreement/judge/", views.agreement_judge, name="agreement_judge"),
    path("agreement/judge/compute/", views_compute.judge_compute_here, name="judge_compute_here"),
    path("charts/verdicts/", views.chart_verdicts, name="chart_verdicts"),
    path("charts/scores/", views.chart_scores, name="chart_scores"),
    path("charts/human-vs-automated/", views.chart_human_vs_auto, name="chart_human_vs_auto"),
    path("charts/recall-by-quartile/", views.chart_recall_quartiles, name="chart_recall_quartiles"),
    path("charts/coverage-by-window/", views.chart_coverage_window, name="chart_coverage_window"),
    path("charts/discipline-heatmap/", views.chart_heatmap, name="chart_heatmap"),
    path("judge-sensitivity/", views.judge_sensitivity, name="judge_sensitivity"),
    path("look-next/", views.look_next, name="look_next"),
    path("statistics/", views_reading.statistics_doc, name="statistics"),
    path("look-next/project/", views.look_next_project, name="look_next_project"),
    path("runs/progress/", views.run_progress, name="run_progress"),
]
