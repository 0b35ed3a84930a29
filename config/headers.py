"""Security headers on every answer: a Content-Security-Policy with no remote source, and no
caching of what a signed-in user (or any API client) was shown.

The pages load scripts and styles only from our own static files (no inline code: htmx's
indicator styles are in ``studio.css``, switched off in htmx by ``<meta name="htmx-config">``)
and images from ourselves and ``data:``, so a report's markdown ``![](http://…)`` cannot call
out even if rendering let one through. ``Referrer-Policy`` and ``X-Content-Type-Options`` come
from Django's ``SecurityMiddleware`` (``SECURE_REFERRER_POLICY``, ``SECURE_CONTENT_TYPE_NOSNIFF``).
"""

from functools import wraps

from django.utils.cache import patch_cache_control

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# Redoc (the API docs page) writes its styles at run time and searches in a blob: worker; still
# nothing remote.
API_DOCS_POLICY = CONTENT_SECURITY_POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") + (
    "; worker-src 'self' blob:"
)


def content_security_policy(policy: str):
    """A view decorator: this view's pages get ``policy`` instead of the default one."""

    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            response = view(request, *args, **kwargs)
            response.headers["Content-Security-Policy"] = policy
            return response

        return wrapped

    return decorate


class SecurityHeaders:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        user = getattr(request, "user", None)
        if request.path.startswith("/api/") or (user is not None and user.is_authenticated):
            patch_cache_control(response, private=True, no_store=True)
        return response
