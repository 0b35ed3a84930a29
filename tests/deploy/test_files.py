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
    assert [u.name for u in units] == ["survey-eval-web.service", "survey-eval-worker@.service"]
    for unit in units:
        text = unit.read_text()
        assert re.search(r"^KillMode=control-group$", text, flags=re.M), unit.name
        assert re.search(r"^EnvironmentFile=/etc/survey-eval/env$", text, flags=re.M), unit.name
