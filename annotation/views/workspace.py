"""The labelling workspace: the claimed item, submit, skip, undo — htmx swaps ``#workspace``.

Every response to an htmx request is the panel partial (plus the progress line out of band);
the same URLs serve full pages without JavaScript. What an item shows comes from
``item_context_for`` only (it enforces blind mode).
"""

from django import forms
from django.contrib import messages
from django.core.exceptions import NON_FIELD_ERRORS
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from ..loop.claims import assignment_skip, claim_next_items, skips_revisit
from ..forms import ProposableAddForm, add_error_attach, label_form_for, service_error_attach
from ..middleware import ranking_refusal
from ..kinds import kind_of
from ..models import VERIFY_TARGETS, AnnotationItem, AnnotationProject, TargetKind
from ..selectors.my_work import my_work as my_work_rows
from ..selectors.projects import LABELLING_ROLES
from ..selectors.targets import item_target
from ..selectors.workspace import item_context_for, label_form_context, task_material
from ..services.additions import addable_kinds, proposable_add
from ..services.errors import AnnotationError, ProjectNotOpenError
from ..loop.labels import Submission, label_submit_and_claim, label_submit_many
from ..loop.progress import own_progress
from ..services.projects import guidelines_seen_record
from ..loop.undo import label_undo_last, undo_target_item
from . import display
from core.audit_actions import AuditAction
from core.http import refuse
from .access import alert, item_in, project_for

Kind = AnnotationProject.Kind
ADD_REFUSED = "Missing items are added beside a verify proposal of a task, by the project's reviewers."


FLASH_TAG = "ws-flash"


def _redirect(request, flash: str, to: str, **kwargs):
    """Without htmx, a POST answers with a redirect: the flash rides along as a message that the
    next page's panel shows (``_render``), so a no-JavaScript user reads what happened too."""
    messages.info(request, flash, extra_tags=FLASH_TAG)
    return redirect(to, **kwargs)


def _carried_flash(request) -> str:
    return " ".join(str(m) for m in messages.get_messages(request) if FLASH_TAG in m.extra_tags.split())


def _guidelines(request, project, *, answer: bool) -> dict | None:
    """The project's guidelines as the header shows them (``_guidelines.html``): open on the
    member's first page and again after each change (then remembered as seen: their labels
    record that version), else folded. ``answer``: for an htmx answer, which swaps the header's
    guidelines only when they are to open (a change since the member's page showed them)."""
    if not project.guidelines_version:
        return None
    seen = getattr(project, "my_guidelines_seen", None)  # None: no membership, nothing remembered
    opening = seen is None or seen < project.guidelines_version
    if answer and not (opening and seen is not None):
        return None
    if opening and seen is not None:
        guidelines_seen_record(project=project, user=request.user, version=project.guidelines_version)
    return {"html": display.safe_markdown(project.guidelines), "version": project.guidelines_version,
            "open": opening, "changed": opening and bool(seen), "oob": answer}


def _error_summary(form) -> list[dict]:
    """Every error of a refused label form for the summary above the item (``role="alert"``),
    each linking to its field (a choice: its first option)."""
    rows = []
    for name, errors in (form.errors.items() if form is not None else ()):
        if name == NON_FIELD_ERRORS or name not in form.fields:
            rows += [{"text": error, "href": "", "label": ""} for error in errors]
            continue
        bound = form[name]
        if isinstance(bound.field.widget, forms.HiddenInput):
            rows += [{"text": f"{bound.label}: {error}", "href": "", "label": ""} for error in errors]
            continue
        anchor = bound.auto_id + ("_0" if isinstance(bound.field.widget, forms.RadioSelect) else "")
        rows += [{"text": error, "href": f"#{anchor}", "label": bound.label} for error in errors]
    return rows


def _item_page(request, project, role, *, item, claim=None, form=None, add_form=None, add_kind="", task=None) -> dict:
    """What the panel shows of ``item`` (``_item.html``): its context, form and display.
    ``task``: the task the panel's other item showed (``item_context_for``)."""
    context = item_context_for(item=item, user=request.user, with_task=True, role=role, claim=claim, project=project,
                               task=task)
    page = {"ctx": context}
    can_label = (
        context["own_label"] is None
        and context["item"]["status"] == AnnotationItem.Status.OPEN
        and context["role"] in LABELLING_ROLES
        and project.status == AnnotationProject.Status.OPEN
    )
    if form is None and can_label:
        form = label_form_for(context)  # a form passed in carries the user's input: always shown
    shown = display.kind_view(context, task=context["task"])
    if form is not None and getattr(form, "edit_form", None) is not None:  # verify: the fields to edit
        shown["fields"] = [dict(row, edit=form.edit_form[row["name"]]) for row in shown.get("fields", [])]
    # htmx panels load the "add a missing item" form when it is opened (most items never need
    # it, and building and rendering it is a fifth of the panel); a page shows it inline.
    add_lazy = bool(request.htmx) and add_form is None and not add_kind and _add_allowed(project, context)
    if context["own_label"] is not None and not project.blind:  # undo acts on the last label or skip only
        page["undoable"] = undo_target_item(annotator=request.user, project=project) == item.pk
    page.update(
        kind=context["project"]["kind"], kind_label=TargetKind(context["item"]["target_kind"]).label,
        item_template=kind_of(project).item_template,
        display=shown, labels=display.labels_view(context), form=form, error_summary=_error_summary(form),
        add_form=add_form if add_form is not None or add_lazy else _add_form(project, context, kind=add_kind),
        add_open=add_form is not None or bool(add_kind), add_lazy=add_lazy,
    )
    return page


# The htmx workspace holds the next item ready (issue #20): the panel carries it, claimed and
# rendered, in an inert <template>; on submit workspace.js shows it at once while the POST goes
# out, and the POST's answer brings the item after it (``PREFETCH_SHOWN``). Agreement items
# show the judge's verdict after the label, so their panel is not followed at once.
PREFETCH_SHOWN = "X-Ws-Shown"  # request header: the prefetched item the client already shows


def _prefetches(project) -> bool:
    return not kind_of(project).shows_after_label and project.status == AnnotationProject.Status.OPEN


def _after_html(request, project, role, after, *, task=None) -> str:
    """The prefetched item's section (``after``: its claim), for the panel's template.
    ``task``: the task of the item shown before it, if read (neighbours mostly share one)."""
    page = {"project": project, "material_lazy": True,
            **_item_page(request, project, role, item=after.item, claim=after, task=task)}
    return render_to_string("annotation/_item.html", page, request=request)


def _render(
    request, project, role, *, item=None, claim=None, after=None, form=None, add_form=None, add_kind="", flash="",
    notice="", status=200,
):
    """The panel for ``item`` (or the "nothing left" panel), as a page or an htmx partial.
    ``role``: the user's role in ``project``, read once per request by ``project_for``.
    ``after``: the claim on the item to hold ready behind it."""
    if not request.htmx and not flash:
        flash = _carried_flash(request)
    # htmx loads "everything proposed for this task" when it is opened; a page without
    # JavaScript shows it inline.
    page = {"project": project, "ctx": None, "flash": flash, "notice": notice, "oob": bool(request.htmx),
            "material_lazy": bool(request.htmx), "guidelines": _guidelines(request, project, answer=bool(request.htmx))}
    if item is not None:
        page.update(_item_page(request, project, role, item=item, claim=claim, form=form, add_form=add_form,
                               add_kind=add_kind))
        if after is not None:
            page["after_html"] = _after_html(request, project, role, after, task=page["ctx"]["task"])
    page["progress"] = own_progress(project=project, user=request.user)
    if not request.htmx:  # the page's top menu: Runs and Dashboards answer 403 to whoever labels blind
        page["hide_rankings"] = bool(ranking_refusal(request.user))
    template = "annotation/_panel.html" if request.htmx else "annotation/workspace.html"
    return render(request, template, page, status=status)


def _render_after(request, project, role, *, after, flash: str):
    """The answer to a label whose next item the client already shows (``PREFETCH_SHOWN``): the
    item after it (to hold ready), the flash and the progress line; nothing of what is shown."""
    page = {"project": project, "flash": flash, "oob": True,
            "guidelines": _guidelines(request, project, answer=True),
            "progress": own_progress(project=project, user=request.user),
            "after_html": _after_html(request, project, role, after) if after is not None else ""}
    response = render(request, "annotation/_prefetched.html", page)
    response["HX-Retarget"] = "#ws-after"
    response["HX-Reswap"] = "innerHTML"
    return response


def _add_allowed(project: AnnotationProject, context: dict) -> bool:
    """Whether the item's panel offers to add a missing item: beside a verify proposal of a
    task, to those who may label, while the project is open."""
    return bool(
        addable_kinds(project) and context["task"] is not None and context["role"] in LABELLING_ROLES
        and project.status == AnnotationProject.Status.OPEN
    )


def _add_form(project: AnnotationProject, context: dict, *, data=None, kind: str = "") -> ProposableAddForm | None:
    """The "add a missing item" form (``_add_allowed``), or None."""
    if not _add_allowed(project, context):
        return None
    return ProposableAddForm(data, kinds=addable_kinds(project), task=context["task"], kind=kind)


def _add_response(request, project, role, item, *, form=None, kind="", added=None, status=200):
    """The add card alone for htmx (it swaps ``#ws-add``: its first opening, a kind switch, an
    error, a success), else the whole workspace page around it."""
    if not request.htmx:
        return _render(request, project, role, item=item, add_form=form, add_kind=kind, status=status)
    context = item_context_for(item=item, user=request.user, with_task=True, role=role)
    opening = form is None and not kind and added is None
    form = form or _add_form(project, context, kind=kind)
    if form is None:
        return refuse(request, ADD_REFUSED)
    page = {"project": project, "ctx": context, "add_form": form, "added": added, "add_open": added is None,
            "add_swap": True, "add_opening": opening}
    return render(request, "annotation/_add_item.html", page, status=status)


def _next(request, project, role, *, flash: str = "", status: int = 200):
    """Claim the user's next item (or keep the held one) and show it."""
    try:
        claims = claim_next_items(project=project, user=request.user, role=role,
                                  count=2 if _prefetches(project) else 1)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except ProjectNotOpenError as exc:
        return _render(request, project, role, notice=str(exc), flash=flash, status=status)
    if not claims:
        return _render(request, project, role, flash=flash, status=status)
    return _render(request, project, role, item=claims[0].item, claim=claims[0], after=(claims[1:] or [None])[0],
                   flash=flash, status=status)


@login_required
def workspace(request, project_id: int):
    """GET claims (or returns the held) next item: a reservation that expires, never a label."""
    project, role = project_for(request, project_id)
    return _next(request, project, role)


MATERIAL_PART = "task-material"


@login_required
def item_detail(request, project_id: int, item_id: int):
    """The item's panel; ``?part=task-material``: only the "everything proposed for this
    task" section, which the htmx panel loads when it is opened."""
    project, role = project_for(request, project_id)
    item = item_in(project, item_id)
    if request.GET.get("part") == MATERIAL_PART:
        return _task_material(request, project, item)
    return _render(request, project, role, item=item)


def _task_material(request, project, item):
    """Every proposal of a verify item's task, the item's own marked. Blind mode hides none of
    it: it is benchmark content, not anyone's label (see ``item_context_for``)."""
    if item.target_kind not in VERIFY_TARGETS or not item.task_id:
        return refuse(request, "Only verify items of a task list what is proposed for their task.", status=404)
    task = task_material(task_id=item.task_id)
    target = {"kind": item.target_kind, "id": item.target_id}
    open_group_id = target["id"] if item.target_kind == TargetKind.CHECKLIST_GROUP else None
    if item.target_kind == TargetKind.CHECKLIST_ITEM:
        open_group_id = next(
            (g.pk for g in task.checklist_groups.all() if any(i.pk == item.target_id for i in g.items.all())), None
        )
    page = {"task": task, "target": target, "open_group_id": open_group_id}
    return render(request, "annotation/_task_material.html", page)


@require_POST
@login_required
def label_create(request, project_id: int, item_id: int):
    project, role = project_for(request, project_id)
    item = item_in(project, item_id)
    target = item_target(item)
    form = label_form_for(label_form_context(item=item, project=project, target=target), data=request.POST)
    if not form.is_valid():
        return _render(request, project, role, item=item, form=form, status=422)
    submission = Submission(item_id=item.pk, value=form.value(), client_token=form.cleaned_data["client_token"],
                            seconds_taken=form.cleaned_data.get("seconds_taken"))
    # An htmx submission answers with the next item: the label and its claim in one transaction.
    # Agreement items show the judge's verdict next, without JavaScript a redirect follows.
    follow = bool(request.htmx) and not kind_of(project).shows_after_label
    if follow:
        result, claims = label_submit_and_claim(
            annotator=request.user, submission=submission, project=project, role=role,
            count=2 if _prefetches(project) else 1,
        )
    else:
        (result,) = label_submit_many(annotator=request.user, submissions=[submission], project=project, role=role)
    if isinstance(result.error, ValueError):
        service_error_attach(form, result.error)
        return _render(request, project, role, item=item, form=form, status=422)
    if isinstance(result.error, PermissionError):
        return refuse(request, str(result.error))
    if result.error is not None:  # AnnotationError (the item is ours: item_in read it)
        form.add_error(None, str(result.error))
        return _render(request, project, role, item=item, form=form, status=409)
    if kind_of(project).shows_after_label:  # e.g. the judge's verdict, now that the label is committed
        flash = "Saved. Here is what the judge said."
        if not request.htmx:
            return _redirect(request, flash, "annotation:item", project_id=project.pk, item_id=item.pk)
        return _render(request, project, role, item=item, flash=flash)
    flash = f"Saved your label on item {item.position}. " + (
        "It is final: this project is blind." if project.blind else "Press u to undo it."
    )
    if not request.htmx:
        return _redirect(request, flash, "annotation:workspace", project_id=project.pk)
    if not claims:
        return _render(request, project, role, flash=flash)
    after = (claims[1:] or [None])[0]
    if request.headers.get(PREFETCH_SHOWN) == str(claims[0].item_id):  # the client shows it already
        return _render_after(request, project, role, after=after, flash=flash)
    return _render(request, project, role, item=claims[0].item, claim=claims[0], after=after, flash=flash)


@require_POST
@login_required
def item_skip(request, project_id: int, item_id: int):
    project, role = project_for(request, project_id)
    item = item_in(project, item_id)
    try:
        skipped = assignment_skip(item=item, user=request.user)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except AnnotationError as exc:
        return alert(request, str(exc))
    if skipped is None:
        flash = f"Item {item.position} was not reserved for you, so there was nothing to skip; here is your next item."
    else:
        flash = f"Skipped item {item.position}. Press u to undo."
    if not request.htmx:
        return _redirect(request, flash, "annotation:workspace", project_id=project.pk)
    return _next(request, project, role, flash=flash)


@require_POST
@login_required
def revisit_skipped(request, project_id: int):
    """Bring back the items the user skipped, and show the next one."""
    project, role = project_for(request, project_id)
    returned = skips_revisit(project=project, user=request.user)
    flash = f"{returned} skipped item{'s' if returned != 1 else ''} offered again." if returned else \
        "You had skipped nothing in this project."
    if not request.htmx:
        return _redirect(request, flash, "annotation:workspace", project_id=project.pk)
    return _next(request, project, role, flash=flash)


@require_POST
@login_required
def undo(request, project_id: int):
    """Undo the user's last label or skip and show that item again, reserved for them and ready
    to be labelled anew (``label_undo_last`` claims it again; the claim held meanwhile is
    released and usually comes back after this item)."""
    project, role = project_for(request, project_id)
    try:
        event = label_undo_last(annotator=request.user, project=project)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except AnnotationError as exc:
        return alert(request, str(exc))
    if event is None:
        return alert(request, "Nothing to undo in this project.", status=200, tone="info")
    item = item_in(project, event.target_id)
    what = "skip" if event.action == AuditAction.ASSIGNMENT_SKIP_UNDO else "label"
    flash = f"Undid your {what} on item {item.position}; label it again."
    if not request.htmx:
        return _redirect(request, flash, "annotation:item", project_id=project.pk, item_id=item.pk)
    return _render(request, project, role, item=item, flash=flash)


@login_required
def my_work(request, project_id: int):
    """The user's labels and skips in the project, each item one click away (its page shows a
    label with what may be seen now, and undoes it where the rules allow; a skipped item can be
    labelled there), the holds that ran out, and the way to have every skipped item offered again."""
    project, role = project_for(request, project_id)
    rows = my_work_rows(project=project, user=request.user)
    labels = [{"label": label, "summary": display.value_summary(project.kind, label.value)}
              for label in rows["labels"]]
    page = {"project": project, "role": role, "labels": labels, "skips": rows["skips"], "expired": rows["expired"],
            "more": rows["more"], "hide_rankings": bool(ranking_refusal(request.user)),
            "hold_minutes": round(project.hold_duration.total_seconds() / 60)}
    return render(request, "annotation/my_work.html", page)


@login_required
def item_add(request, project_id: int, item_id: int):
    """Add a missing item to the task of ``item`` (verify). GET switches the form's kind."""
    project, role = project_for(request, project_id)
    item = item_in(project, item_id)
    if request.method != "POST":
        return _add_response(request, project, role, item, kind=request.GET.get("add-kind", ""))
    context = item_context_for(item=item, user=request.user, with_task=True, role=role)
    form = _add_form(project, context, data=request.POST)
    if form is None:
        return refuse(request, ADD_REFUSED)
    if not form.is_valid():
        return _add_response(request, project, role, item, form=form, status=422)
    kind, fields = form.value()
    try:
        row = proposable_add(task=context["task"], kind=kind, fields=fields, actor=request.user, project=project)
    except ValueError as exc:
        add_error_attach(form, exc)
        return _add_response(request, project, role, item, form=form, status=422)
    except PermissionError as exc:
        return refuse(request, str(exc))
    except AnnotationError as exc:
        form.add_error(None, str(exc))
        return _add_response(request, project, role, item, form=form, status=409)
    added = {"kind": TargetKind(kind).label, "text": str(row)}
    if not request.htmx:
        flash = f"Added {added['kind'].lower()} “{added['text'][:120]}”. It is now proposed for this task."
        return _redirect(request, flash, "annotation:item", project_id=project.pk, item_id=item.pk)
    return _add_response(request, project, role, item, added=added)
