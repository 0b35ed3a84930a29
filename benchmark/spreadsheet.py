"""The one CSV writer of the app: every CSV it serves or exports is written through ``csv_writer``.

User-controlled text (system names, notes, task titles ...) ends up in cells that a spreadsheet
opens. A cell starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return would run there
as a formula, so such text is prefixed with ``'`` (OWASP, "CSV Injection"), which spreadsheets
show as text. Numbers stay numbers: ints, floats and decimals (and text that is exactly a
number, such as ``-0.5``) are written as they are.
"""

import csv
import re
from decimal import Decimal
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """``value`` as a safe cell: None is empty, numbers as they are, formula-like text defused."""
    if value is None:
        return ""
    if isinstance(value, (bool, int, float, Decimal)):
        return value
    text = str(value)
    if text.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


class _SafeWriter:
    def __init__(self, stream, **options) -> None:
        self._writer = csv.writer(stream, **options)

    def writerow(self, row) -> Any:
        return self._writer.writerow([csv_cell(value) for value in row])

    def writerows(self, rows) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(stream, **options) -> _SafeWriter:
    """``csv.writer(stream, **options)`` whose rows go through ``csv_cell``."""
    return _SafeWriter(stream, **options)
