"""Fuzzing: the importers and the report parser never fail with anything but a located ImportFailed."""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from benchmark.importers.base import ImportFailed
from benchmark.importers.catalogue import run_import
from benchmark.parsing import parse_report

FILE_FORMATS = ("native", "deepsynth", "bibtex", "surveylens-annotations")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=20,
)
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _import(name: str, data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(data)
        try:
            run_import(name, path)
        except ImportFailed:
            pass


@pytest.mark.django_db
@FUZZ
@given(name=st.sampled_from(FILE_FORMATS), data=st.binary(max_size=400))
def test_importers_on_random_bytes(name, data):
    _import(name, data, ".jsonl" if name != "bibtex" else ".bib")


@pytest.mark.django_db
@FUZZ
@given(name=st.sampled_from(FILE_FORMATS), lines=st.lists(json_values, min_size=1, max_size=4))
def test_importers_on_random_json(name, lines):
    _import(name, "\n".join(json.dumps(line) for line in lines).encode(), ".json" if "annotations" in name else ".jsonl")


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.characters(), max_size=600) | st.sampled_from(["#", "[1]", "## References\n[1]"]))
def test_parse_report_on_random_text(text):
    parse_report(text)
    parse_report(text, format="text")
