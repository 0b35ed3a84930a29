from django.urls import path

from .views import adjudication, curation, projects, workspace

app_name = "annotation"
urlpatterns = [
    path("", projects.project_list, name="project_list"),
    path("new/", curation.project_new, name="new"),
    path("<int:project_id>/", workspace.workspace, name="workspace"),
    path("<int:project_id>/edit/", curation.project_edit, name="edit"),
    path("<int:project_id>/members/", curation.project_members, name="members"),
    path("<int:project_id>/progress/", projects.progress, name="progress"),
    path("<int:project_id>/undo/", workspace.undo, name="undo"),
    path("<int:project_id>/revisit-skipped/", workspace.revisit_skipped, name="revisit_skipped"),
    path("<int:project_id>/items/<int:item_id>/", workspace.item_detail, name="item"),
    path("<int:project_id>/items/<int:item_id>/label/", workspace.label_create, name="label"),
    path("<int:project_id>/items/<int:item_id>/skip/", workspace.item_skip, name="skip"),
    path("<int:project_id>/items/<int:item_id>/add/", workspace.item_add, name="add_item"),
    path("<int:project_id>/adjudicate/", adjudication.queue, name="adjudication"),
    path("<int:project_id>/items/<int:item_id>/adjudicate/", adjudication.adjudicate, name="adjudicate"),
]
