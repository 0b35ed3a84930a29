"""The curator's project pages: create a project (with a preview), edit it, manage its members.

Creating needs a global curator (as ``project_create`` does); editing and members need the
project's curator. Others get the refusal page (403); outsiders of a project get 404.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from benchmark.forms import TASKS_SHOWN, TaskFilterForm

from ..blind import blind_overlap_warnings
from ..models import Role
from ..models import Invitation
from ..project_forms import EmailInviteForm, InviteForm, MemberAddForm, ProjectCreateForm, ProjectEditForm
from core.accounts import is_global_curator
from ..selectors.progress import project_progress
from ..services.accounts import account_invite
from ..services.invitations import invitation_resend, invitation_revoke, invitations_create
from ..services.previews import project_preview
from ..services.projects import membership_add, membership_remove, project_create, project_update
from core.http import refuse
from .access import project_for

CURATORS_CREATE = "Only curators create annotation projects."


@login_required
def project_new(request):
    """GET: the form, its task picker listing the tasks the filters in the query string match.
    POST ``action=preview`` counts the items without creating anything; ``create`` creates the
    project and opens its members page."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_CREATE)
    task_filter = TaskFilterForm(request.GET)
    form = ProjectCreateForm(request.POST or None, task_filter=task_filter)
    preview, status = None, 200
    action = "preview" if request.POST.get("action") == "preview" else "create"
    if request.method == "POST":
        status = 400
        if form.is_valid():
            arguments = {**form.service_arguments(), "created_by": request.user}
            try:
                if action == "preview":
                    preview, status = project_preview(**arguments), 200
                else:
                    project = project_create(**arguments)
            except ValueError as exc:
                form.attach_service_error(exc)
            else:
                if action == "create":
                    messages.success(request, f"Project “{project.name}” created with {project.items.count()} items.")
                    for warning in blind_overlap_warnings(project):
                        messages.warning(request, f"Warning: {warning}.")
                    return redirect("annotation:members", project_id=project.pk)
    context = {"form": form, "task_filter": task_filter, "preview": preview, "tasks_shown": TASKS_SHOWN}
    return render(request, "annotation/project_new.html", context, status=status)


def _curated(request, project_id: int):
    project, role = project_for(request, project_id)
    return project, role == Role.CURATOR


@login_required
def project_edit(request, project_id: int):
    project, is_curator = _curated(request, project_id)
    if not is_curator:
        return refuse(request, "Only the project's curators edit it.")
    form = ProjectEditForm.for_project(project, request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                project_update(project=project, actor=request.user, **form.service_arguments())
            except ValueError as exc:
                form.attach_service_error(exc)
            else:
                messages.success(request, "Project saved.")
                return redirect("annotation:edit", project_id=project.pk)
    return render(request, "annotation/project_edit.html", {"project": project, "form": form}, status=status)


@login_required
def project_members(request, project_id: int):
    """Members with their role and progress. POST ``action``: ``add`` (an existing account),
    ``remove`` (``username``), ``invite`` (a new account: its one-time link is shown once, here),
    ``email_invite`` (a list of addresses: one e-mailed invitation each, links shown once with a
    copy button), ``resend`` / ``revoke`` (``invitation``, an id)."""
    project, is_curator = _curated(request, project_id)
    if not is_curator:
        return refuse(request, "Only the project's curators manage its members.")
    action = request.POST.get("action", "")
    add_form = MemberAddForm(request.POST if action == "add" else None, project=project)
    invite_form = InviteForm(request.POST if action == "invite" else None)
    email_form = EmailInviteForm(request.POST if action == "email_invite" else None,
                                 request.FILES if action == "email_invite" else None)
    invite_link, status, links = None, 200, []

    def link_for(token: str) -> str:
        return request.build_absolute_uri(reverse("invitation", kwargs={"token": token}))

    if request.method == "POST":
        status = 400
        try:
            if action == "add" and add_form.is_valid():
                data = add_form.cleaned_data
                membership_add(project=project, user=data["username"], role=data["role"], actor=request.user)
                messages.success(request, f"{data['username'].username} added as {data['role']}.")
                for warning in blind_overlap_warnings(project):
                    messages.warning(request, f"Warning: {warning}.")
                return redirect("annotation:members", project_id=project.pk)
            if action == "remove":
                username = request.POST.get("username", "")
                try:
                    membership_remove(project=project, user=username, actor=request.user)
                except ValueError as exc:  # the add form is not the one that was sent: say it above the page
                    messages.error(request, str(exc).removeprefix("user: "))
                else:
                    messages.success(request, f"{username} removed; their labels stay.")
                    return redirect("annotation:members", project_id=project.pk)
            if action == "invite" and invite_form.is_valid():
                data = invite_form.cleaned_data
                with transaction.atomic():
                    user, uid, token = account_invite(username=data["username"], role=data["role"],
                                                      actor=request.user)
                    membership_add(project=project, user=user, role=data["role"], actor=request.user)
                invite_link = request.build_absolute_uri(reverse("invite", kwargs={"uidb64": uid, "token": token}))
                invite_form, status = InviteForm(), 201
            if action == "email_invite" and email_form.is_valid():
                data = email_form.cleaned_data
                made = invitations_create(project=project, invitees=data["invitees"], role=data["role"],
                                          actor=request.user, link_for=link_for)
                links = [{"invitation": invitation, "link": link} for invitation, link in made]
                email_form, status = EmailInviteForm(), 201
            if action in ("resend", "revoke"):
                invitation = Invitation.objects.filter(project=project, pk=_int(request.POST.get("invitation"))).first()
                if invitation is None:
                    messages.error(request, "No such invitation in this project.")
                elif action == "revoke":
                    invitation_revoke(invitation=invitation, actor=request.user)
                    messages.success(request, f"Invitation of {invitation.email} revoked: its link no longer works.")
                    return redirect("annotation:members", project_id=project.pk)
                else:
                    link = invitation_resend(invitation=invitation, actor=request.user, link_for=link_for)
                    links, status = [{"invitation": invitation, "link": link}], 200
        except ValueError as exc:
            if action in ("resend", "revoke"):
                messages.error(request, str(exc).removeprefix("invitation: "))
            else:
                {"invite": invite_form, "email_invite": email_form}.get(action, add_form).attach_service_error(exc)
        except PermissionError as exc:
            return refuse(request, str(exc))
    members = project.memberships.select_related("user").order_by("user__username")
    progress = {row["user_id"]: row for row in project_progress(project=project, user=request.user)["annotators"]}
    rows = [{"membership": m, "progress": progress.get(m.user_id)} for m in members]
    invitations = project.invitations.select_related("user").order_by("-created_at")[:INVITATIONS_SHOWN]
    context = {"project": project, "rows": rows, "add_form": add_form, "invite_form": invite_form,
               "invite_link": invite_link, "email_form": email_form, "links": links, "invitations": invitations,
               "now": timezone.now()}
    return render(request, "annotation/project_members.html", context, status=status)


INVITATIONS_SHOWN = 500  # a lab's invitations; the API lists them all, page by page


def _int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number < 2**63 else None
