"""A crowd worker reaches their project's workspace and nothing else.

A worker's account (``CrowdWorker``, username ``crowd-…``) exists for one project: every other
path — other projects, task and report pages, dashboards, exports, the API beyond the items and
labels of the loop, account pages — answers 404 as if it did not exist. Only accounts named
``crowd-`` pay the query that finds their project (``request.crowd_project_id``, which the page
header reads to show no menu)."""

import re


from core.http import refuse

PREFIX = "crowd-"
_ALWAYS = ("/join/", "/logout/", "/static/", "/favicon.ico")
_API = re.compile(r"^/api/(annotation-items/\d+/|labels/(batch/)?$|assignments/(\d+/skip/)?$|projects/(?P<pid>\d+)/"
                  r"(next|progress)/$)")


def crowd_path_allowed(path: str, project_id: int) -> bool:
    if path.startswith(_ALWAYS) or path.startswith(f"/annotate/{project_id}/"):
        return True
    match = _API.match(path)
    return bool(match) and match.group("pid") in (None, str(project_id))


class CrowdGate:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.crowd_project_id = None
        user = request.user
        if user.is_authenticated and user.username.startswith(PREFIX):
            from .models import CrowdWorker

            project_id = CrowdWorker.objects.filter(user=user).values_list("study__project_id", flat=True).first()
            if project_id is not None:
                request.crowd_project_id = project_id
                if not crowd_path_allowed(request.path, project_id):
                    return refuse(request, "No such page.", status=404)
        return self.get_response(request)



