"""Which judge endpoints a deployment allows, which key each one gets, and keeping keys out of errors.

Keys are bound to base URLs in the deployment's settings, never in stored data: the global
``OPENAI_API_KEY`` goes only to ``OPENAI_BASE_URL`` (OpenAI's own URL when that is empty), and
``JUDGE_ENDPOINTS`` (``{base_url: key}``, read from the environment variable of the same name,
see ``config/settings.py``) adds further endpoints, each with its own key or none. A judge
configuration chooses among these endpoints (``endpoint_check`` refuses any other base URL in
the API, forms and admin), and the transport asks ``key_for`` which key a URL gets: a URL no
setting names gets no key, whatever a configuration says.

``redact`` is the one function every stored or shown error passes through: it removes every
configured key and anything shaped like an OpenAI key (``sk-…``), so a server that echoes the
key in its error message does not put it into the database, the logs or a page.
"""

import re
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.core.exceptions import ValidationError

OPENAI_URL = "https://api.openai.com/v1"
REDACTED = "[redacted]"
# OpenAI-style secret keys: sk-..., sk-proj-..., sk-svcacct-... (at least 8 key characters after the prefix).
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_SHORTEST_REDACTED_KEY = 4  # a shorter "key" (a test's "x") would redact ordinary words


def normalize_url(url: str) -> str:
    """A base URL in one spelling: scheme and host lower-cased, no trailing slash."""
    url = (url or "").strip()
    if not url:
        return ""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, "")) or url


def default_url() -> str:
    return normalize_url(settings.OPENAI_BASE_URL) or OPENAI_URL


def bound_keys() -> dict[str, str]:
    """Every allowed endpoint's base URL and the key it gets (empty: no key)."""
    keys = {normalize_url(url): key or "" for url, key in (getattr(settings, "JUDGE_ENDPOINTS", None) or {}).items()}
    keys[default_url()] = settings.OPENAI_API_KEY or ""
    return keys


def allowed_urls() -> list[str]:
    return sorted(bound_keys())


def key_for(url: str) -> str:
    """The key bound to this base URL, or "" when no setting binds one to it."""
    return bound_keys().get(normalize_url(url), "")


def endpoint_check(base_url: str) -> None:
    """Refuse a configuration's base URL that the deployment does not allow (empty means the default)."""
    if not base_url or normalize_url(base_url) in bound_keys():
        return
    raise ValidationError(
        f"base_url {base_url!r} is not an allowed judge endpoint; choose one of {', '.join(allowed_urls())} "
        f"(or leave it empty for the default), or ask an administrator to add it to JUDGE_ENDPOINTS",
        code="endpoint_not_allowed",
    )


def redact(text: str) -> str:
    """``text`` without any configured key or ``sk-…``-shaped token."""
    if not text:
        return text or ""
    secrets = {key for key in bound_keys().values() if len(key) >= _SHORTEST_REDACTED_KEY}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _KEY_SHAPED.sub(REDACTED, text)
