"""Which judge endpoints a deployment allows, which key each one gets, and keeping keys out of errors.

Keys are bound to base URLs in the deployment's settings, never in stored data: the global
``OPENAI_API_KEY`` goes only to ``OPENAI_BASE_URL`` (OpenAI's own URL when that is empty), and
``JUDGE_ENDPOINTS`` (``{base_url: key}``, read from the environment variable of the same name,
see ``config/settings.py``) adds further endpoints, each with its own key or none. A judge
configuration chooses among these endpoints (``endpoint_check`` refuses any other base URL in
the API, forms and admin), and the transport asks ``key_for`` which key a URL gets: a URL no
setting names gets no key, whatever a configuration says.

``redact`` is the one function every stored or shown text from an endpoint passes through
(errors, answers, the model name it reports): it removes every configured key (verbatim, with
whitespace inserted, reversed or base64-encoded) and anything shaped like an OpenAI key
(``sk-…``), so a server that echoes the key does not put it into the database, the logs or a page.
"""

import base64
import re
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.core.exceptions import ValidationError

OPENAI_URL = "https://api.openai.com/v1"
REDACTED = "[redacted]"
# OpenAI-style secret keys: sk-..., sk-proj-..., sk-svcacct-... (at least 8 key characters after the prefix).
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_SHORTEST_REDACTED_KEY = 4  # a shorter "key" (a test's "x") would redact ordinary words
_SHORTEST_BASE64_CORE = 6  # fewer encoded characters would match ordinary text by chance
_GAP = r"[\s\u200b-\u200d\u2060\ufeff]*"
_URLSAFE = str.maketrans("+/", "-_")
# The headers an SDK request carries a key in (OpenAI: Authorization; Azure-style servers: api-key).
KEY_HEADERS = frozenset({"authorization", "api-key", "x-api-key"})


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


def url_is_under(url: str, base_url: str) -> bool:
    """Whether ``url`` is the base URL itself or a path below it: same scheme, host and port (the
    scheme's default when not written), and the base path followed by "/" or nothing. The key
    bound to ``base_url`` goes to such URLs only (``transport.make_client``)."""
    def parts(value: str) -> tuple[str, str, int | None, str]:
        split = urlsplit(value)
        try:
            port = split.port or {"http": 80, "https": 443}.get(split.scheme.lower())
        except ValueError:
            return ("", "", None, "")
        return split.scheme.lower(), (split.hostname or "").lower(), port, split.path.rstrip("/")

    scheme, host, port, path = parts(url)
    base_scheme, base_host, base_port, base_path = parts(base_url)
    if not base_host or (scheme, host, port) != (base_scheme, base_host, base_port):
        return False
    return path == base_path or path.startswith(base_path + "/")


def _spaced(secret: str) -> str:
    """A pattern for ``secret`` with any whitespace (or zero-width characters) between its characters."""
    return _GAP.join(re.escape(char) for char in secret)


def _base64_cores(secret: str) -> set[str]:
    """The base64 characters that encode ``secret`` wherever it sits in an encoded blob: for each of
    the three byte alignments, the characters whose six bits all come from the secret (standard and
    URL-safe alphabets)."""
    data = secret.encode("utf-8")
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        start, end = -(-8 * offset // 6), 8 * (offset + len(data)) // 6
        core = encoded[start:end]
        if len(core) >= _SHORTEST_BASE64_CORE:
            cores |= {core, core.translate(_URLSAFE)}
    return cores


def _secret_patterns() -> list[re.Pattern]:
    secrets = {key for key in bound_keys().values() if len(key) >= _SHORTEST_REDACTED_KEY}
    patterns = []
    for secret in sorted(secrets, key=len, reverse=True):
        patterns.append(_spaced(secret))
        patterns.append(_spaced(secret[::-1]))
        patterns.extend(re.escape(core) for core in sorted(_base64_cores(secret), key=len, reverse=True))
    return [re.compile(pattern) for pattern in patterns]


def redact(text: str) -> str:
    """``text`` without any configured key or ``sk-…``-shaped token. The one redaction of everything
    an endpoint says that is stored or shown (errors, answers, the model name it reports): a key
    is caught verbatim, with whitespace inserted between its characters, reversed, and
    base64-encoded (at any alignment, either alphabet)."""
    if not text:
        return text or ""
    text = str(text)
    for pattern in _secret_patterns():
        text = pattern.sub(REDACTED, text)
    return _KEY_SHAPED.sub(REDACTED, text)
