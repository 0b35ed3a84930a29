from django.urls import path

from . import views

urlpatterns = [
    path("judge-configs/", views.JudgeConfigListApi.as_view(), name="judgeconfig-list"),
    path("judge-configs/<id:pk>/", views.JudgeConfigDetailApi.as_view(), name="judgeconfig-detail"),
    path("runs/", views.RunListApi.as_view(), name="run-list"),
    path("runs/<id:pk>/", views.RunDetailApi.as_view(), name="run-detail"),
    path("runs/<id:pk>/start/", views.RunStartApi.as_view(), name="run-start"),
    path("runs/<id:pk>/cancel/", views.RunCancelApi.as_view(), name="run-cancel"),
    path("runs/<id:pk>/resume/", views.RunResumeApi.as_view(), name="run-resume"),
    path("runs/<id:pk>/progress/", views.RunProgressApi.as_view(), name="run-progress"),
    path("runs/<id:pk>/score-cards/", views.RunScoreCardsApi.as_view(), name="run-score-cards"),
    path("score-cards/", views.ScoreCardListApi.as_view(), name="scorecard-list"),
    path("verdicts/", views.VerdictListApi.as_view(), name="verdict-list"),
]
