"""The one CSV writer: formula-like text defused (OWASP), numbers kept, and nothing else writes CSV."""

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

import pytest

from benchmark.spreadsheet import csv_cell, csv_writer

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", ["=1+2", "+SUM(A1:A2)", "-2+3", "@SUM(A1)", "\t=x", "\r=x", "=HYPERLINK(\"http://x\")"])
def test_formula_like_text_is_prefixed_with_a_quote(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", [3, -3, 0.25, -0.5, Decimal("-1.5"), True, "-0.5", "+7", "-1e-3", "plain", "a=b"])
def test_numbers_and_plain_text_stay_as_they_are(value):
    assert csv_cell(value) == value


def test_none_is_an_empty_cell():
    assert csv_cell(None) == ""


def test_the_writer_writes_safe_cells_that_read_back():
    buffer = io.StringIO(newline="")
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(["system", "score"])
    writer.writerows([["=cmd|' /C calc'!A0", -0.25], [None, 3]])
    rows = list(csv.reader(io.StringIO(buffer.getvalue())))
    assert rows == [["system", "score"], ["'=cmd|' /C calc'!A0", "-0.25"], ["", "3"]]


def test_no_other_module_writes_csv():
    """Every CSV goes through ``csv_writer``: no app module builds its own ``csv.writer``."""
    offenders = []
    for path in ROOT.glob("*/**/*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in (".venv", "tests", "bench") or relative == Path("benchmark/spreadsheet.py"):
            continue
        if re.search(r"csv\.(writer|DictWriter)\(", path.read_text(encoding="utf-8")):
            offenders.append(str(relative))
    assert offenders == []


def test_the_deepscholar_csvs_defuse_formulas_and_keep_numbers():
    from benchmark.exporters.deepscholar import _csv

    written = _csv(("title", "row", "score"), [{"title": "=HYPERLINK(\"x\")", "row": 3, "score": -0.5}])
    assert list(csv.reader(io.StringIO(written.decode()))) == [["title", "row", "score"],
                                                                ["'=HYPERLINK(\"x\")", "3", "-0.5"]]
