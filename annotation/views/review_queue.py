"""The review queue: a curator decides every proposal of a task (or of the benchmark, filtered by
kind, status, source model and text) by keyboard, each decision swapping its one row through htmx
and "load more" appending the next rows, with no page load. Curators only; the rules are the
services' (``services.review_queue``), the reads the selectors' (``selectors.review_queue``)."""

from collections import defaultdict

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import get_script_prefix, reverse
from django.utils.html import format_html_join
from django.views.decorators.http import require_GET, require_POST

from benchmark.models import Task
from benchmark.rendering import source_text
from benchmark.services.history import StaleEditError, snapshot
from core.accounts import is_global_curator
from core.http import refuse

from ..forms import REASON_LABELS, VerifyEditForm
from ..models import VERIFY_TARGETS, TargetKind
from ..selectors.review_queue import (STATUSES, QueueFilters, review_queue_after, review_queue_page, row_related,
                                      source_models)
from ..services.review_queue import proposal_decide, proposals_decide_bulk
from ..services.solo_review import SoloReviewError
from ..services.values import VERIFY_REASONS

CURATORS_ONLY = "Only curators review proposals."
REASONS = [(code, REASON_LABELS[code]) for code in VERIFY_REASONS]
# The reject reasons' <option>s, rendered once: every open row has its own reject panel.
REASON_OPTIONS = format_html_join("", '<option value="{}">{}</option>', REASONS)


def _edit_form(kind: str, row, data=None) -> VerifyEditForm:
    return VerifyEditForm(data, prefix="edit", target_kind=kind, current=snapshot(row), auto_id=f"rq_{kind}_{row.pk}_%s")


def _row(kind: str, row, *, message: str = "", error: str = "", form=None) -> dict:
    """A row's context; ``form``: an edit that was refused, shown again with what the expert typed
    (otherwise the edit fields come when the panel opens, ``edit_fields``).

    What the row shows is made here as plain strings, once per row (its element ids, where it is
    from, its text): a page renders fifty rows, and in the template each lookup of a field a kind
    lacks costs a ``dir()`` of the row and each number a pass through localization."""
    decide_url = _decide_url(kind, row.pk)
    kind_label = TargetKind(kind).label
    lead, title, body, source = _text_of(row)
    return {"kind": kind, "kind_label": kind_label, "kind_noun": kind_label.lower(), "row": row, "form": form,
            "message": message, "error": error, "open": row.review_status == "proposed",
            "dom_id": f"{kind}-{row.pk}", "pk": str(row.pk), "version": str(row.version),
            "status": row.review_status, "status_label": row.get_review_status_display(),
            "where": _where(row), "origin": row.get_origin_display().lower(), "proposed_by": row.proposed_by,
            "lead": lead, "title": title, "body": body, "source": source,
            "decide_url": decide_url, "edit_url": f"{decide_url}edit/"}


def _where(row) -> str:
    """The task a row belongs to, by key ("discipline rubric": a criterion of no task)."""
    task = getattr(row, "task", None)
    if task is not None:
        return task.key
    group = getattr(row, "group", None)
    return group.task.key if group is not None else "discipline rubric"


def _text_of(row) -> tuple[str, str, str, bool]:
    """What a row says: ``(lead, title, body, body is source text)`` — a checklist item's group
    name before its text, a gold reference's title and year, a criterion's or group's name in bold
    before its description; source text keeps its line breaks and unescapes LaTeX's specials."""
    group = getattr(row, "group", None)
    lead = group.name if group is not None else ""
    bib = getattr(row, "bib_entry", None)
    if bib is not None:
        return lead, "", f"{bib.title} ({bib.year})" if bib.year else bib.title, False
    text = getattr(row, "text", "")
    if text:
        return lead, "", source_text(str(text)), True
    return lead, getattr(row, "name", ""), getattr(row, "description", ""), False


def _decide_url(kind: str, pk: int) -> str:
    # one reverse per kind and script prefix, not three per row: a page of fifty rows spent a fifth
    # of its time there (``setdefault(kind, reverse(…))`` reversed on every call: its argument is
    # evaluated before the lookup)
    key = (get_script_prefix(), kind)
    base = _DECIDE_URLS.get(key)
    if base is None:
        base = _DECIDE_URLS[key] = reverse("annotation:review_decide", args=[kind, 1])[:-2]
    return f"{base}{pk}/"


_DECIDE_URLS: dict[tuple[str, str], str] = {}


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
    context = {"filters": filters, "query": filters.as_query(), "reason_options": REASON_OPTIONS,
               "statuses": STATUSES}
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
    applied (409 stale or settled, 422 invalid), the expert's input kept in the edit form.

    An accept or a reject reads nothing before the service, which reads the row under its lock
    with what the row shows and returns it updated: the answer is rendered from that row. Only an
    edit reads the row first (its form compares the typed text with the stored one), and only a
    refusal reads it again to show it as it is."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    if kind not in VERIFY_TARGETS:
        return refuse(request, f"No proposal kind {kind!r}.", status=404)
    model = VERIFY_TARGETS[kind][0]
    decision = request.POST.get("decision", "")
    version = request.POST.get("expected_version", "")
    form = None
    edits = None
    status, error = 200, ""
    if not version.isdigit():
        status, error = 422, "Not applied: the row lacks the version it was based on; reload the page."
    elif decision == "edit":
        form = _edit_form(kind, get_object_or_404(model, pk=pk), request.POST)
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
            status, error = None, f"Not applied: {exc}"  # 409 if the row is settled, else 422: below
        except (LookupError, ValueError) as exc:
            status, error = 422, f"Not applied: {exc}"
        except ValidationError as exc:
            status, error = 422, f"Not applied: {'; '.join(exc.messages)}"
        else:
            message = f"{updated.get_review_status_display()}{_why(decision, request.POST)}."
            if getattr(updated, "task_curated", False):
                message += " Every proposal of its task is settled: the task is now curated."
            return render(request, "annotation/review_queue/_row.html",
                          {"p": _row(kind, updated, message=message), "reason_options": REASON_OPTIONS})
    row = get_object_or_404(model.objects.select_related(*row_related(kind)), pk=pk)
    if status is None:
        status = 409 if row.review_status != "proposed" else 422
    return render(request, "annotation/review_queue/_row.html",
                  {"p": _row(kind, row, error=error, form=form), "reason_options": REASON_OPTIONS}, status=status)


def _why(decision: str, data) -> str:
    """The reason as the confirmation says it: " — Duplicate: same as group 1"."""
    code, text = data.get("reason", "").strip(), data.get("reason_text", "").strip()
    if decision != "reject" or not (code or text):
        return ""
    return f" — {REASON_LABELS.get(code, code)}{': ' + text if text else ''}"


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
    # the applied rows come back from the service as they now are; the refused ones are read
    # together, one query per kind among them
    refused = defaultdict(list)
    for outcome in outcomes:
        if outcome.error:
            refused[outcome.kind].append(outcome.pk)
    as_stored = {(kind, pk): row for kind, pks in refused.items()
                 for pk, row in VERIFY_TARGETS[kind][0].objects.select_related(*row_related(kind)).in_bulk(pks).items()}
    rows = []
    for outcome in outcomes:
        row = outcome.row if not outcome.error else as_stored.get((outcome.kind, outcome.pk))
        if row is not None:
            rows.append(_row(outcome.kind, row, error=outcome.error and f"Not applied: {outcome.error}",
                             message="" if outcome.error else
                             f"{row.get_review_status_display()} (bulk){_why(decision, request.POST)}."))
    done = sum(1 for outcome in outcomes if not outcome.error)
    verb = "accepted" if decision == "accept" else "rejected"
    return render(request, "annotation/review_queue/_bulk_result.html",
                  {"rows": rows, "done": done, "failed": len(outcomes) - done, "verb": verb,
                   "reason_options": REASON_OPTIONS})
