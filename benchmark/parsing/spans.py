"""Offset helpers shared by the parser modules: line tables and span sets."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


class Lines:
    """Line table of a text: ``starts[i]``/``ends[i]`` delimit line ``i``
    without its line break (``\\n``, ``\\r\\n`` or ``\\r``)."""

    __slots__ = ("text", "starts", "ends")

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        ends = []
        for m in _NEWLINE_RE.finditer(text):
            ends.append(m.start())
            starts.append(m.end())
        ends.append(len(text))
        self.starts = starts
        self.ends = ends

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, i: int) -> str:
        return self.text[self.starts[i] : self.ends[i]]

    def index_at(self, pos: int) -> int:
        """Index of the line containing offset ``pos``."""
        return max(0, bisect_right(self.starts, pos) - 1)


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so that it neither starts nor ends with whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class SpanSet:
    """An immutable set of half-open intervals, merged, with O(log n) queries."""

    __slots__ = ("_starts", "_ends")

    def __init__(self, spans: Iterable[tuple[int, int]] = ()) -> None:
        merged: list[list[int]] = []
        for start, end in sorted(s for s in spans if s[1] > s[0]):
            if merged and start <= merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1][1] = end
            else:
                merged.append([start, end])
        self._starts = [s for s, _ in merged]
        self._ends = [e for _, e in merged]

    def __len__(self) -> int:
        return len(self._starts)

    def __iter__(self):
        return iter(zip(self._starts, self._ends))

    def contains(self, pos: int) -> bool:
        i = bisect_right(self._starts, pos) - 1
        return i >= 0 and pos < self._ends[i]

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect_right(self._starts, start) - 1
        if i >= 0 and self._ends[i] > start:
            return True
        j = i + 1
        return j < len(self._starts) and self._starts[j] < end

    def covers(self, start: int, end: int) -> bool:
        """True when ``[start, end)`` lies inside one interval of the set."""
        i = bisect_right(self._starts, start) - 1
        return i >= 0 and end <= self._ends[i]
