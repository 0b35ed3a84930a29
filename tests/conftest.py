from pathlib import Path

import pytest
from django.conf import settings

# One session-wide browser for every browser test, and the loopback OpenAI-compatible server.
pytest_plugins = ["tests.support.browser", "tests.support.fixtures"]

# The one way tests find the real data: DATASETS_DIR, default the repository's datasets/.
DATASETS = Path(settings.DATASETS_DIR)


@pytest.fixture
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.fail(f"the datasets are missing at {DATASETS} (set DATASETS_DIR)")
    return DATASETS
