"""What a task set's upstream ("curated") export holds: by default only curated tasks, and of
them only items a curator accepted or edited. ``include_unreviewed`` also admits draft and
in-review tasks and items nobody reviewed yet (proposed by an LLM, an import or an annotator).
Rejected items are passed on: the upstream writers leave them out themselves, and count them.

Works on native task lines (dicts) before an upstream writer sees them. Checklist groups name
their constraint question by position, so positions are renumbered, and a group whose question
was left out goes too (it could not be stated without it).
"""

from collections import Counter

from ..models import ReviewStatus, Task

ITEM_LISTS = ("prompts", "constraint_questions", "gold_references", "nuggets", "rubric_criteria")
REVIEWED = {ReviewStatus.ACCEPTED, ReviewStatus.EDITED, ReviewStatus.REJECTED}


def _written(item: dict, include_unreviewed: bool) -> bool:
    status = item.get("review_status")
    return status in REVIEWED or (include_unreviewed and status == ReviewStatus.PROPOSED)


def _kept(items: list[dict], include_unreviewed: bool, counts: Counter, what: str) -> list[dict]:
    kept = [item for item in items if _written(item, include_unreviewed)]
    if len(kept) != len(items):
        counts[f"left out: unreviewed {what}"] += len(items) - len(kept)
    return kept


def curated_task(task: dict, counts: Counter, *, include_unreviewed: bool) -> dict | None:
    """The task with only the admitted items, or None when the task is not admitted."""
    admitted = {Task.Status.CURATED} | ({Task.Status.DRAFT, Task.Status.IN_REVIEW} if include_unreviewed else set())
    if task.get("status") not in admitted:
        counts["left out: tasks not curated"] += 1
        return None
    task = dict(task)
    questions = task.get("constraint_questions") or []
    for name in ITEM_LISTS:
        task[name] = _kept(task.get(name) or [], include_unreviewed, counts, name.replace("_", " "))
    kept_ids = {id(question) for question in task["constraint_questions"]}
    renumbered = {}
    for old, question in enumerate(questions):
        if id(question) in kept_ids:
            renumbered[old] = len(renumbered)
    groups = []
    for group in task.get("checklist_groups") or []:
        question = group.get("constraint_question")
        if not _written(group, include_unreviewed) or (question is not None and question not in renumbered):
            counts["left out: unreviewed checklist groups"] += 1
            continue
        group = {**group, "items": _kept(group.get("items") or [], include_unreviewed, counts, "checklist items")}
        if question is not None:
            group["constraint_question"] = renumbered[question]
        groups.append(group)
    task["checklist_groups"] = groups
    return task
