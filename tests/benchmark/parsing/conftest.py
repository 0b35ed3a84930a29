"""Fixtures for the report-parser tests: the real datasets (``tests.conftest.DATASETS``)."""

from __future__ import annotations

import pytest

from benchmark.parsing import parse_report, samples
from tests.conftest import DATASETS


@pytest.fixture(scope="session")
def datasets_root():
    if not DATASETS.is_dir():
        pytest.fail(f"real datasets not found at {DATASETS}; set {samples.DATASETS_ENV}")
    return DATASETS


@pytest.fixture(scope="session")
def real(datasets_root):
    """name -> ParsedReport for every system output in the datasets."""
    return {s.name: parse_report(s.text, format=s.format) for s in samples.system_output_samples(datasets_root)}
