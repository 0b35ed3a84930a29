"""deploy/: the environment template and the README name every setting; units stop their whole group."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _settings_read() -> set[str]:
    """Every environment variable config/settings.py reads (directly or through env_bool/env_list)."""
    source = (ROOT / "config" / "settings.py").read_text()
    names = set(re.findall(r'(?:environ\.get|env_bool|env_list)\(\s*"([A-Z][A-Z0-9_]*)"', source))
    assert "datasets_dir()" in source  # DATASETS_DIR is read through benchmark.datasets
    return names | {"DATASETS_DIR"}


def test_the_settings_found_are_the_known_ones():
    assert {"DEBUG", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "VAR_DIR", "CONN_MAX_AGE", "STATIC_ROOT",
            "MEDIA_ROOT", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "DATA_UPLOAD_MAX_MEMORY_SIZE"} <= _settings_read()


def test_readme_table_and_environment_template_list_every_setting():
    readme = (ROOT / "README.md").read_text()
    table = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", readme, flags=re.M))
    template = (ROOT / "deploy" / "survey-eval.env.example").read_text()
    listed = set(re.findall(r"^#?([A-Z][A-Z0-9_]*)=", template, flags=re.M))
    assert _settings_read() - table == set()
    assert _settings_read() - listed == set()
    assert "SHARED_DIR" not in readme and "SURVEY_EVAL_DATASETS" not in readme


def test_every_unit_stops_its_whole_process_group_and_reads_the_environment_file():
    units = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
    assert [u.name for u in units] == ["survey-eval-exports.service", "survey-eval-web.service",
                                       "survey-eval-worker@.service"]
    for unit in units:
        text = unit.read_text()
        assert re.search(r"^KillMode=control-group$", text, flags=re.M), unit.name
        assert re.search(r"^EnvironmentFile=/etc/survey-eval/env$", text, flags=re.M), unit.name


def test_exports_have_their_own_queue_and_every_worker_command_says_which_it_consumes():
    """An export goes to the exports queue (so it never waits behind a judge run's jobs); the general
    workers consume both queues, the exports worker only that one (deploy/, Procfile, ``studio``)."""
    from config.celery import app

    assert app.amqp.router.route({}, "benchmark.run_export")["queue"].name == "exports"
    assert app.amqp.router.route({}, "scoring.execute_job")["queue"].name == "celery"
    commands = [line for line in (ROOT / "deploy" / "Procfile").read_text().splitlines() if " worker " in line]
    commands += [line for unit in (ROOT / "deploy" / "systemd").glob("*.service")
                 for line in unit.read_text().splitlines() if line.startswith("ExecStart=") and "celery" in line]
    studio = (ROOT / "scoring" / "management" / "commands" / "studio.py").read_text()
    queues = sorted(re.findall(r"--queues=([a-z,]+)", "\n".join(commands))) + sorted(
        re.findall(r'"--queues=([a-z,]+)"', studio))
    assert len(queues) == len(commands) + 2
    assert queues.count("exports") == 3 and queues.count("celery,exports") == 3
