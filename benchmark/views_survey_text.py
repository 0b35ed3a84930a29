"""Uploading a task's survey text (markdown) on the task page, for the proposal stages to read.
Curators only; parsing and storing are ``benchmark.services.survey_text``'s."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from core.accounts import is_global_curator
from core.http import refuse

from .importers.base import ImportFailed
from .models import Task
from .services.survey_text import survey_text_parse, survey_text_set


class SurveyTextForm(forms.Form):
    file = forms.FileField(label="Survey text (markdown)",
                           help_text="# headings become the outline and sections; the text before the first "
                                     "heading, or under '# Abstract', the abstract")
    keep_abstract = forms.BooleanField(required=False, label="Keep the current abstract")


@require_POST
@login_required
def task_survey_text(request, task_id: int):
    task = get_object_or_404(Task.objects.select_related("survey"), pk=task_id)
    if not is_global_curator(request.user):
        return refuse(request, "Only curators change a survey's text.")
    form = SurveyTextForm(request.POST, request.FILES)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        messages.error(request, f"Nothing was stored: {problems}")
        return redirect("benchmark:task_detail", task_id=task.pk)
    upload = form.cleaned_data["file"]
    try:
        text = survey_text_parse(upload.read(), file=upload.name)
    except ImportFailed as exc:
        messages.error(request, f"Nothing was stored: {exc}")
        return redirect("benchmark:task_detail", task_id=task.pk)
    changed = survey_text_set(survey=task.survey, text=text, actor=request.user, note=f"uploaded {upload.name}",
                              keep_abstract=form.cleaned_data["keep_abstract"])
    if changed:
        messages.success(request, f"Survey text from {upload.name}: {len(text.outline)} headings, "
                                  f"{len(text.content)} sections{', an abstract' if text.abstract else ''}.")
    else:
        messages.info(request, f"{upload.name} holds the survey text already stored; nothing changed.")
    return redirect("benchmark:task_detail", task_id=task.pk)
