"""Settings, read from environment variables with working defaults.

The embedded default needs no server: SQLite under ``var/`` and kombu's filesystem
broker under ``var/broker``. Production points ``DATABASE_URL`` at PostgreSQL and
``CELERY_BROKER_URL`` at Redis. Every variable is documented in the README.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from benchmark.datasets import datasets_dir

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))
# The real datasets (demo, tests, bench): DATASETS_DIR, default the datasets/ folder in the repository.
DATASETS_DIR = datasets_dir()


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false)")


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (set DEBUG=1 for development)")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "core",
    "benchmark",
    "annotation",
    "scoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "annotation.crowd.middleware.CrowdGate",  # a crowd worker reaches their project's workspace only
    "annotation.middleware.BlindRankingGate",
    "config.headers.SecurityHeaders",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "scoring.context_processors.worker_status",
            ],
        },
    },
]


def database_from_url(url: str) -> dict:
    config = dj_database_url.parse(url, conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # WAL lets readers proceed while the worker writes; IMMEDIATE transactions take the
        # write lock up front, so concurrent writers wait instead of failing with "database is
        # locked" when a read lock cannot be upgraded; config.sqlite makes them wait in a queue
        # that wakes the next one at once, rather than in SQLite's sleep-and-retry loop.
        config["ENGINE"] = "config.sqlite"
        config["OPTIONS"] = {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
        }
        # Tests run on a file beside the database, as the product does, not on Django's
        # in-memory default: its shared cache locks whole tables ("database table is locked"),
        # so concurrent writers would fail there where WAL and IMMEDIATE make them wait.
        if config["NAME"] and config["NAME"] != ":memory:":
            path = Path(config["NAME"])
            config["TEST"] = {"NAME": str(path.with_name(f"test_{path.name}"))}
    elif config["ENGINE"] == "django.db.backends.postgresql":
        # Our queries are short; PostgreSQL's JIT compiles any whose estimated cost is high
        # (a dashboard's subqueries over a large table), which costs more than it saves.
        config.setdefault("OPTIONS", {})["options"] = "-c jit=off"
    return config


DATABASE_URL = os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'studio.sqlite3'}"
DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
# Curators edit the admin pages of curation (the system alias table) by their role.
AUTHENTICATION_BACKENDS = ["core.authentication.ProfileModelBackend", "annotation.auth_backends.CuratorAdminBackend"]
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Sign-in with an OpenID Connect provider (off unless OIDC_ISSUER is set) -----------------
# The issuer is the operator's configuration, not a user's input: its discovery document
# (<issuer>/.well-known/openid-configuration), token, userinfo and JWKS endpoints are fetched
# directly, not through core.outbound's address rule, so an institution's provider on a private
# network works. Endpoints are discovered at the first sign-in and cached (core.oidc).
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "").rstrip("/")
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "")  # "Sign in with …"; default: the issuer's host
# A first sign-in creates an account only for these e-mail domains (empty: any address the provider vouches for).
OIDC_ALLOWED_DOMAINS = [domain.lower().lstrip("@") for domain in env_list("OIDC_ALLOWED_DOMAINS", "")]
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = float(os.environ.get("OIDC_TIMEOUT", "10"))
OIDC_DISCOVERY_SECONDS = 3600  # how long discovered endpoints are kept before they are asked again
if OIDC_ISSUER and not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER is set: set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too")
OIDC_BACKEND = "annotation.oidc.OidcBackend"
if OIDC_ISSUER:  # listed only when on: it loads mozilla-django-oidc (requests, PyJWT, cryptography)
    AUTHENTICATION_BACKENDS.append(OIDC_BACKEND)

# --- E-mail (invitations) ----------------------------------------------------------------------
# EMAIL_URL (smtp://user:password@host:587/?tls=1, smtps://…:465, console:, file:///path,
# locmem:) or Django's usual EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD,
# EMAIL_USE_TLS, EMAIL_USE_SSL. Without either: the console backend with DEBUG=1, else SMTP on
# localhost:25.
def email_settings_from_url(url: str) -> dict:
    from urllib.parse import parse_qs, unquote, urlsplit

    parts = urlsplit(url)
    scheme, query = parts.scheme.lower(), parse_qs(parts.query)
    backends = {"console": "console", "file": "filebased", "locmem": "locmem", "smtp": "smtp", "smtps": "smtp",
                "submission": "smtp"}
    if scheme not in backends:
        raise ImproperlyConfigured(f"EMAIL_URL={url!r}: the scheme must be one of {', '.join(backends)}")
    config = {"EMAIL_BACKEND": f"django.core.mail.backends.{backends[scheme]}.EmailBackend"}
    if scheme == "file":
        config["EMAIL_FILE_PATH"] = unquote(parts.path)
    elif backends[scheme] == "smtp":
        config.update(EMAIL_HOST=parts.hostname or "localhost", EMAIL_HOST_USER=unquote(parts.username or ""),
                      EMAIL_HOST_PASSWORD=unquote(parts.password or ""), EMAIL_USE_SSL=scheme == "smtps",
                      EMAIL_USE_TLS=scheme == "submission" or query.get("tls", ["0"])[0] in {"1", "true"},
                      EMAIL_PORT=parts.port or {"smtps": 465, "submission": 587}.get(scheme, 25))
    return config


if os.environ.get("EMAIL_URL"):
    globals().update(email_settings_from_url(os.environ["EMAIL_URL"]))
else:
    EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
        "django.core.mail.backends.console.EmailBackend" if DEBUG and not os.environ.get("EMAIL_HOST")
        else "django.core.mail.backends.smtp.EmailBackend")
    EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
    EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
    EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
    EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT", "20"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Survey Eval Studio <noreply@localhost>")
# How long an invitation's link works (a resend draws a new link and a new expiry).
INVITATION_EXPIRY_DAYS = int(os.environ.get("INVITATION_EXPIRY_DAYS", "14"))

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
WHITENOISE_USE_FINDERS = DEBUG
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
MEDIA_URL = "media/"

# Uploads and imports are bounded; the importers enforce their own per-line limits too.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", 20 * 1024 * 1024))
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
IMPORT_MAX_LINE_BYTES = int(os.environ.get("IMPORT_MAX_LINE_BYTES", 16 * 1024 * 1024))
# A zip import with more entries is refused before anything is unpacked (benchmark.services.imports).
IMPORT_MAX_ZIP_ENTRIES = int(os.environ.get("IMPORT_MAX_ZIP_ENTRIES", 10_000))

# The cache holds dashboard figures (which a worker refreshes for the web processes), login
# throttling counts and progress totals, so it must be shared by every process: a folder under
# VAR_DIR by default (no server needed), CACHE_URL=redis://host:6379/1 at scale.
CACHE_URL = os.environ.get("CACHE_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(VAR_DIR / "cache"),
              "OPTIONS": {"MAX_ENTRIES": 20_000}}
    )
}
# Sessions are read on every request: from the cache (written through to the database, which
# stays the record), so a page costs one query less.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# --- Celery -------------------------------------------------------------------------------
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
CELERY_TASK_IGNORE_RESULT = True
# Exports have their own queue, consumed by every worker and by a worker of their own
# (``manage.py studio``'s, deploy/'s ``survey-eval-exports`` unit), so an export never waits behind
# the jobs of a judge run that occupy the general workers.
EXPORTS_QUEUE = "exports"
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {"benchmark.run_export": {"queue": EXPORTS_QUEUE}}
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True  # a killed worker's unfinished task is delivered again
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker that is down or accepts connections but never answers must not hang a request or a
# command: connecting, the handshake and each Redis command give up after BROKER_TIMEOUT
# seconds, and a publish is tried twice (the second on a fresh connection: a pooled one may
# have gone stale), so the caller hears of it within ~2 × BROKER_TIMEOUT.
# Work that could not be sent is marked and sent again by recovery (scoring.services.runs).
BROKER_TIMEOUT = float(os.environ.get("BROKER_TIMEOUT", "1.5"))
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_TIMEOUT
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
# Redis hands an unacknowledged message (its worker was killed) to another worker after this many
# seconds; kombu's default is an hour. A job still executing when its message comes back is not
# run twice (job claims, see scoring.services.runs), so this only bounds how long a lost
# message waits; it must exceed the longest retry countdown (60 s, scoring.tasks.RETRY).
BROKER_VISIBILITY_TIMEOUT = int(os.environ.get("BROKER_VISIBILITY_TIMEOUT", "300"))
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": BROKER_VISIBILITY_TIMEOUT,
        "socket_timeout": BROKER_TIMEOUT,
        "socket_connect_timeout": BROKER_TIMEOUT,
        # sweep for unacknowledged messages every 10 s rather than every 100 s
        "unacked_restore_interval": 10,
        "unacked_restore_throttle": 1,
    }
elif CELERY_BROKER_URL.startswith(("amqp://", "amqps://", "pyamqp://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {"write_timeout": BROKER_TIMEOUT}
WORKER_HEARTBEAT_SECONDS = int(os.environ.get("WORKER_HEARTBEAT_SECONDS", "10"))
# Every worker looks for jobs a dead worker left running this often (not only when it starts).
JOB_RECOVERY_SECONDS = int(os.environ.get("JOB_RECOVERY_SECONDS", "60"))
# Batch mode: queued judge calls wait this long for more before a batch goes out while the run's
# jobs still execute (once none does, the batch goes out at once). Batches are polled at each recovery.
BATCH_GATHER_SECONDS = int(os.environ.get("BATCH_GATHER_SECONDS", "60"))

# --- Judges -------------------------------------------------------------------------------
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
JUDGE_MODEL = os.environ.get("JUDGE_MODEL", "gpt-4.1-mini")


def _judge_endpoints(spec: str) -> dict[str, str]:
    """``JUDGE_ENDPOINTS``: comma-separated ``base_url=ENV_VAR`` (the variable holding that endpoint's
    key) or a bare ``base_url`` (an endpoint that needs no key) -> ``{base_url: key}``."""
    endpoints = {}
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        url, _, variable = entry.rpartition("=") if "=" in entry else (entry, "", "")
        variable = variable.strip()
        if variable and variable not in os.environ:
            raise ImproperlyConfigured(
                f"JUDGE_ENDPOINTS binds {url.strip()} to the key in ${variable}, which is not set"
            )
        endpoints[url.strip()] = os.environ.get(variable, "") if variable else ""
    return endpoints


# Keys go only to the endpoint they are bound to (scoring.judges.endpoints): OPENAI_API_KEY to
# OPENAI_BASE_URL, each JUDGE_ENDPOINTS key to its own base URL.
JUDGE_ENDPOINTS = _judge_endpoints(os.environ.get("JUDGE_ENDPOINTS", ""))
# Optional plug-ins (scoring.sources), off by default: nothing is fetched from the web unless set.
SOURCE_FETCHER = os.environ.get("SOURCE_FETCHER", "")  # e.g. scoring.sources.http_fetch
CITATION_COUNT_LOOKUP = os.environ.get("CITATION_COUNT_LOOKUP", "")
# Requests the server makes for users (cited pages, webhooks) reach only public addresses on the
# scheme's default port (core.outbound); these open a port or a network on purpose, e.g.
# OUTBOUND_ALLOWED_NETWORKS=10.0.5.0/24 for an internal webhook receiver.
OUTBOUND_ALLOWED_PORTS = [int(port) for port in env_list("OUTBOUND_ALLOWED_PORTS", "")]
OUTBOUND_ALLOWED_NETWORKS = env_list("OUTBOUND_ALLOWED_NETWORKS", "")

# --- API ----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "core.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "config.schema.OwnDocstringSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # The client address (throttling) is REMOTE_ADDR unless this many proxies of ours put theirs
    # in X-Forwarded-For: a client can write anything there, so it is read only when set.
    "NUM_PROXIES": int(os.environ.get("TRUSTED_PROXY_COUNT", "0")),
}
# Visits of crowd entry links (/join/<token>/) per client address and minute (annotation.crowd).
CROWD_JOIN_RATE = int(os.environ.get("CROWD_JOIN_RATE", "30"))

# Failed logins per username+client address before /login/ and the API token refuse (config/throttling.py).
LOGIN_FAILURE_LIMIT = 10
LOGIN_FAILURE_WINDOW = 15 * 60  # seconds, counted from the first failure
SPECTACULAR_SETTINGS = {
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},  # core.converters
    "TITLE": "Survey Eval Studio API",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Several models name a choice field status/kind/format; give each set its own schema name.
    "ENUM_NAME_OVERRIDES": {
        "TaskStatusEnum": "benchmark.models.Task.Status",
        "SurveyKindEnum": "benchmark.models.Survey.Kind",
        "ChecklistGroupKindEnum": "benchmark.models.ChecklistGroup.Kind",
        "ReportFormatEnum": "benchmark.models.Report.Format",
        "ProjectKindEnum": "annotation.models.AnnotationProject.Kind",
        "ProjectStatusEnum": "annotation.models.AnnotationProject.Status",
        "ProjectSamplingEnum": "annotation.models.AnnotationProject.Sampling",
    },
}

# --- Production hardening (active whenever DEBUG is off) ----------------------------------
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # one line per HTTP request to a judge endpoint drowns everything else; calls are in LLMCall rows
    "loggers": {name: {"level": "WARNING"} for name in ("httpx", "httpx2", "httpcore", "httpcore2", "openai")},
}

VAR_DIR.mkdir(parents=True, exist_ok=True)
