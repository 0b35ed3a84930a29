"""Fixtures for the report-parser tests: the real datasets in shared/."""

from __future__ import annotations

import pytest

from benchmark.parsing import parse_report, samples


@pytest.fixture(scope="session")
def datasets_root():
    root = samples.datasets_dir()
    if not root.is_dir():
        pytest.fail(f"real datasets not found at {root}; set {samples.DATASETS_ENV}")
    return root


@pytest.fixture(scope="session")
def real(datasets_root):
    """name -> ParsedReport for every system output in the datasets."""
    return {s.name: parse_report(s.text, format=s.format) for s in samples.system_output_samples(datasets_root)}
