"""The item browser's reads: a project's items for its curators, filtered (status, disagreement,
annotator, needs adjudication, labelled after, position or task), sorted, one page at a time.

Blind projects. A curator learns of an item what ``annotation.blind`` reveals to a curator:
while it is open (still being labelled) its labels' content, whether they disagree, who labelled
it and when stay hidden; its live claims (who holds it now, so that a curator can release a
stalled hold) and its counts do not. So the disagreement, annotator-as-labeller and
labelled-after filters and the sorts by last label only match revealed items, and the rows say
"hidden while open" instead of a value — the filters cannot be used to learn what the rows hide."""

from dataclasses import dataclass
from datetime import date, datetime, time

from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Count, Exists, Max, OuterRef, Q
from django.utils import timezone

from ..blind import revealed_unlabelled
from ..models import AnnotationItem, AnnotationProject, Assignment, Label, ProjectMembership, Role
from ..rules import claims_live

PAGE_SIZE = 50
STATUSES = {"all": "Every status", "open": "Open", "complete": "Complete", "adjudicated": "Adjudicated"}
SORTS = {"position": "Position", "-labels": "Most labels first", "labels": "Fewest labels first",
         "-last_label": "Latest label first", "status": "Status"}


@dataclass(frozen=True)
class ItemFilters:
    status: str = "all"
    disagreement: bool = False
    needs_adjudication: bool = False
    annotator: int | None = None
    labelled_after: date | None = None
    text: str = ""
    sort: str = "position"

    @classmethod
    def from_query(cls, query) -> "ItemFilters":
        status = query.get("status", "all")
        annotator = query.get("annotator", "")
        try:
            after = date.fromisoformat(query.get("labelled_after", "")) if query.get("labelled_after") else None
        except ValueError:
            after = None
        sort = query.get("sort", "position")
        return cls(status=status if status in STATUSES else "all", disagreement=query.get("disagreement") == "1",
                   needs_adjudication=query.get("needs_adjudication") == "1",
                   annotator=int(annotator) if annotator.isdigit() else None, labelled_after=after,
                   text=query.get("q", "").strip()[:100], sort=sort if sort in SORTS else "position")

    def as_query(self) -> dict:
        out = {"status": self.status if self.status != "all" else "", "disagreement": "1" if self.disagreement else "",
               "needs_adjudication": "1" if self.needs_adjudication else "",
               "annotator": self.annotator or "", "labelled_after": self.labelled_after.isoformat()
               if self.labelled_after else "", "q": self.text, "sort": self.sort if self.sort != "position" else ""}
        return {name: value for name, value in out.items() if value}


def revealed_statuses(project: AnnotationProject) -> list[str]:
    """The item statuses whose hidden parts ``annotation.blind`` reveals to the project's curators."""
    closed = project.status == AnnotationProject.Status.CLOSED
    return [status for status in AnnotationItem.Status.values
            if revealed_unlabelled(blind=project.blind, role=Role.CURATOR, status=status, closed=closed)]


def item_browser_page(*, project: AnnotationProject, filters: ItemFilters, page: int | str = 1) -> dict:
    """One page of rows (a bounded number of queries: the page's items with their counts, their
    live claims with their holders, their labellers)."""
    now = timezone.now()
    shown = revealed_statuses(project)
    revealed = Q(status__in=shown)
    items = AnnotationItem.objects.filter(project=project).select_related("task")
    if filters.status != "all":
        items = items.filter(status=filters.status)
    if filters.disagreement:
        items = items.filter(revealed, disagreement=True)
    if filters.needs_adjudication:
        items = items.filter(revealed, Q(disagreement=True) | ~Q(conflict=""), status=AnnotationItem.Status.COMPLETE)
    if filters.annotator:
        labelled = Exists(Label.objects.filter(item=OuterRef("pk"), annotator_id=filters.annotator))
        held = Exists(Assignment.objects.filter(claims_live(now), item=OuterRef("pk"), user_id=filters.annotator))
        items = items.filter((revealed & labelled) | held)
    if filters.labelled_after:
        since = timezone.make_aware(datetime.combine(filters.labelled_after, time.min))
        items = items.filter(revealed, Exists(Label.objects.filter(item=OuterRef("pk"), created_at__gte=since)))
    if filters.text:
        match = Q(task__key__icontains=filters.text) | Q(task__title__icontains=filters.text)
        if filters.text.isdigit():
            match |= Q(position=int(filters.text))
        items = items.filter(match)
    items = items.annotate(last_label_at=Max("labels__created_at", filter=revealed))
    order = {"position": ("position", "id"), "-labels": ("-labels_done", "position", "id"),
             "labels": ("labels_done", "position", "id"), "status": ("status", "position", "id"),
             "-last_label": ("-last_label_at", "position", "id")}[filters.sort]
    if filters.sort == "-last_label":
        items = items.order_by(Max("labels__created_at", filter=revealed).desc(nulls_last=True), "position", "id")
    else:
        items = items.order_by(*order)
    paginator = Paginator(items, PAGE_SIZE)
    current = paginator.get_page(page)
    rows = list(current)
    ids = [item.pk for item in rows]
    claims: dict[int, list] = {}
    for claim in (Assignment.objects.filter(claims_live(now), item_id__in=ids).select_related("user")
                  .order_by("expires_at")):
        claims.setdefault(claim.item_id, []).append(claim)
    labellers: dict[int, list[str]] = {}
    for item_id, username in (Label.objects.filter(item_id__in=ids, item__status__in=shown)
                              .order_by("created_at").values_list("item_id", "annotator__username")):
        labellers.setdefault(item_id, []).append(username)
    for item in rows:
        item.revealed = item.status in shown
        item.live_claims = claims.get(item.pk, [])
        item.labellers = labellers.get(item.pk, [])
        item.needs_adjudication = item.revealed and item.status == AnnotationItem.Status.COMPLETE and (
            item.disagreement or bool(item.conflict))
    return {"page": current, "rows": rows, "now": now, "revealed_statuses": shown}


def project_annotators(project: AnnotationProject) -> list[tuple[int, str]]:
    """The project's annotators, for the annotator filter."""
    users = get_user_model().objects.filter(
        pk__in=ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR).values("user_id"))
    return list(users.order_by("username").values_list("pk", "username"))


def item_status_counts(project: AnnotationProject) -> dict[str, int]:
    return dict(AnnotationItem.objects.filter(project=project).values_list("status").annotate(n=Count("id"))
                .order_by())
