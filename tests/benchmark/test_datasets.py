"""Where the real datasets are found: DATASETS_DIR, else the repository's datasets/."""

from pathlib import Path

import pytest

from benchmark.datasets import SHIPPED_DATASETS, DatasetsMissing, dataset_path, datasets_dir
from tests.conftest import DATASETS

ROOT = Path(__file__).resolve().parents[2]


def test_the_repository_ships_the_datasets_with_their_licenses():
    assert SHIPPED_DATASETS == ROOT / "datasets"
    for folder in ("reportbench", "deepscholar-bench", "deepsynth-eval", "surveylens"):
        assert (SHIPPED_DATASETS / folder / "LICENSE").is_file(), folder
    assert len(list((SHIPPED_DATASETS / "reportbench" / "ReportBench_v1.1_GT").glob("*.jsonl"))) == 100


def test_the_folder_is_datasets_dir_when_set_else_the_shipped_one(monkeypatch, tmp_path):
    monkeypatch.delenv("DATASETS_DIR", raising=False)
    assert datasets_dir() == SHIPPED_DATASETS
    monkeypatch.setenv("DATASETS_DIR", str(tmp_path))
    assert datasets_dir() == tmp_path
    assert dataset_path() == tmp_path


def test_tests_read_the_configured_folder():
    assert DATASETS == datasets_dir()


def test_a_missing_folder_or_file_is_one_line_naming_it_and_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("DATASETS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(DatasetsMissing, match=r"^the datasets folder is missing at .*nowhere \(set DATASETS_DIR") as exc:
        dataset_path("reportbench")
    assert "\n" not in str(exc.value)
    with pytest.raises(DatasetsMissing, match=r"reportbench is missing from the datasets folder .* \(set DATASETS_DIR\)"):
        dataset_path("reportbench", root=tmp_path)
