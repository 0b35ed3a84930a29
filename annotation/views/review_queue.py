"""The review queue: a curator decides every proposal of a task (or of the benchmark, filtered by
kind, status, source model and text) by keyboard, each decision swapping its one row through htmx
and "load more" appending the next rows, with no page load. Curators only; the rules are the
services' (``services.review_queue``), the reads the selectors' (``selectors.review_queue``)."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from benchmark.models import Task
from benchmark.services.history import StaleEditError, snapshot
from core.accounts import is_global_curator
from core.http import refuse

from ..forms import REASON_LABELS, VerifyEditForm
from ..models import VERIFY_TARGETS, TargetKind
from ..selectors.review_queue import STATUSES, QueueFilters, review_queue_after, review_queue_page, source_models
from ..services.review_queue import proposal_decide, proposals_decide_bulk
from ..services.solo_review import SoloReviewError
from ..services.values import VERIFY_REASONS

CURATORS_ONLY = "Only curators review proposals."
REASONS = [(code, REASON_LABELS[code]) for code in VERIFY_REASONS]


def _edit_form(kind: str, row, data=None) -> VerifyEditForm:
    return VerifyEditForm(data, prefix="edit", target_kind=kind, current=snapshot(row), auto_id=f"rq_{kind}_{row.pk}_%s")


def _row(kind: str, row, *, message: str = "", error: str = "", form=None) -> dict:
    """A row's context; ``form``: an edit that was refused, shown again with what the expert typed
    (otherwise the edit fields come when the panel opens, ``edit_fields``)."""
    decide_url = _decide_url(kind, row.pk)
    return {"kind": kind, "kind_label": TargetKind(kind).label, "row": row, "form": form,
            "message": message, "error": error, "open": row.review_status == "proposed",
            "decide_url": decide_url, "edit_url": f"{decide_url}edit/"}


def _decide_url(kind: str, pk: int) -> str:
    # one reverse per kind, not three per row: a page of fifty rows spent a fifth of its time there
    return _DECIDE_URLS.setdefault(kind, reverse("annotation:review_decide", args=[kind, 1])[:-2]) + f"{pk}/"


_DECIDE_URLS: dict[str, str] = {}


def _task_of(request) -> Task | None:
    task_id = request.GET.get("task", "")
    return get_object_or_404(Task, pk=int(task_id)) if task_id.isdigit() else None


@require_GET
@login_required
def queue(request):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    task = _task_of(request)
    filters = QueueFilters.from_query(request.GET, task=task)
    after = request.GET.get("after", "")
    context = {"filters": filters, "query": filters.as_query(), "reasons": REASONS, "statuses": STATUSES}
    if request.htmx and after.count(":") == 1:  # "load more": the rows after the last one shown
        kind, _, pk = after.partition(":")
        page = review_queue_after(filters=filters, kind=kind, pk=int(pk) if pk.isdigit() else 0)
        return render(request, "annotation/review_queue/_rows.html",
                      {**context, "page": page, "rows": [_row(k, r) for k, r in page.rows]})
    page = review_queue_page(filters=filters)
    context.update(
        page=page, rows=[_row(k, r) for k, r in page.rows], task=task, sources=source_models(task=task),
        kinds=[(kind, TargetKind(kind).label) for kind in VERIFY_TARGETS],
        count_labels=[(TargetKind(kind).label, n) for kind, n in page.counts.items()],
    )
    return render(request, "annotation/review_queue/queue.html", context)


@require_GET
@login_required
def edit_fields(request, kind: str, pk: int):
    """The edit panel's fields of one proposal, prefilled with what is stored now."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    if kind not in VERIFY_TARGETS:
        return refuse(request, f"No proposal kind {kind!r}.", status=404)
    row = get_object_or_404(VERIFY_TARGETS[kind][0], pk=pk)
    return render(request, "annotation/review_queue/_edit_fields.html", {"form": _edit_form(kind, row)})


@require_POST
@login_required
def decide(request, kind: str, pk: int):
    """One decision; answers the row as it now is (200), or as it was with the reason it was not
    applied (409 stale or settled, 422 invalid), the expert's input kept in the edit form."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    if kind not in VERIFY_TARGETS:
        return refuse(request, f"No proposal kind {kind!r}.", status=404)
    model = VERIFY_TARGETS[kind][0]
    row = get_object_or_404(model.objects.select_related(*_related(kind)), pk=pk)
    decision = request.POST.get("decision", "")
    version = request.POST.get("expected_version", "")
    form = None
    edits = None
    status, error = 200, ""
    if not version.isdigit():
        status, error = 422, "Not applied: the row lacks the version it was based on; reload the page."
    elif decision == "edit":
        form = _edit_form(kind, row, request.POST)
        if form.is_valid():
            edits = form.edits()
        else:
            status = 422
            error = "Not applied: " + "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
    if not error:
        try:
            updated = proposal_decide(kind=kind, pk=pk, decision=decision, expected_version=int(version),
                                      actor=request.user, edits=edits, reason_code=request.POST.get("reason", ""),
                                      reason_text=request.POST.get("reason_text", ""))
        except StaleEditError as exc:
            status, error = 409, f"Not applied: {exc}"
        except SoloReviewError as exc:
            settled = row.review_status != "proposed"
            status, error = (409 if settled else 422), f"Not applied: {exc}"
        except (LookupError, ValueError) as exc:
            status, error = 422, f"Not applied: {exc}"
        except ValidationError as exc:
            status, error = 422, f"Not applied: {'; '.join(exc.messages)}"
        else:
            updated = model.objects.select_related(*_related(kind)).get(pk=pk)
            message = f"{updated.get_review_status_display()}{_why(decision, request.POST)}."
            if getattr(updated, "task_curated", False):
                message += " Every proposal of its task is settled: the task is now curated."
            return render(request, "annotation/review_queue/_row.html",
                          {"p": _row(kind, updated, message=message), "reasons": REASONS})
    row.refresh_from_db()
    return render(request, "annotation/review_queue/_row.html",
                  {"p": _row(kind, row, error=error, form=form), "reasons": REASONS}, status=status)


def _why(decision: str, data) -> str:
    """The reason as the confirmation says it: " — Duplicate: same as group 1"."""
    code, text = data.get("reason", "").strip(), data.get("reason_text", "").strip()
    if decision != "reject" or not (code or text):
        return ""
    return f" — {REASON_LABELS.get(code, code)}{': ' + text if text else ''}"


def _related(kind: str) -> tuple[str, ...]:
    return {"checklist_item": ("group__task",), "gold_reference": ("bib_entry", "task")}.get(
        kind, () if kind == "rubric_criterion" else ("task",))


@require_POST
@login_required
def bulk(request):
    """Accept or reject the selected proposals (``kind:pk:version`` each); answers a summary for
    the status line and every decided row out of band."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    items = []
    for value in request.POST.getlist("selected"):
        kind, _, rest = value.partition(":")
        pk, _, version = rest.partition(":")
        if kind in VERIFY_TARGETS and pk.isdigit() and version.isdigit():
            items.append((kind, int(pk), int(version)))
    decision = request.POST.get("decision", "")
    try:
        outcomes = proposals_decide_bulk(items=items, decision=decision, actor=request.user,
                                         reason_code=request.POST.get("reason", ""),
                                         reason_text=request.POST.get("reason_text", ""))
    except SoloReviewError as exc:
        return HttpResponse(f"Not applied: {exc}", status=422, content_type="text/plain; charset=utf-8")
    rows = []
    for outcome in outcomes:
        model = VERIFY_TARGETS[outcome.kind][0]
        row = model.objects.select_related(*_related(outcome.kind)).filter(pk=outcome.pk).first()
        if row is not None:
            rows.append(_row(outcome.kind, row, error=outcome.error and f"Not applied: {outcome.error}",
                             message="" if outcome.error else
                             f"{row.get_review_status_display()} (bulk){_why(decision, request.POST)}."))
    done = sum(1 for outcome in outcomes if not outcome.error)
    verb = "accepted" if decision == "accept" else "rejected"
    return render(request, "annotation/review_queue/_bulk_result.html",
                  {"rows": rows, "done": done, "failed": len(outcomes) - done, "verb": verb, "reasons": REASONS})
