"""Reads with logic for the benchmark pages: bounded queries, no per-row lookups."""

from django.db.models import Count, Prefetch, Q, QuerySet

from .models import ChecklistGroup, ChecklistItem, GoldReference, Protocol, Report, Task


def protocol_overview() -> list[dict]:
    """Per protocol: tasks, curated tasks and reports."""
    rows = {
        row["protocol"]: row
        for row in Task.objects.values("protocol").annotate(
            tasks=Count("id"),
            curated=Count("id", filter=Q(status=Task.Status.CURATED)),
        )
    }
    reports = dict(Report.objects.values_list("task__protocol").annotate(n=Count("id")))
    return [
        {
            "protocol": value,
            "label": label,
            "tasks": rows.get(value, {}).get("tasks", 0),
            "curated": rows.get(value, {}).get("curated", 0),
            "reports": reports.get(value, 0),
        }
        for value, label in Protocol.choices
    ]


def task_list(
    *, protocol: str = "", status: str = "", query: str = "", discipline: int | str | None = None
) -> QuerySet[Task]:
    tasks = Task.objects.select_related("survey").annotate(
        n_reports=Count("reports", distinct=True),
        n_groups=Count("checklist_groups", distinct=True),
        n_gold=Count("gold_references", distinct=True),
        n_nuggets=Count("nuggets", distinct=True),
    )
    if protocol:
        tasks = tasks.filter(protocol=protocol)
    if status:
        tasks = tasks.filter(status=status)
    if discipline:
        tasks = tasks.filter(survey__discipline=discipline)
    if query:
        tasks = tasks.filter(Q(key__icontains=query) | Q(title__icontains=query) | Q(survey__title__icontains=query))
    return tasks.order_by("protocol", "key")


def task_detail(*, task_id: int) -> Task:
    return (
        Task.objects.select_related("survey", "survey__discipline")
        .prefetch_related(
            "prompts",
            "constraint_questions",
            Prefetch(
                "checklist_groups",
                queryset=ChecklistGroup.objects.prefetch_related(
                    Prefetch("items", queryset=ChecklistItem.objects.order_by("position"))
                ).order_by("position"),
            ),
            Prefetch("gold_references", queryset=GoldReference.objects.select_related("bib_entry")),
            "nuggets",
            "rubric_criteria",
            Prefetch("reports", queryset=Report.objects.select_related("system").defer("parsed", "text")),
        )
        .get(pk=task_id)
    )


def report_detail(*, report_id: int) -> Report:
    return Report.objects.select_related("task", "task__survey", "system").get(pk=report_id)
