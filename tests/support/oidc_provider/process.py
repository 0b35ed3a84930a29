"""Start the test OpenID provider (``serve``) in a second process on a free loopback port."""

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CLIENT_ID, SECRET = "studio-test", "studio-test-secret"
PASSWORD = "provider-pass-1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def oidc_provider(database: Path, redirect_uri: str, users: tuple[str, ...]):
    """The issuer URL while the provider serves; ``users`` are ``username:email`` (password ``PASSWORD``)."""
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    env = {**os.environ, "OIDC_PROVIDER_DB": str(database), "OIDC_PROVIDER_SITE_URL": site}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.oidc_provider.serve", str(port), CLIENT_ID, SECRET, redirect_uri,
         *(f"{user}:{PASSWORD}" for user in users)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        if line.strip() != "READY":
            process.kill()
            raise RuntimeError(f"the test OpenID provider did not start: {line}{process.stderr.read()}")
        yield f"{site}/openid"
    finally:
        process.terminate()
        process.wait(timeout=10)


def studio_sso_settings(issuer: str, **extra) -> dict:
    """``override_settings`` arguments that turn the studio's sign-in with this provider on, as
    ``OIDC_ISSUER`` and its client in the environment would (the backend listed with them)."""
    from django.conf import settings

    backends = [name for name in settings.AUTHENTICATION_BACKENDS if name != settings.OIDC_BACKEND]
    return {"OIDC_ISSUER": issuer, "OIDC_RP_CLIENT_ID": CLIENT_ID, "OIDC_RP_CLIENT_SECRET": SECRET,
            "AUTHENTICATION_BACKENDS": [*backends, settings.OIDC_BACKEND], **extra}
