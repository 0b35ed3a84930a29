"""The task page's "Propose with LLM" control: curators queue construction stages for one task.

The POST only queues a ``ProposalBatch`` (``scoring.services.proposals``) for a Celery worker;
what the judge proposes appears on the task page as "proposed (llm)" and goes through the
existing review flow (verify projects pick up every row whose status is proposed). The panel
joins benchmark's task page through ``benchmark.views.task_page_panel_register``; the POST's
path stays under ``/benchmark/tasks/`` (``scoring.urls``).
"""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from benchmark.models import ChecklistItem, ConstraintQuestion, Nugget, Origin, RubricCriterion, Task, TaskPrompt
from core.accounts import is_global_curator
from core.bounded import IdChoiceField
from core.http import refuse
from core.workers import live_workers

from .models import JudgeConfig
from .services.proposals import STAGES, proposal_batch_create, stages_for

RECENT_BATCHES = 5


class ProposeForm(forms.Form):
    stages = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    judge_config = IdChoiceField(queryset=JudgeConfig.objects.all(), empty_label=None, label="Judge")

    def __init__(self, *args, task: Task, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        names = stages_for(task.protocol)
        self.fields["stages"].choices = [(name, STAGES[name].label) for name in names]
        self.fields["stages"].initial = names


def _llm_rows(task: Task) -> list[tuple[str, object]]:
    """(kind label, row) for every LLM proposal of the task, and of its discipline's rubric."""
    criteria = Q(task=task)
    if task.survey.discipline_id:
        criteria |= Q(task__isnull=True, discipline_id=task.survey.discipline_id)
    found = [("Prompt", row) for row in TaskPrompt.objects.filter(task=task, origin=Origin.LLM)]
    found += [("Constraint question", row) for row in ConstraintQuestion.objects.filter(task=task, origin=Origin.LLM)]
    found += [("Checklist item", row) for row in ChecklistItem.objects.filter(
        group__task=task, origin=Origin.LLM).select_related("group")]
    found += [("Nugget", row) for row in Nugget.objects.filter(task=task, origin=Origin.LLM)]
    found += [("Rubric criterion", row) for row in RubricCriterion.objects.filter(criteria, origin=Origin.LLM)]
    return found


def proposal_panel(request, task: Task) -> dict:
    """The task page's context for ``benchmark/_proposals.html``."""
    curator = is_global_curator(request.user)
    batches = list(task.proposal_batches.select_related("judge_config")[:RECENT_BATCHES])
    active = any(batch.status in ("pending", "running") for batch in batches)
    return {
        "propose_form": ProposeForm(task=task) if curator and stages_for(task.protocol) else None,
        "proposal_batches": batches,
        "llm_proposals": _llm_rows(task),
        # While a batch waits or runs, the panel re-reads itself from the task page (htmx polling);
        # the poll that finds them ended also re-sends the task's material the batches changed.
        "proposals_active": active,
        "proposals_ended": not active and request.GET.get("poll") == "proposals",
    }


@require_POST
@login_required
def task_propose(request, task_id: int):
    task = get_object_or_404(Task.objects.select_related("survey__discipline"), pk=task_id)
    if not is_global_curator(request.user):
        return refuse(request, "Only curators ask a judge to propose benchmark material.")
    form = ProposeForm(request.POST, task=task)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        messages.error(request, f"Nothing was queued: {problems}")
        return redirect("benchmark:task_detail", task_id=task.pk)
    try:
        batch = proposal_batch_create(tasks=[task], stages=form.cleaned_data["stages"],
                                      judge_config=form.cleaned_data["judge_config"], actor=request.user)
    except ValueError as exc:
        messages.error(request, f"Nothing was queued: {exc}")
        return redirect("benchmark:task_detail", task_id=task.pk)
    note = "" if live_workers() else " No worker is alive yet: it runs when one starts."
    messages.success(request, f"Queued proposals #{batch.pk} ({', '.join(batch.stages)}) with judge "
                              f"{batch.judge_config.name}; they appear below as proposed (llm).{note}")
    return redirect("benchmark:task_detail", task_id=task.pk)
