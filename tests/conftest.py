from pathlib import Path

import pytest
from django.conf import settings

DATASETS = Path(settings.SHARED_DIR) / "datasets"


@pytest.fixture
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.fail(f"the shared datasets are missing at {DATASETS}")
    return DATASETS
