"""The landing page: annotators go straight to their projects and progress; everyone else sees
the benchmark overview."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect

from annotation.models import AnnotatorProfile, Role
from benchmark.views import home as overview


@login_required
def home(request):
    if AnnotatorProfile.objects.filter(user=request.user, role=Role.ANNOTATOR).exists():
        return redirect("annotation:project_list")
    return overview(request)
