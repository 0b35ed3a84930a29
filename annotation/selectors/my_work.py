"""An annotator's own work in one project (issue #30): their labels, their skips, and the holds
that expired before they labelled. Only their own rows: nothing here is hidden from them in a
blind project (an item's status and label count are shown in the workspace too)."""

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from ..models import AnnotationProject, Assignment, Label
from ..rules import claims_lapsed

LIMIT = 500  # the newest rows of each list; the page says when more exist


def my_work(*, project: AnnotationProject, user, limit: int = LIMIT) -> dict:
    """``labels`` (newest first, with their items), ``skips`` (skipped items they have not
    labelled since), ``expired`` (claims that ran out on items they have not labelled), each a
    list of at most ``limit`` rows, and ``more``: which lists were cut. Three queries."""
    now = timezone.now()
    labelled = Label.objects.filter(item=OuterRef("item"), annotator=user)
    labels = list(Label.objects.filter(project=project, annotator=user).select_related("item")
                  .order_by("-created_at", "-id")[:limit + 1])
    skips = list(Assignment.objects.filter(project=project, user=user, status=Assignment.Status.SKIPPED)
                 .exclude(Exists(labelled)).select_related("item").order_by("-ended_at", "-id")[:limit + 1])
    expired = list(
        Assignment.objects.filter(project=project, user=user)
        .filter(Q(status=Assignment.Status.EXPIRED) | claims_lapsed(now))
        .exclude(Exists(labelled)).select_related("item").order_by("-expires_at", "-id")[:limit + 1]
    )
    more = {name: len(rows) > limit for name, rows in (("labels", labels), ("skips", skips), ("expired", expired))}
    return {"labels": labels[:limit], "skips": skips[:limit], "expired": expired[:limit], "more": more}
