from django.urls import path

from annotation.calibration import api as calibration
from annotation.dashboards import api as dashboards

from . import exports, invitations, labels, views

urlpatterns = [
    path("exports/", exports.ExportListApi.as_view(), name="export-list"),
    path("exports/<id:pk>/", exports.ExportDetailApi.as_view(), name="export-detail"),
    path("exports/<id:pk>/download/", exports.ExportDownloadApi.as_view(), name="export-download"),
    path("projects/", views.ProjectListApi.as_view(), name="project-list"),
    path("projects/<id:pk>/", views.ProjectDetailApi.as_view(), name="project-detail"),
    path("projects/<id:pk>/members/", views.ProjectMemberListApi.as_view(), name="project-members"),
    path("projects/<id:pk>/members/<str:username>/", views.ProjectMemberDetailApi.as_view(),
         name="project-member-detail"),
    path("projects/<id:pk>/invitations/", invitations.ProjectInvitationListApi.as_view(), name="project-invitations"),
    path("projects/<id:pk>/invitations/<id:invitation_id>/resend/", invitations.ProjectInvitationResendApi.as_view(),
         name="project-invitation-resend"),
    path("projects/<id:pk>/invitations/<id:invitation_id>/revoke/", invitations.ProjectInvitationRevokeApi.as_view(),
         name="project-invitation-revoke"),
    path("projects/<id:pk>/progress/", views.ProjectProgressApi.as_view(), name="project-progress"),
    path("projects/<id:pk>/items/", views.ProjectItemListApi.as_view(), name="project-items"),
    path("projects/<id:pk>/next/", labels.NextItemApi.as_view(), name="project-next"),
    path("annotation-items/<id:pk>/", views.ItemDetailApi.as_view(), name="item-detail"),
    path("annotation-items/<id:pk>/adjudicate/", views.ItemAdjudicateApi.as_view(), name="item-adjudicate"),
    path("annotation-items/<id:pk>/<str:side>/", views.ItemSideApi.as_view(), name="item-side"),
    path("assignments/", labels.AssignmentListApi.as_view(), name="assignment-list"),
    path("assignments/<id:pk>/skip/", labels.AssignmentSkipApi.as_view(), name="assignment-skip"),
    path("labels/", labels.LabelListApi.as_view(), name="label-list"),
    path("labels/batch/", labels.LabelBatchApi.as_view(), name="label-batch"),
    path("gold-labels/", labels.GoldLabelListApi.as_view(), name="goldlabel-list"),
    path("preferences/", labels.PreferenceListApi.as_view(), name="preference-list"),
    path("runs/<id:pk>/calibrated/", calibration.RunCalibratedApi.as_view(), name="run-calibrated"),
    path("dashboards/leaderboard/", dashboards.LeaderboardApi.as_view(), name="dashboard-leaderboard"),
    path("dashboards/human/", dashboards.HumanRankingApi.as_view(), name="dashboard-human"),
    path("dashboards/agreement/", dashboards.AgreementApi.as_view(), name="dashboard-agreement"),
    path("dashboards/charts/verdicts/", dashboards.VerdictChartApi.as_view(), name="dashboard-chart-verdicts"),
    path("dashboards/charts/scores/", dashboards.ScoreChartApi.as_view(), name="dashboard-chart-scores"),
    path("dashboards/charts/human-vs-automated/", dashboards.HumanVsAutomatedChartApi.as_view(),
         name="dashboard-chart-human-vs-automated"),
]
