from pathlib import Path

import pytest
from django.conf import settings

# One session-wide browser for every browser test, and the loopback OpenAI-compatible server.
pytest_plugins = ["tests.support.browser", "tests.support.fixtures"]

DATASETS = Path(settings.SHARED_DIR) / "datasets"


@pytest.fixture
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.fail(f"the shared datasets are missing at {DATASETS}")
    return DATASETS
