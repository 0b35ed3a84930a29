"""Account pages: the API token page (``/account/tokens/``: when the token was made, rotate,
revoke; the key is shown once, on the page that answers the rotation, and never again), the
login page with its "Sign in with …" button, and an invitation's one-time link (``/invitation/<token>/``)."""

from django.contrib import messages
from django.contrib.auth import login as auth_login
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from annotation.services.invitations import (
    InvitationUnusable,
    invitation_accept,
    invitation_for_token,
    invitation_joined_by,
    invitation_open,
)
from config.throttling import ThrottledLoginView
from core.models import Role
from core.oidc import oidc_enabled, oidc_provider_name
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


def oidc_start(request):
    """``/oidc/authenticate/`` (``annotation.oidc.OidcStartView``), imported at the first sign-in with
    the provider: mozilla-django-oidc and what it loads stay out of web processes that never see one."""
    if not oidc_enabled():
        raise Http404("Sign-in with an identity provider is not configured")
    from annotation.oidc import OidcStartView

    return OidcStartView.as_view()(request)


def oidc_callback(request):
    """``/oidc/callback/`` (``annotation.oidc.OidcCallbackView``), imported as ``oidc_start``."""
    if not oidc_enabled():
        raise Http404("Sign-in with an identity provider is not configured")
    from annotation.oidc import OidcCallbackView

    return OidcCallbackView.as_view()(request)


class LoginView(ThrottledLoginView):
    """The login page; with ``OIDC_ISSUER`` set it also offers "Sign in with …" (``data-role=sso-login``)."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "sso_provider": oidc_provider_name() if oidc_enabled() else ""}


@never_cache
@require_http_methods(["GET", "POST"])
def invitation(request, token: str):
    """An invitation's one-time link: opening it marks it opened; POST ``action=join`` (signed
    in) or ``action=create`` (``username``, ``password1``, ``password2``) accepts it and goes to
    the project. A revoked, expired, replaced or used link answers 410 with a page saying which."""
    try:
        found = invitation_for_token(token)
    except InvitationUnusable as exc:
        joined = invitation_joined_by(token=token, user=request.user)
        if joined is not None:
            return _landing(joined)
        return render(request, "registration/invitation.html", {"unusable": str(exc)}, status=410)
    context = {"invitation": found, "sso_provider": oidc_provider_name() if oidc_enabled() else "",
               "username": request.POST.get("username", "") or _suggested_username(found.email)}
    if request.method == "GET":
        invitation_open(invitation=found)
        return render(request, "registration/invitation.html", context)
    action = request.POST.get("action")
    try:
        if action == "join" and request.user.is_authenticated:
            invitation_accept(token=token, user=request.user)
        elif action == "create" and not request.user.is_authenticated:
            if request.POST.get("password1", "") != request.POST.get("password2", ""):
                raise ValueError("password2: the two passwords differ")
            user = invitation_accept(token=token, username=request.POST.get("username", ""),
                                     password=request.POST.get("password1", ""))
            auth_login(request, user, backend="core.authentication.ProfileModelBackend")
        else:
            raise ValueError("action: join (signed in) or create (not signed in)")
    except InvitationUnusable as exc:
        return render(request, "registration/invitation.html", {"unusable": str(exc)}, status=410)
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        return render(request, "registration/invitation.html", {**context, "error": f"{field}: {message}"}, status=400)
    messages.success(request, f"Welcome to “{found.project.name}”.")
    return _landing(found)


def _landing(invitation):
    """Annotators start labelling; curators and viewers, who label nothing, see the project's progress."""
    page = "annotation:workspace" if invitation.role == Role.ANNOTATOR else "annotation:progress"
    return redirect(page, project_id=invitation.project_id)


def _suggested_username(email: str) -> str:
    return email.partition("@")[0][:150]
