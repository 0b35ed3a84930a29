"""Failed-login throttling for the HTML login form (``/login/``) and the API token endpoint.

After ``LOGIN_FAILURE_LIMIT`` failed attempts for one username from one client address within
``LOGIN_FAILURE_WINDOW`` seconds, further attempts for that pair are refused — even with the
right password — until the window (counted from the first failure) runs out. A successful
login clears the count. Counts live in Django's default cache, so every process sharing the
cache (Redis in production) shares them; the HTML form and the API count together.

The client address is DRF's ``get_ident``: ``REMOTE_ADDR``, or, behind ``TRUSTED_PROXY_COUNT``
proxies of ours (DRF's ``NUM_PROXIES``), the address the outermost of them put in
``X-Forwarded-For`` — never a value the client wrote there. The username is counted as the
login form reads it (surrounding spaces dropped, NFKC) and case-folded, so ``" Alice"`` and
``"ALICE"`` count with ``"alice"``.
"""

import hashlib
import math
import time
import unicodedata

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import ValidationError
from rest_framework import exceptions
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle

from core.parsers import BoundedJSONParser
from core.tokens import api_token_issue

DEFAULT_LIMIT = 10
DEFAULT_WINDOW = 15 * 60
THROTTLED_CODE = "throttled"


def _limit() -> int:
    return getattr(settings, "LOGIN_FAILURE_LIMIT", DEFAULT_LIMIT)


def _window() -> int:
    return getattr(settings, "LOGIN_FAILURE_WINDOW", DEFAULT_WINDOW)


def attempt_key(username, request) -> str:
    """The cache key counting failures of ``username`` from ``request``'s client address."""
    ident = BaseThrottle().get_ident(request) or ""
    name = unicodedata.normalize("NFKC", str(username or "")).strip().casefold()
    digest = hashlib.sha256(f"{name}\0{ident}".encode()).hexdigest()
    return f"login-failures:{digest}"


def retry_after(key: str) -> int:
    """Seconds until ``key`` may try again; 0 when it is not locked out."""
    count = cache.get(key, 0)
    if count < _limit():
        return 0
    since = cache.get(f"{key}:since")
    remaining = _window() if since is None else since + _window() - time.time()
    return max(1, math.ceil(remaining))


def failure_record(key: str) -> int:
    """Count one failed attempt for ``key``; returns the count in the current window."""
    window = _window()
    cache.add(f"{key}:since", time.time(), window)
    cache.add(key, 0, window)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr: this failure opens a new window
        cache.set(f"{key}:since", time.time(), window)
        cache.set(key, 1, window)
        return 1


def _api_username(request):
    data = request.data
    return data.get("username") if hasattr(data, "get") else None


def failures_reset(key: str) -> None:
    cache.delete_many([key, f"{key}:since"])


def lockout_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"Too many failed attempts, try again in {minutes} minute{'s' if minutes != 1 else ''}."


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's login form, refusing a locked-out username+address before checking the password."""

    def clean(self):
        key = attempt_key(self.cleaned_data.get("username"), self.request)
        wait = retry_after(key)
        if wait:
            raise ValidationError(lockout_message(wait), code=THROTTLED_CODE)
        try:
            cleaned = super().clean()
        except ValidationError:
            failure_record(key)
            raise
        failures_reset(key)
        return cleaned


class ThrottledLoginView(LoginView):
    """``LoginView`` with :class:`ThrottledAuthenticationForm`; a lockout answers 429 with a message."""

    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        throttled = [e for e in form.non_field_errors().as_data() if e.code == THROTTLED_CODE]
        if throttled:
            messages.error(self.request, throttled[0].messages[0])
            response.status_code = 429
        return response


class FailedLoginThrottle(BaseThrottle):
    """Refuses a token request whose username+address is locked out (DRF answers 429 + Retry-After)."""

    def allow_request(self, request, view):
        self.key = attempt_key(_api_username(request), request)
        self.seconds = retry_after(self.key)
        return self.seconds == 0

    def wait(self):
        return self.seconds


class ThrottledObtainAuthToken(ObtainAuthToken):
    """Exchange a username and password for an API token (``Authorization: Token <key>``).
    Each login issues a new token and the previous one stops working; changing the password
    revokes it. Repeated wrong credentials lock the client out for a while (429)."""

    # DRF's token endpoint, counting failed credentials and refusing locked-out clients.

    throttle_classes = (FailedLoginThrottle,)
    parser_classes = (BoundedJSONParser, FormParser, MultiPartParser)  # DRF's view names the unbounded one

    def throttled(self, request, wait):
        raise exceptions.Throttled(wait, detail=lockout_message(wait))

    def post(self, request, *args, **kwargs):
        # A fresh token at every login (core.tokens.api_token_issue): the previous key stops working.
        key = attempt_key(_api_username(request), request)
        serializer = self.get_serializer(data=request.data)
        try:
            serializer.is_valid(raise_exception=True)
        except exceptions.ValidationError:
            failure_record(key)
            raise
        failures_reset(key)
        token = api_token_issue(user=serializer.validated_data["user"], reason="logged in through the API")
        return Response({"token": token.key})
