"""Settings for the test suite: PostgreSQL (``make test`` provides one), fast hashing."""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/survey_eval_studio")

from .settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Each test process its own cache: ids repeat across test databases, so nothing may be shared.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
SECURE_SSL_REDIRECT = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# The browser tests talk plain HTTP to the live server.
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
