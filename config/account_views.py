"""The account's API token page (``/account/tokens/``): when the token was made, rotate, revoke.
The key is shown once, on the page that answers the rotation, and never again."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from core.tokens import api_token_issue, api_token_revoke


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def account_tokens(request):
    shown_once = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "rotate":
            shown_once = api_token_issue(user=request.user, actor=request.user, reason="rotated on the token page").key
        elif action == "revoke":
            if api_token_revoke(user=request.user, actor=request.user, reason="revoked on the token page"):
                messages.success(request, "Token revoked: scripts using it are refused from now on.")
            else:
                messages.info(request, "There was no token to revoke.")
            return redirect("account_tokens")
        else:
            messages.error(request, "Unknown action: rotate or revoke.")
            return render(request, "registration/tokens.html", _context(request), status=400)
    return render(request, "registration/tokens.html", _context(request, shown_once=shown_once))


def _context(request, **extra) -> dict:
    token = Token.objects.filter(user=request.user).only("created").first()
    return {"created": token.created if token else None, **extra}
