"""Where the real datasets are: the one rule, read by ``config.settings`` (``DATASETS_DIR``),
the report-parser samples, the tests and ``bench/``. Standard library only, so it works before
Django is set up (``bench/parsing_bench.py`` runs without it).

``$DATASETS_DIR`` when set, else the ``datasets/`` folder shipped in the repository."""

import os
from pathlib import Path

DATASETS_ENV = "DATASETS_DIR"
SHIPPED_DATASETS = Path(__file__).resolve().parent.parent / "datasets"


class DatasetsMissing(Exception):
    """The datasets folder (or a file in it) is not there; the message is one line saying how to fix it."""


def datasets_dir() -> Path:
    return Path(os.environ.get(DATASETS_ENV) or SHIPPED_DATASETS)


def dataset_path(relative: str = "", *, root: Path | None = None) -> Path:
    """``root / relative`` (``root`` defaults to ``datasets_dir()``), or DatasetsMissing when it is not there."""
    base = Path(root) if root is not None else datasets_dir()
    if not base.is_dir():
        raise DatasetsMissing(f"the datasets folder is missing at {base} (set {DATASETS_ENV} to the folder holding "
                              "reportbench/, deepscholar-bench/, deepsynth-eval/ and surveylens/)")
    path = base / relative
    if not path.exists():
        raise DatasetsMissing(f"{path} is missing from the datasets folder {base} (set {DATASETS_ENV})")
    return path
