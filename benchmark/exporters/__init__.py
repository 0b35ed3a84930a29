"""The one list of export formats. Each exporter is ``fn(tasks, *, include_history=False) -> str``."""

from collections.abc import Callable
from dataclasses import dataclass

from .native import export_tasks_jsonl


@dataclass(frozen=True)
class Exporter:
    name: str
    function: Callable[..., str]
    extension: str
    description: str


EXPORTERS: dict[str, Exporter] = {
    exp.name: exp
    for exp in [
        Exporter("native", export_tasks_jsonl, "jsonl", "our JSONL task format (docs/formats.md), one task per line"),
    ]
}
