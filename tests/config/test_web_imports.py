"""What a web process loads: the URL conf must not import libraries no request path calls.

Every web worker imports ``config.urls`` (gunicorn does not preload), so a module imported there
costs its memory in every worker. ``scipy.stats`` (~80 MiB resident with its dependencies) and
``scipy.optimize`` (~25 MiB) are used by no view: the metrics take what they need from
``scipy.special`` or import ``scipy.optimize`` inside the function that needs it.
"""

import os
import subprocess
import sys

from django.conf import settings

HEAVY = ("scipy.stats", "scipy.optimize", "openai", "httpx", "pydantic")  # the judge client: ~45 MiB, workers only


def test_url_conf_imports_neither_scipy_stats_nor_scipy_optimize_nor_the_judge_client(tmp_path):
    code = (
        "import sys, django\n"
        "django.setup()\n"
        "import config.wsgi, config.urls\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in sys.modules if m in heavy or m.startswith(tuple(h + '.' for h in heavy))))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", "VAR_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"the URL conf imports {result.stdout.strip()}"
