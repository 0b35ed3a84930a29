"""Every page the annotation workspace serves, at its full path (``config.urls`` includes this
module at the root): projects, labelling and curation under ``/annotate/``, and the exports
(task sets and labels alike, ``ExportJob``) under ``/benchmark/exports/``."""

from django.urls import include, path

from .views import adjudication, curation, exports, item_browser, projects, review_queue, task_review, workspace

project_patterns = [
    path("", projects.project_list, name="project_list"),
    path("new/", curation.project_new, name="new"),
    path("tasks/<id:task_id>/review/<str:kind>/<id:pk>/", task_review.proposal_review, name="task_proposal_review"),
    path("review/", review_queue.queue, name="review_queue"),
    path("review/bulk/", review_queue.bulk, name="review_bulk"),
    path("review/<str:kind>/<id:pk>/", review_queue.decide, name="review_decide"),
    path("review/<str:kind>/<id:pk>/edit/", review_queue.edit_fields, name="review_edit_fields"),
    path("tasks/<id:task_id>/curate/", task_review.task_mark_curated, name="task_curate"),
    path("<id:project_id>/", workspace.workspace, name="workspace"),
    path("<id:project_id>/edit/", curation.project_edit, name="edit"),
    path("<id:project_id>/members/", curation.project_members, name="members"),
    path("<id:project_id>/progress/", projects.progress, name="progress"),
    path("<id:project_id>/undo/", workspace.undo, name="undo"),
    path("<id:project_id>/revisit-skipped/", workspace.revisit_skipped, name="revisit_skipped"),
    path("<id:project_id>/mine/", workspace.my_work, name="my_work"),
    path("<id:project_id>/items/", item_browser.item_list, name="items"),
    path("<id:project_id>/items/action/", item_browser.items_action, name="items_action"),
    path("<id:project_id>/items/<id:item_id>/", workspace.item_detail, name="item"),
    path("<id:project_id>/items/<id:item_id>/label/", workspace.label_create, name="label"),
    path("<id:project_id>/items/<id:item_id>/skip/", workspace.item_skip, name="skip"),
    path("<id:project_id>/items/<id:item_id>/add/", workspace.item_add, name="add_item"),
    path("<id:project_id>/adjudicate/", adjudication.queue, name="adjudication"),
    path("<id:project_id>/items/<id:item_id>/adjudicate/", adjudication.adjudicate, name="adjudicate"),
]

export_patterns = [
    path("exports/", exports.export_list, name="export_list"),
    path("exports/new/", exports.export_create, name="export_create"),
    path("exports/<id:job_id>/row/", exports.export_row, name="export_row"),
    path("exports/<id:job_id>/download/", exports.export_download, name="export_download"),
    path("exports/<id:job_id>/delete/", exports.export_delete, name="export_delete"),
]

urlpatterns = [
    path("annotate/", include((project_patterns, "annotation"))),
    path("benchmark/", include((export_patterns, "exports"))),
]
