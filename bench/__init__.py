"""`make bench` (see ``bench/__main__.py``)."""

from pathlib import Path

from benchmark.datasets import DatasetsMissing, dataset_path


def bench_dataset(relative: str = "") -> Path:
    """A file or folder of the real datasets (``DATASETS_DIR``); a missing one stops the bench with one line."""
    try:
        return dataset_path(relative)
    except DatasetsMissing as exc:
        raise SystemExit(str(exc)) from None
