from django.urls import path

from .views import adjudication, curation, projects, task_review, workspace

app_name = "annotation"
urlpatterns = [
    path("", projects.project_list, name="project_list"),
    path("new/", curation.project_new, name="new"),
    path("tasks/<id:task_id>/review/<str:kind>/<id:pk>/", task_review.proposal_review, name="task_proposal_review"),
    path("tasks/<id:task_id>/curate/", task_review.task_mark_curated, name="task_curate"),
    path("<id:project_id>/", workspace.workspace, name="workspace"),
    path("<id:project_id>/edit/", curation.project_edit, name="edit"),
    path("<id:project_id>/members/", curation.project_members, name="members"),
    path("<id:project_id>/progress/", projects.progress, name="progress"),
    path("<id:project_id>/undo/", workspace.undo, name="undo"),
    path("<id:project_id>/revisit-skipped/", workspace.revisit_skipped, name="revisit_skipped"),
    path("<id:project_id>/mine/", workspace.my_work, name="my_work"),
    path("<id:project_id>/items/<id:item_id>/", workspace.item_detail, name="item"),
    path("<id:project_id>/items/<id:item_id>/label/", workspace.label_create, name="label"),
    path("<id:project_id>/items/<id:item_id>/skip/", workspace.item_skip, name="skip"),
    path("<id:project_id>/items/<id:item_id>/add/", workspace.item_add, name="add_item"),
    path("<id:project_id>/adjudicate/", adjudication.queue, name="adjudication"),
    path("<id:project_id>/items/<id:item_id>/adjudicate/", adjudication.adjudicate, name="adjudicate"),
]
