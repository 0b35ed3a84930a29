"""Evaluation run pages: the list, the new-run form, and a run's page with its live part.

Everyone signed in reads runs; only curators create, cancel and resume them (the same rule as
the API's ``CuratorWrites``). The live part of a run's page (``_live.html``: status, progress,
actions, failed jobs, and the score cards once it has finished) is also served alone at
``runs:progress``, which htmx polls every 2 s while the run is pending or running.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.accounts import is_global_curator
from core.http import refuse
from core.workers import live_workers

from . import selectors
from .forms import RunCreateForm
from .models import EvaluationRun
from .services.runs import BrokerUnavailable, run_cancel, run_launch, run_resume, run_start

# Parts of a run's page that apps above scoring show (annotation's calibrated scores): each
# registers a function (request, run) -> template context when it is ready.
_RUN_PAGE_PANELS: list = []


def run_page_panel_register(panel) -> None:
    if panel not in _RUN_PAGE_PANELS:  # ready() may run again (tests)
        _RUN_PAGE_PANELS.append(panel)


RUNS_PER_PAGE = 25
REPORT_CARDS_PER_PAGE = 50
FAILED_JOBS_SHOWN = 50
ACTIVE = (EvaluationRun.Status.PENDING, EvaluationRun.Status.RUNNING)
CURATORS_ONLY = "Only curators start, cancel or resume evaluation runs."


@login_required
def run_list(request):
    page = Paginator(selectors.run_list(), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "rows": selectors.run_list_rows(runs=list(page)),
        "queued": selectors.runs_queued_count(),
        "workers_alive": bool(live_workers()),
        "is_curator": is_global_curator(request.user),
    }
    return render(request, "scoring/run_list.html", context)


@login_required
def run_new(request):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    if request.method == "POST":
        form = RunCreateForm(request.POST)
        if form.is_valid():
            try:
                run = run_launch(**form.service_arguments(), actor=request.user)
            except ValidationError as exc:
                form.attach_service_error(exc)
            except BrokerUnavailable as exc:  # committed: the run exists and starts once the broker answers
                messages.error(request, str(exc))
                return redirect("runs:detail", run_id=exc.run_ids[0])
            else:
                return redirect("runs:detail", run_id=run.pk)
        status = 400
    else:
        form = RunCreateForm(protocol=request.GET.get("protocol", ""))
        status = 200
    template = "scoring/_run_form_choices.html" if request.htmx else "scoring/run_new.html"
    return render(request, template, {"form": form}, status=status)


def _run_or_404(run_id: int) -> EvaluationRun:
    try:
        return selectors.run_detail(run_id=run_id)
    except EvaluationRun.DoesNotExist:
        raise Http404("No such run") from None


def _live_context(request, run: EvaluationRun) -> dict:
    progress = selectors.run_progress(run=run)
    finished = run.status not in ACTIVE
    context = {
        "run": run,
        "progress": {**progress, **selectors.job_share(progress)},
        "eta": ("when its batch ends" if progress["waiting"] and not progress["pending"] + progress["running"]
                else _eta_label(progress["eta_seconds"])),
        "usage": selectors.runs_usage(run_ids=[run.pk])[run.pk],
        "batch": selectors.run_batches(run=run) if run.judge_config.batch or run.batches.exists() else None,
        "failed_jobs": list(selectors.run_job_errors(run=run, limit=FAILED_JOBS_SHOWN)) if progress["failed"] else [],
        # a run that ended "finished" had no failure to explain (else it ends "finished with failures")
        "failure_reasons": (selectors.run_failure_reasons(run=run)
                            if progress["failed"] or (finished and run.status != EvaluationRun.Status.FINISHED) else []),
        "polling": not finished,
        "is_curator": is_global_curator(request.user),
        "finished": finished,
    }
    if finished:
        report_cards = Paginator(selectors.run_report_cards(run=run), REPORT_CARDS_PER_PAGE)
        report_page = report_cards.get_page(request.GET.get("page"))
        context.update(
            system_table=selectors.score_card_table(protocol=run.protocol, cards=selectors.run_score_cards(run=run)),
            report_page=report_page,
            report_table=selectors.score_card_table(protocol=run.protocol, cards=report_page,
                                                    group=request.GET.get("metrics", "")),
        )
    return context


@login_required
def run_detail(request, run_id: int):
    run = _run_or_404(run_id)
    context = _live_context(request, run)
    if context["finished"]:
        for panel in _RUN_PAGE_PANELS:
            context.update(panel(request, run))
    return render(request, "scoring/run_detail.html", context)


@login_required
def run_progress_fragment(request, run_id: int):
    """The live part of the run page alone, for htmx polling (it needs none of the header's rows)."""
    run = get_object_or_404(EvaluationRun.objects.select_related("judge_config"), pk=run_id)
    return render(request, "scoring/_live.html", _live_context(request, run))


def _run_action(service, done: str):
    @require_POST
    @login_required
    def view(request, run_id: int):
        if not is_global_curator(request.user):
            return refuse(request, CURATORS_ONLY)
        run = get_object_or_404(EvaluationRun, pk=run_id)
        try:
            service(run=run)
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
        except BrokerUnavailable as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Run #{run.pk} {done}.")
        return redirect("runs:detail", run_id=run.pk)

    view.__name__ = view.__qualname__ = f"run_{done}"
    return view


run_start_view = _run_action(run_start, "started")  # a pending run made through the API or `evaluate` unstarted
run_cancel_view = _run_action(run_cancel, "cancelled")
run_resume_view = _run_action(run_resume, "resumed")


def _eta_label(seconds: float | None) -> str:
    if seconds is None:
        return "estimating…"
    if seconds < 1:  # jobs that settle in milliseconds (the offline judge) would read "0 s" while work is left
        return "under 1 s"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"
