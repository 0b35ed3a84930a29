"""The e-mail and OpenID Connect settings, read as a deployment's environment gives them."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from config.settings import email_settings_from_url

NOT_INHERITED = {"SECRET_KEY", "DEBUG", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE", "EMAIL_URL", "EMAIL_HOST",
                 "EMAIL_BACKEND", "OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_ALLOWED_DOMAINS"}
NAMES = ("EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER", "EMAIL_HOST_PASSWORD", "EMAIL_USE_TLS",
         "EMAIL_USE_SSL", "EMAIL_FILE_PATH", "OIDC_ISSUER", "OIDC_ALLOWED_DOMAINS")


def _settings(tmp_path, **env) -> dict:
    code = ("import django, json; django.setup(); from django.conf import settings; "
            f"print(json.dumps({{n: getattr(settings, n, None) for n in {NAMES!r}}}, default=str))")
    clean = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    result = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, capture_output=True, text=True,
                            env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1",
                                 "VAR_DIR": str(tmp_path), **env})
    if result.returncode:
        raise RuntimeError(result.stderr.strip().splitlines()[-1])
    return json.loads(result.stdout)


def test_development_prints_e_mails_to_the_console_and_sso_is_off(tmp_path):
    got = _settings(tmp_path)
    assert got["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"
    assert (got["OIDC_ISSUER"], got["OIDC_ALLOWED_DOMAINS"]) == ("", [])


@pytest.mark.parametrize("url, expected", [
    ("smtp://mailer:p%40ss@mail.lab.org:2525", {"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                                               "EMAIL_HOST": "mail.lab.org", "EMAIL_PORT": 2525,
                                               "EMAIL_HOST_USER": "mailer", "EMAIL_HOST_PASSWORD": "p@ss",
                                               "EMAIL_USE_TLS": False, "EMAIL_USE_SSL": False}),
    ("smtp://mail.lab.org:587/?tls=1", {"EMAIL_PORT": 587, "EMAIL_USE_TLS": True}),
    ("submission://u:p@mail.lab.org", {"EMAIL_PORT": 587, "EMAIL_USE_TLS": True, "EMAIL_USE_SSL": False}),
    ("smtps://u:p@mail.lab.org", {"EMAIL_PORT": 465, "EMAIL_USE_SSL": True, "EMAIL_USE_TLS": False}),
    ("file:///var/mail-out", {"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                              "EMAIL_FILE_PATH": "/var/mail-out"}),
    ("console:", {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}),
])
def test_email_url_sets_djangos_email_settings(url, expected):
    got = email_settings_from_url(url)
    assert {name: got.get(name) for name in expected} == expected


def test_a_misspelt_email_url_or_an_issuer_without_client_stops_the_start(tmp_path):
    with pytest.raises(RuntimeError, match="EMAIL_URL='stmp://x': the scheme must be one of"):
        _settings(tmp_path, EMAIL_URL="stmp://x")  # the whole start, as a deployment sees it
    with pytest.raises(RuntimeError, match="set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too"):
        _settings(tmp_path, OIDC_ISSUER="https://login.lab.org")


def test_oidc_settings_from_the_environment(tmp_path):
    got = _settings(tmp_path, OIDC_ISSUER="https://login.lab.org/realms/lab/", OIDC_CLIENT_ID="studio",
                    OIDC_CLIENT_SECRET="s", OIDC_ALLOWED_DOMAINS="Lab.org, @uni.edu")
    assert got["OIDC_ISSUER"] == "https://login.lab.org/realms/lab"
    assert got["OIDC_ALLOWED_DOMAINS"] == ["lab.org", "uni.edu"]


def test_with_sso_off_a_web_process_loads_no_oidc_library(tmp_path):
    code = ("import sys, django; django.setup(); import config.wsgi, config.urls; "
            "from django.test import Client; assert Client(HTTP_HOST='localhost').get('/login/').status_code == 200; "
            "print(sorted(m for m in ('mozilla_django_oidc', 'jwt', 'annotation.oidc') if m in sys.modules))")
    clean = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    result = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, capture_output=True, text=True,
                            env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1",
                                 "VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
