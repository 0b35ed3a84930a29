""""Compute here now": stored dashboard figures computed in a web request, by a reader's
choice, while no worker is alive to compute them (the pages offer it only then): a project's
inter-annotator agreement, a human ranking, the reader's judge vs people. One guard for all
(``_compute_here_refusal``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import BadRequest
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotation.models import ProjectStatistics
from annotation.services.agreement import project_agreement_refresh, scope_statistics_refresh
from core.accounts import is_global_curator
from core.converters import id_from_text
from core.http import refuse
from core.workers import live_workers

from . import agreement as agreement_selectors
from . import judge_stored
from .stored import scope_stored


COMPUTE_HERE_EVERY_SECONDS = 300  # one "compute here" per project or scope this often (a large one takes a minute)


def _compute_here_refusal(request, *, lock: str):
    """Why stored figures may not be computed in this request now, as a response (None: they
    may): with a worker alive it is refused (409: the worker computes them), and per project or
    scope at most once every ``COMPUTE_HERE_EVERY_SECONDS`` (429), so presses cannot pile
    minute-long computations onto the web processes."""
    if live_workers():
        return refuse(request, "A worker is running: it computes these figures, and the page shows them as soon as "
                               "they are stored.", status=409)
    # the shared cache (Redis, or the file cache every process of the machine reads): add() is the lock
    if not cache.add(lock, timezone.now().isoformat(), COMPUTE_HERE_EVERY_SECONDS):
        response = refuse(request, f"These figures were computed here less than {COMPUTE_HERE_EVERY_SECONDS // 60} "
                                   "minutes ago; start a worker, or try again later.", status=429)
        response["Retry-After"] = str(COMPUTE_HERE_EVERY_SECONDS)
        return response
    return None


@require_POST
@login_required
def agreement_compute_here(request):
    """Compute one project's agreement figures (``project`` in the form) in this request, when no
    worker is alive to do it (the page offers it only then): only for a project the user may see on
    the page, any other id is answered as missing; refused as ``_compute_here_refusal`` says."""
    raw = request.POST.get("project", "")
    try:
        project_id = id_from_text("project", raw) if raw.isdigit() else None
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if project_id is None:
        raise BadRequest("project: give the id of a project")
    if not any(p["id"] == project_id for p in agreement_selectors.curated_projects(request.user)):
        return refuse(request, "No such project among those whose agreement you may see.", status=404)
    refusal = _compute_here_refusal(request, lock=f"agreement-compute-here:{project_id}")
    if refusal is not None:
        return refusal
    project_agreement_refresh(project_id=project_id)
    messages.success(request, "Agreement figures computed.")
    return redirect(f"{reverse('dashboards:agreement')}#iaa-section")


def _scope_posted(request) -> str:
    scope = request.POST.get("scope", "")
    if len(scope) != 64 or any(c not in "0123456789abcdef" for c in scope):
        raise BadRequest("scope: give the key of stored figures, as the page shows it")
    return scope


def _back(request, default: str):
    """To ``next`` (the page the button was pressed on) when it is this site's, else ``default``."""
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        target = default
    return redirect(target)


def _scope_compute(request, *, kind: str, scope: str, done: str):
    """Compute a stored scope's figures here unless ``_compute_here_refusal`` refuses (its
    response is returned; None once computed, with ``done`` said on the next page)."""
    refusal = _compute_here_refusal(request, lock=f"{kind}-compute-here:{scope}")
    if refusal is None:
        scope_statistics_refresh(kind=kind, scope=scope)
        messages.success(request, f"{done} computed.")
    return refusal


@require_POST
@login_required
def human_compute_here(request):
    """Compute one stored human ranking (``scope`` in the form: its key, as the page shows it) in
    this request, for a curator, when no worker is alive (the pages offer it only then); refused
    as ``_compute_here_refusal`` says."""
    if not is_global_curator(request.user):
        return refuse(request, "Only curators compute figures in a web request.")
    scope = _scope_posted(request)
    if not scope_stored(kind=ProjectStatistics.Kind.HUMAN_RANKING, scope=scope):
        return refuse(request, "No such ranking is stored.", status=404)
    refusal = _scope_compute(request, kind=ProjectStatistics.Kind.HUMAN_RANKING, scope=scope, done="Human ranking")
    return refusal or _back(request, reverse("dashboards:human"))


@require_POST
@login_required
def judge_compute_here(request):
    """Compute the judge-vs-people figures of the projects the user may see in this request, when
    no worker is alive (the page offers it only then): ``scope`` must name exactly those
    projects' figures (any other is answered as missing); refused as ``_compute_here_refusal`` says."""
    scope = _scope_posted(request)
    own = judge_stored.judge_parameters(agreement_selectors.judge_projects(request.user))
    if scope != judge_stored.judge_key(own) or not scope_stored(kind=ProjectStatistics.Kind.JUDGE_AGREEMENT, scope=scope):
        return refuse(request, "No such figures among those you may see.", status=404)
    refusal = _scope_compute(request, kind=ProjectStatistics.Kind.JUDGE_AGREEMENT, scope=scope, done="Judge vs people")
    return refusal or redirect(f"{reverse('dashboards:agreement')}#judge-section")
