"""A web process never imports ``ppi_py`` (numba, statsmodels, scikit-learn, pandas: +158 MiB per web
worker) nor a judge client (openai, httpx, pydantic): the pages and API answers of a run and the
dashboards, rendered in a pytest process of its own (``pages_in_this_process.py``) so that what
this test process has imported cannot hide what they import."""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection


def test_a_process_rendering_run_pages_and_dashboards_imports_no_heavy_module(tmp_path):
    here = Path(__file__).parent / "pages_in_this_process.py"
    env = {**os.environ, "VAR_DIR": str(tmp_path)}
    if connection.vendor == "postgresql":  # its own database, beside this process's
        name = settings.DATABASES["default"]["NAME"].removeprefix("test_")
        env["DATABASE_URL"] = os.environ.get("DATABASE_URL", settings.DATABASE_URL).rsplit("/", 1)[0] + f"/{name}_web"
    else:
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'web.sqlite3'}"
    result = subprocess.run([sys.executable, "-m", "pytest", str(here), "-q", "-p", "no:cacheprovider", "-x",
                             "--no-header", "-o", "python_files=pages_in_this_process.py"],
                            cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout
