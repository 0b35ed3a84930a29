from django.urls import path

from ..models import ChecklistGroup, ChecklistItem, ConstraintQuestion, GoldReference, Nugget, RubricCriterion, TaskPrompt
from . import views

# (url segment, url-name stem, model, filters, ordering) for every proposable kind.
PROPOSABLE_KINDS = (
    ("prompts", "TaskPrompt", TaskPrompt, {"task": "task_id", "level": "level"}, ("task", "level", "updated_at")),
    ("constraint-questions", "ConstraintQuestion", ConstraintQuestion, {"task": "task_id"},
     ("task", "position", "updated_at")),
    ("checklist-groups", "ChecklistGroup", ChecklistGroup,
     {"task": "task_id", "kind": "kind", "constraint_question": "constraint_question_id"},
     ("task", "position", "weight", "updated_at")),
    ("checklist-items", "ChecklistItem", ChecklistItem, {"task": "group__task_id", "group": "group_id"},
     ("group", "position", "reward", "updated_at")),
    ("gold-references", "GoldReference", GoldReference,
     {"task": "task_id", "bib_entry": "bib_entry_id", "important": "important"},
     ("task", "position", "citation_quartile", "updated_at")),
    ("nuggets", "Nugget", Nugget, {"task": "task_id", "importance": "importance"}, ("task", "position", "updated_at")),
    ("rubric-criteria", "RubricCriterion", RubricCriterion,
     {"task": "task_id", "discipline": "discipline_id", "component": "component"},
     ("component", "position", "weight", "updated_at")),
)

urlpatterns = [
    path("surveys/", views.SurveyListApi.as_view(), name="survey-list"),
    path("surveys/<id:pk>/", views.SurveyDetailApi.as_view(), name="survey-detail"),
    path("bib-entries/", views.BibEntryListApi.as_view(), name="bibentry-list"),
    path("bib-entries/<id:pk>/", views.BibEntryDetailApi.as_view(), name="bibentry-detail"),
    path("tasks/", views.TaskListApi.as_view(), name="task-list"),
    path("tasks/<id:pk>/", views.TaskDetailApi.as_view(), name="task-detail"),
    path("task-sets/", views.TaskSetListApi.as_view(), name="taskset-list"),
    path("task-sets/<id:pk>/", views.TaskSetDetailApi.as_view(), name="taskset-detail"),
    path("task-sets/<id:pk>/export/", views.TaskSetExportApi.as_view(), name="taskset-export"),
    path("systems/", views.SystemListApi.as_view(), name="system-list"),
    path("systems/<id:pk>/", views.SystemDetailApi.as_view(), name="system-detail"),
    path("reports/", views.ReportListApi.as_view(), name="report-list"),
    path("reports/<id:pk>/", views.ReportDetailApi.as_view(), name="report-detail"),
    path("imports/", views.ImportApi.as_view(), name="import"),
]

for segment, stem, model, filters, ordering in PROPOSABLE_KINDS:
    family = views.proposable_endpoints(model, stem=stem, filters=filters, ordering=ordering)
    slug = segment.rstrip("s") if not segment.endswith("criteria") else "rubric-criterion"
    urlpatterns += [
        path(f"{segment}/", family["list"].as_view(), name=f"{slug}-list"),
        path(f"{segment}/<id:pk>/", family["detail"].as_view(), name=f"{slug}-detail"),
        path(f"{segment}/<id:pk>/review/", family["review"].as_view(), name=f"{slug}-review"),
        path(f"{segment}/<id:pk>/revisions/", family["revisions"].as_view(), name=f"{slug}-revisions"),
    ]
