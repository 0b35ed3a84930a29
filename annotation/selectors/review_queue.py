"""The review queue's reads: every proposal of the benchmark (one task's, or across tasks) filtered
by kind, review status, source model and text, one page at a time in one stable order — kinds in
``VERIFY_TARGETS`` order, then creation order — so "load more" continues where a page ended and a
decision taken meanwhile never hides nor repeats a row of the next page (the offset counts the
rows of the chosen status *as read*; see ``review_queue_page``)."""

from dataclasses import dataclass, field

from django.db.models import Q, QuerySet

from benchmark.models import SETTLED_STATUSES, ReviewStatus, Task

from ..models import VERIFY_TARGETS, TargetKind

PAGE_SIZE = 50
STATUSES = {"open": "Open (not yet reviewed)", "accepted": "Accepted", "edited": "Edited",
            "rejected": "Rejected", "all": "Every status"}
# The fields a text search reads, per kind: what a row shows as its text.
_TEXT_FIELDS = {
    TargetKind.PROMPT: ("text",), TargetKind.CONSTRAINT_QUESTION: ("title", "text"),
    TargetKind.CHECKLIST_GROUP: ("name",), TargetKind.CHECKLIST_ITEM: ("text", "group__name"),
    TargetKind.GOLD_REFERENCE: ("bib_entry__title",), TargetKind.NUGGET: ("text",),
    TargetKind.RUBRIC_CRITERION: ("name", "description"),
}
_RELATED = {TargetKind.CHECKLIST_ITEM: ("group__task",), TargetKind.GOLD_REFERENCE: ("bib_entry", "task"),
            TargetKind.RUBRIC_CRITERION: ("task",)}


@dataclass(frozen=True)
class QueueFilters:
    """What the queue lists; every field as it comes from the query string, checked."""

    task: Task | None = None
    kind: str = ""
    status: str = "open"
    source: str = ""
    text: str = ""

    @classmethod
    def from_query(cls, query, *, task: Task | None) -> "QueueFilters":
        kind = query.get("kind", "")
        status = query.get("status", "open")
        return cls(task=task, kind=kind if kind in VERIFY_TARGETS else "",
                   status=status if status in STATUSES else "open",
                   source=query.get("source", "").strip()[:200], text=query.get("q", "").strip()[:200])

    def as_query(self) -> dict:
        out = {"kind": self.kind, "status": self.status, "source": self.source, "q": self.text}
        if self.task:
            out["task"] = self.task.pk
        return {name: value for name, value in out.items() if value not in ("", None)}


@dataclass
class QueuePage:
    rows: list[tuple[str, object]]
    total: int
    offset: int
    next_offset: int | None
    counts: dict[str, int] = field(default_factory=dict)


def _query(kind: str, filters: QueueFilters) -> QuerySet:
    model, task_path = VERIFY_TARGETS[kind]
    query = model.objects.all()
    if filters.task is not None:
        query = query.filter(**{task_path: filters.task})
    if filters.status == "open":
        query = query.exclude(review_status__in=SETTLED_STATUSES)
    elif filters.status != "all":
        query = query.filter(review_status=ReviewStatus(filters.status))
    if filters.source:
        query = query.filter(proposed_by__icontains=filters.source)
    if filters.text:
        match = Q()
        for name in _TEXT_FIELDS[kind]:
            match |= Q(**{f"{name}__icontains": filters.text})
        query = query.filter(match)
    related = _RELATED.get(kind, ("task",))
    return query.select_related(*related).order_by("pk")


def review_queue_page(*, filters: QueueFilters, offset: int = 0, limit: int = PAGE_SIZE) -> QueuePage:
    """``limit`` rows from ``offset`` in the queue's order, with the count per kind (one COUNT per
    kind shown, one SELECT per kind the page reaches).

    The open queue shrinks as a curator decides: the page's "load more" therefore asks for the
    next rows *after the last one it shows* (``after``), not by a count — see ``review_queue_after``."""
    kinds = [filters.kind] if filters.kind else list(VERIFY_TARGETS)
    counts = {kind: _query(kind, filters).count() for kind in kinds}
    total = sum(counts.values())
    rows: list[tuple[str, object]] = []
    skip = offset
    for kind in kinds:
        if len(rows) >= limit:
            break
        if skip >= counts[kind]:
            skip -= counts[kind]
            continue
        rows += [(kind, row) for row in _query(kind, filters)[skip:skip + limit - len(rows)]]
        skip = 0
    end = offset + len(rows)
    return QueuePage(rows=rows, total=total, offset=offset, next_offset=end if end < total else None,
                     counts={kind: n for kind, n in counts.items() if n})


def review_queue_after(*, filters: QueueFilters, kind: str, pk: int, limit: int = PAGE_SIZE) -> QueuePage:
    """The ``limit`` rows that follow the row ``(kind, pk)`` in the queue's order, whatever was
    decided above it meanwhile: what "load more" appends."""
    kinds = [filters.kind] if filters.kind else list(VERIFY_TARGETS)
    if kind not in kinds:
        return QueuePage(rows=[], total=0, offset=0, next_offset=None)
    rows: list[tuple[str, object]] = []
    for current in kinds[kinds.index(kind):]:
        if len(rows) >= limit + 1:
            break
        query = _query(current, filters)
        if current == kind:
            query = query.filter(pk__gt=pk)
        rows += [(current, row) for row in query[:limit + 1 - len(rows)]]
    more = len(rows) > limit
    return QueuePage(rows=rows[:limit], total=len(rows[:limit]), offset=0, next_offset=1 if more else None)


def source_models(*, task: Task | None) -> list[str]:
    """The distinct ``proposed_by`` values of proposals (of a task, or everywhere): the source
    filter's suggestions."""
    names: set[str] = set()
    for kind, (model, task_path) in VERIFY_TARGETS.items():
        query = model.objects.exclude(proposed_by="")
        if task is not None:
            query = query.filter(**{task_path: task})
        names.update(query.values_list("proposed_by", flat=True).distinct()[:50])
    return sorted(names)[:100]
