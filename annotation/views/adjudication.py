"""The curators' adjudication queue: disagreements side by side, a gold label per item."""

import json

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from ..forms import AdjudicationForm, service_error_attach
from ..models import AnnotationProject, Role, TargetKind
from ..selectors.workspace import adjudication_queue, item_context_for
from ..services.errors import AnnotationError, ReviewConflictError
from ..loop.settle import item_adjudicate
from . import display
from core.http import refuse
from .access import item_in, project_for

Kind = AnnotationProject.Kind


def _curator_project(request, project_id: int):
    project, role = project_for(request, project_id)
    if role != Role.CURATOR:
        return project, refuse(request, f"Only curators adjudicate items of project “{project.name}”.")
    return project, None


def _candidates(kind: str, row: dict) -> list[dict]:
    """The values a curator can adopt: each distinct label given, and the judge's label."""
    sides = display.sides_of(kind, row["target"])
    seen, out = set(), []
    for label in row["labels"]:
        key = json.dumps(label["value"], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            {"key": f"label-{label['id']}", "value": label["value"],
             "summary": f"{display.value_summary(kind, label['value'], sides=sides)} (as {label['annotator']})"}
        )
    judge = row.get("judge")
    if judge and judge.get("label") and not any(c["value"].get("label") == judge["label"] for c in out):
        out.append({"key": "judge", "value": {"label": judge["label"]}, "summary": f"The judge: {judge['label']}"})
    return out


def _row_view(project: AnnotationProject, row: dict, data=None) -> dict:
    kind = project.kind
    sides = display.sides_of(kind, row["target"])
    labels = [{**label, "summary": display.value_summary(kind, label["value"], sides=sides)} for label in row["labels"]]
    initial = {"expected_version": row["target"].get("version")} if row["conflict"] else {}
    # An agreement item's gold label is one of its own step's labels (``target["labels"]``).
    label_set = project.label_set
    if row["target"].get("labels"):
        label_set = {**label_set, "label": row["target"]["labels"]}
    form = AdjudicationForm(
        data, prefix=f"item-{row['item_id']}", initial=initial, kind=kind, label_set=label_set,
        candidates=_candidates(kind, row), target=row["target"],
    )
    kind_label = TargetKind(row["target"]["kind"]).label if row["target"].get("kind") in TargetKind.values else ""
    judged = display.judged_text(row["target"]) if "judge" in row else ""  # a verdict's item
    return {**row, "labels": labels, "form": form, "kind_label": kind_label, "judged": judged}


def _row_from_context(context: dict) -> dict:
    """An item context in the shape of an ``adjudication_queue`` row."""
    item = context["item"]
    labels = ([context["own_label"]] if context["own_label"] else []) + list(context["other_labels"] or [])
    return {
        "item_id": item["id"], "position": item["position"], "task_id": item["task_id"], "conflict": item["conflict"],
        "target": context["target"], "labels": sorted(labels, key=lambda label: (label["created_at"], label["id"])),
        "judge": context["judge"],
    }


@login_required
def queue(request, project_id: int):
    project, refused = _curator_project(request, project_id)
    if refused:
        return refused
    rows = [_row_view(project, row) for row in adjudication_queue(project=project)]
    return render(request, "annotation/adjudication.html", {"project": project, "rows": rows})


@require_POST
@login_required
def adjudicate(request, project_id: int, item_id: int):
    project, refused = _curator_project(request, project_id)
    if refused:
        return refused
    item = item_in(project, item_id)
    row = _row_view(project, _row_from_context(item_context_for(item=item, user=request.user)), request.POST)
    form = row["form"]
    template = "annotation/_adjudication_row.html"
    if not form.is_valid():
        return render(request, template, {"project": project, "row": row}, status=422)
    try:
        gold = item_adjudicate(
            item=item, curator=request.user, value=form.value(), note=form.cleaned_data["note"],
            expected_version=form.cleaned_data["expected_version"],
        )
    except ValueError as exc:
        service_error_attach(form, exc)
        return render(request, template, {"project": project, "row": row}, status=422)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except ReviewConflictError as exc:
        # Show the proposal as it is now; saving again applies the gold label to that version.
        current = _row_from_context(item_context_for(item=item, user=request.user))
        data = request.POST.copy()
        data[form.add_prefix("expected_version")] = current["target"].get("version")
        row = _row_view(project, current, data)
        row["error"] = f"{exc} Check the proposal as it is now; saving again applies your gold label to it."
        return render(request, template, {"project": project, "row": row}, status=409)
    except AnnotationError as exc:
        row["error"] = str(exc)
        return render(request, template, {"project": project, "row": row}, status=409)
    if not request.htmx:
        return redirect("annotation:adjudication", project_id=project.pk)
    summary = display.value_summary(project.kind, gold.value, sides=display.sides_of(project.kind, row["target"]))
    return render(request, template, {"project": project, "row": row, "gold": gold, "gold_summary": summary})
