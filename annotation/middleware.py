"""Score cards, leaderboards and runs stay closed to whoever still labels blind.

Scores rank the very systems a blind pairwise project compares, and a run's score cards are
the judge's verdicts in aggregate; an annotator with open items in a blind project
(``blind_labelling_projects``) must learn neither before committing their labels. Every page
and API answer under ``RANKING_PREFIXES`` is refused to them (403, naming the projects), so a
route added under these prefixes is closed too. Token-authenticated API calls are checked with
the token's user: DRF authenticates them only inside the view, after this middleware.
"""

from django.http import JsonResponse
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from .blind import blind_labelling_projects
from core.http import refuse

RANKING_PREFIXES = ("/dashboards/", "/runs/", "/api/dashboards/", "/api/runs/", "/api/score-cards/")


def ranking_refusal(user) -> str:
    """Why ``user`` may not see scores and rankings now; empty when they may."""
    projects = blind_labelling_projects(user)
    if not projects:
        return ""
    names = ", ".join(repr(name) for name in projects)
    return (
        f"Scores and rankings are closed to you while you label blind in {names}: "
        "they would tell you what the project hides. They open once you have labelled your items there."
    )


def _user(request):
    user = request.user
    if user.is_authenticated or not request.path.startswith("/api/"):
        return user
    try:
        found = TokenAuthentication().authenticate(Request(request))
    except AuthenticationFailed:  # the view answers 401 itself
        return user
    return found[0] if found else user


class BlindRankingGate:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(RANKING_PREFIXES):
            user = _user(request)
            message = ranking_refusal(user) if user.is_authenticated else ""
            if message:
                if request.path.startswith("/api/"):
                    return JsonResponse({"detail": message}, status=403)
                return refuse(request, message)
        return self.get_response(request)
