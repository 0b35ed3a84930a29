import os
import subprocess
import sys

from django.conf import settings

ROOT = settings.BASE_DIR
# Variables the test process may carry that a real deployment's environment would not.
NOT_INHERITED = {"SECRET_KEY", "DEBUG", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}


def run_settings(env: dict) -> subprocess.CompletedProcess:
    code = "import django; django.setup(); from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"
    clean = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True, text=True,
    )


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = run_settings({"DEBUG": "0", "VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_embedded_default_is_sqlite_under_var(tmp_path):
    result = run_settings({"DEBUG": "1", "VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "config.sqlite"  # Django's SQLite backend, writers queued


def test_a_malformed_boolean_is_an_error_not_a_guess(tmp_path):
    result = run_settings({"DEBUG": "maybe", "VAR_DIR": str(tmp_path)})
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_deploy_check_is_clean_with_production_settings(tmp_path):
    env = {
        "DEBUG": "0", "SECRET_KEY": "x" * 64 + "-production-grade-secret-value", "ALLOWED_HOSTS": "studio.example.org",
        "VAR_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
    }
    clean = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env}, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_collectstatic_works_with_production_storage(tmp_path):
    """The manifest storage rewrites every url() and sourceMappingURL: a vendored file pointing at
    something not shipped would stop a deployment here."""
    env = {
        "DEBUG": "0", "SECRET_KEY": "x" * 64 + "-production-grade-secret-value", "VAR_DIR": str(tmp_path),
        "STATIC_ROOT": str(tmp_path / "static"), "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
    }
    clean = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    result = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT, env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env}, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "static" / "staticfiles.json").exists()


def test_the_default_cache_is_shared_between_processes(tmp_path):
    """A worker's refreshed dashboard figures and the login throttle's counts must reach every web process."""
    def run(code):
        clean = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
        env = {**clean, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", "VAR_DIR": str(tmp_path)}
        setup = "import django; django.setup(); from django.core.cache import cache; "
        return subprocess.run([sys.executable, "-c", setup + code], cwd=ROOT, env=env, capture_output=True, text=True)

    assert run("cache.set('shared', 42, 60)").returncode == 0
    read = run("print(cache.get('shared'))")
    assert read.stdout.strip() == "42", read.stderr
