"""The crowd worker's pages: the entry link (``/join/<token>/``) and the completion page."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from core.http import refuse

from ..loop.claims import claim_next_items
from ..models import AnnotationProject
from ..services.errors import ProjectNotOpenError
from ..views.access import project_for
from .forms import CrowdStudyForm
from .models import CrowdStudy, completion_code_new
from .selectors import worker_in, worker_standing
from .services import crowd_join, crowd_study_set, crowd_token_rotate, crowd_worker_complete, study_for_token

BACKEND = "core.authentication.ProfileModelBackend"  # loads the profile with the user, as every sign-in


class _JoinThrottle(SimpleRateThrottle):
    """Visits of entry links per address: at most ``CROWD_JOIN_RATE`` in any minute (a sliding
    window in the shared cache, whatever token they name, so tokens cannot be guessed fast; a
    window fixed to the clock's minutes let twice the rate through across a minute's turn)."""

    scope = "crowd_join"

    def get_rate(self) -> str:
        return f"{settings.CROWD_JOIN_RATE}/min"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request) or ""}


def _join_throttled(request) -> bool:
    """One more visit of an entry link from this address: whether it is over the rate."""
    return not _JoinThrottle().allow_request(request, None)


def join(request, token: str):
    """A platform worker arrives: signed in as their pseudonymous annotator of this project (the
    same worker id, the same account) and sent to its workspace. An unknown, rotated or closed
    token is a 404 like any missing page."""
    if _join_throttled(request):
        response = HttpResponse("Too many visits of entry links from your address; try again in a minute.",
                                status=429, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "60"
        return response
    try:
        study = study_for_token(token)
    except CrowdStudy.DoesNotExist:
        raise Http404("No such page") from None
    if study.project.status != AnnotationProject.Status.OPEN:
        return refuse(request, "This study is not accepting answers now. Please return it on your platform.",
                      status=410)
    try:
        worker, _ = crowd_join(study=study, worker_id=request.GET.get(study.worker_param, ""),
                               platform_study=request.GET.get(study.study_param, ""),
                               platform_session=request.GET.get(study.session_param, ""))
    except ValueError as exc:
        return refuse(request, f"The link you followed is incomplete: {exc}.", status=400)
    login(request, worker.user, backend=BACKEND)
    if worker.completed_at is not None:
        return redirect("annotation:crowd_done", project_id=study.project_id)
    return redirect("annotation:workspace", project_id=study.project_id)


def finish_url(*, project: AnnotationProject, user) -> str | None:
    """Where the workspace sends a crowd worker who has nothing left to label: their completion
    page; None for everyone else (the usual "nothing left" panel)."""
    if not project.has_crowd_study or worker_in(project=project, user=user) is None:
        return None
    return reverse("annotation:crowd_done", kwargs={"project_id": project.pk})


@login_required
def done(request, project_id: int):
    """The completion code, once the worker's quota is labelled or nothing is left for them, and
    the way back to the platform (the study's completion URL, followed after a few seconds)."""
    project, role = project_for(request, project_id)
    worker = worker_in(project=project, user=request.user)
    if worker is None:
        raise Http404("No such page")
    if worker.completed_at is None and not worker_standing(worker=worker)["done"]:
        try:
            if claim_next_items(project=project, user=request.user, role=role):
                return redirect("annotation:workspace", project_id=project.pk)
        except (PermissionError, ProjectNotOpenError):
            pass  # the study closed meanwhile: they did what they could
    worker = crowd_worker_complete(worker=worker)
    study = worker.study
    url = study.completion_url.replace("{code}", study.completion_code) if study.completion_url else ""
    page = {"project": project, "code": study.completion_code, "completion_url": url,
            "standing": worker_standing(worker=worker)}
    return render(request, "annotation/crowd_done.html", page)


def crowd_context(request, project: AnnotationProject, role: str) -> dict:
    """The progress page's crowd study (curators only: its entry link is theirs to hand out)."""
    if role != "curator" or not project.has_crowd_study:
        return {"crowd": None}
    study = CrowdStudy.objects.filter(project=project).first()
    if study is None:
        return {"crowd": None}
    query = "&".join(f"{name}={{{{%{name}%}}}}" for name in (study.worker_param, study.study_param,
                                                              study.session_param))
    link = request.build_absolute_uri(reverse("crowd_join", kwargs={"token": study.token})) + "?" + query
    return {"crowd": study, "crowd_link": link}


@login_required
def study_page(request, project_id: int):
    """The curators' page of the project's crowd study: open it or change it (POST ``action=save``),
    rotate its entry link (``action=rotate``); the entry link to paste into the platform."""
    project, role = project_for(request, project_id)
    if role != "curator":
        return refuse(request, "Only the project's curators open it to a crowd and hand out its entry link.")
    study = CrowdStudy.objects.filter(project=project).first()
    action = request.POST.get("action", "")
    form = CrowdStudyForm(request.POST if action == "save" else None,
                          initial=CrowdStudyForm.initial_of(study) or {"completion_code": completion_code_new()})
    status = 200
    if request.method == "POST":
        try:
            if action == "rotate" and study is not None:
                crowd_token_rotate(project=project, actor=request.user)
                messages.success(request, "New entry link: the old one answers “not found” from now on.")
                return redirect("annotation:crowd_study", project_id=project.pk)
            if action == "save" and form.is_valid():
                crowd_study_set(project=project, actor=request.user, **form.study_fields())
                messages.success(request, "Crowd study saved.")
                return redirect("annotation:crowd_study", project_id=project.pk)
        except ValueError as exc:
            form.add_error(None, str(exc))
        status = 400
    page = {"project": project, "study": study, "form": form, **crowd_context(request, project, role)}
    return render(request, "annotation/crowd_study.html", page, status=status)
