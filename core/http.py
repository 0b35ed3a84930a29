"""How a refusal looks to a page request and to htmx, the same in every app."""

from django.http import HttpResponse
from django.shortcuts import render


def refuse(request, message: str, *, status: int = 403) -> HttpResponse:
    """A refusal: plain text for htmx (the workspace script shows it), a page otherwise."""
    if request.htmx:
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    return render(request, "annotation/refused.html", {"message": message}, status=status)
