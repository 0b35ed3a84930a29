"""Judge configuration pages: the list, new, edit, and "test connection". Everyone signed in
reads the list; curators create, edit and test (the API's ``CuratorWrites`` rule)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.accounts import is_global_curator
from core.http import refuse

from .forms import JudgeConfigForm
from .models import JudgeConfig
from .services.judge_configs import judge_config_create, judge_config_test, judge_config_update

CURATORS_ONLY = "Only curators create, edit or test judge configurations."


@login_required
def judge_list(request):
    context = {"configs": JudgeConfig.objects.order_by("name"), "is_curator": is_global_curator(request.user)}
    return render(request, "scoring/judge_list.html", context)


def _form_page(request, form, config=None, *, test=None, status=200):
    return render(request, "scoring/judge_form.html", {"form": form, "config": config, "test": test}, status=status)


@login_required
def judge_new(request):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    form = JudgeConfigForm(request.POST or None, initial={"backend": JudgeConfig.Backend.OPENAI})
    if request.method == "POST":
        if form.is_valid():
            try:
                config = judge_config_create(actor=request.user, **form.service_arguments())
            except ValueError as exc:
                form.attach_service_error(exc)
            else:
                messages.success(request, f"Judge configuration “{config.name}” created; test its connection.")
                return redirect("runs:judge_edit", config_id=config.pk)
        return _form_page(request, form, status=400)
    return _form_page(request, form)


@login_required
def judge_edit(request, config_id: int):
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    config = get_object_or_404(JudgeConfig, pk=config_id)
    form = JudgeConfigForm(request.POST or None, instance=JudgeConfig.objects.get(pk=config.pk))
    if request.method == "POST":
        if form.is_valid():
            try:
                judge_config_update(config=config, actor=request.user, **form.service_arguments())
            except ValueError as exc:
                form.attach_service_error(exc)
            else:
                messages.success(request, "Judge configuration saved.")
                return redirect("runs:judge_edit", config_id=config.pk)
        return _form_page(request, form, config, status=400)
    return _form_page(request, form, config)


@require_POST
@login_required
def judge_test(request, config_id: int):
    """One cheap call to the saved configuration's endpoint; htmx swaps the answer in."""
    if not is_global_curator(request.user):
        return refuse(request, CURATORS_ONLY)
    config = get_object_or_404(JudgeConfig, pk=config_id)
    test = judge_config_test(config=config)
    if request.htmx:
        return render(request, "scoring/_judge_test.html", {"test": test, "config": config})
    return _form_page(request, JudgeConfigForm(instance=config), config, test=test)
