"""The review queue's reads: every proposal of the benchmark (one task's, or across tasks) filtered
by kind, review status, source model and text, one page at a time in one stable order — kinds in
``VERIFY_TARGETS`` order, then creation order — so "load more" continues where a page ended and a
decision taken meanwhile never hides nor repeats a row of the next page (the offset counts the
rows of the chosen status *as read*; see ``review_queue_page``)."""

from dataclasses import dataclass, field

from django.db.models import CharField, Count, Q, QuerySet, Value

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
# What a row shows beside its own fields (its task's key, a checklist item's group name, a gold
# reference's title), read with the row: a page of fifty rows is one SELECT, a decision none more.
ROW_RELATED = {TargetKind.CHECKLIST_ITEM: ("group__task",), TargetKind.GOLD_REFERENCE: ("bib_entry", "task")}


def row_related(kind: str) -> tuple[str, ...]:
    """The relations a row of ``kind`` is read with (``select_related``)."""
    return ROW_RELATED.get(kind, ("task",))


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


def _matching(kind: str, filters: QueueFilters) -> QuerySet:
    """The rows of ``kind`` the filters keep, unordered (one ``filter``: each clone of a queryset
    costs, and the counts build one per kind on every page)."""
    model, task_path = VERIFY_TARGETS[kind]
    condition = Q()
    if filters.task is not None:
        condition &= Q(**{task_path: filters.task})
    if filters.status == "open":
        condition &= ~Q(review_status__in=SETTLED_STATUSES)
    elif filters.status != "all":
        condition &= Q(review_status=ReviewStatus(filters.status))
    if filters.source:
        condition &= Q(proposed_by__icontains=filters.source)
    if filters.text:
        match = Q()
        for name in _TEXT_FIELDS[kind]:
            match |= Q(**{f"{name}__icontains": filters.text})
        condition &= match
    return model.objects.filter(condition).order_by()


def _query(kind: str, filters: QueueFilters) -> QuerySet:
    """The rows of ``kind`` in the queue's order, read with what a row shows."""
    return _matching(kind, filters).select_related(*row_related(kind)).order_by("pk")


def _counts(kinds: list[str], filters: QueueFilters) -> dict[str, int]:
    """The number of rows per kind, in one query (a ``UNION ALL`` of one ``COUNT`` per kind)."""
    parts = [_matching(kind, filters).annotate(queue_kind=Value(kind, output_field=CharField()))
             .values("queue_kind").annotate(n=Count("pk")).values_list("queue_kind", "n") for kind in kinds]
    counted = dict(parts[0].union(*parts[1:], all=True)) if len(parts) > 1 else dict(parts[0])
    return {kind: counted.get(kind, 0) for kind in kinds}


def review_queue_page(*, filters: QueueFilters, offset: int = 0, limit: int = PAGE_SIZE) -> QueuePage:
    """``limit`` rows from ``offset`` in the queue's order, with the count per kind (one query for
    the counts, one SELECT per kind the page reaches, whatever the number of rows).

    The open queue shrinks as a curator decides: the page's "load more" therefore asks for the
    next rows *after the last one it shows* (``after``), not by a count — see ``review_queue_after``."""
    kinds = [filters.kind] if filters.kind else list(VERIFY_TARGETS)
    counts = _counts(kinds, filters)
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
    """The first 100 distinct ``proposed_by`` values of proposals (of a task, or everywhere), in
    alphabetical order: the source filter's suggestions, in one query (a ``UNION`` over the kinds;
    each part without the model's ordering, which ``DISTINCT`` would otherwise count in)."""
    parts = []
    for model, task_path in VERIFY_TARGETS.values():
        query = model.objects.exclude(proposed_by="")
        if task is not None:
            query = query.filter(**{task_path: task})
        parts.append(query.order_by().values_list("proposed_by", flat=True))
    return list(parts[0].union(*parts[1:]).order_by("proposed_by")[:100])
