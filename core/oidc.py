"""The OpenID Connect provider's discovery document, fetched at the first sign-in and cached.

The issuer (``OIDC_ISSUER``) is the operator's configuration, so its endpoints are fetched
directly rather than through ``core.outbound`` (whose address rule is for URLs users supply): an
institution's provider on a private network must work. The document must name the configured
issuer exactly (OpenID Connect Discovery 1.0, §4.3), so a misconfigured or impersonating server is
refused before any user is sent to it."""

import threading
import time
from urllib.parse import urlsplit

from django.conf import settings


class OidcUnavailable(Exception):
    """The provider's discovery failed; the message says what to fix, for the refusal page."""


_REQUIRED = ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint")
_cache: dict[str, tuple[float, dict]] = {}
_lock = threading.Lock()


def oidc_enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def oidc_provider_name() -> str:
    """What the login page's button names: ``OIDC_PROVIDER_NAME``, or the issuer's host."""
    return settings.OIDC_PROVIDER_NAME or urlsplit(settings.OIDC_ISSUER).hostname or "your institution"


def oidc_discovery() -> dict:
    """The issuer's discovery document (kept ``OIDC_DISCOVERY_SECONDS``); ``OidcUnavailable``."""
    issuer = settings.OIDC_ISSUER
    with _lock:
        cached = _cache.get(issuer)
        if cached and time.monotonic() - cached[0] < settings.OIDC_DISCOVERY_SECONDS:
            return cached[1]
    import requests  # here, not at the top: the login page asks oidc_enabled() in every web process

    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise OidcUnavailable(f"the identity provider's discovery document {url} could not be read "
                              f"({type(exc).__name__})") from exc
    if not isinstance(document, dict) or document.get("issuer", "").rstrip("/") != issuer:
        found = document.get("issuer") if isinstance(document, dict) else None
        raise OidcUnavailable(f"the discovery document at {url} names the issuer {found!r}, not OIDC_ISSUER={issuer!r}")
    missing = [key for key in _REQUIRED if not document.get(key)]
    if missing:
        raise OidcUnavailable(f"the discovery document at {url} names no {', '.join(missing)}")
    with _lock:
        _cache[issuer] = (time.monotonic(), document)
    return document


def oidc_discovery_forget() -> None:
    """Drop the cached documents (tests; a provider that moved its endpoints)."""
    with _lock:
        _cache.clear()
