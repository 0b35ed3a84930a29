"""The kinds of annotation, one module each behind one interface (``base.AnnotationKind``).

Everything else asks ``kind_of(project)`` what a kind does instead of comparing ``project.kind``;
adding a kind is a module here, its templates (``templates/annotation/kinds/<kind>/``), its
tests, one line below and the few files ``docs/architecture.md`` ("Adding a kind") lists.
"""

from typing import Any

from .agreement import AGREEMENT
from .base import AnnotationKind
from .pairwise import PAIRWISE
from .rating import RATING
from .verify import VERIFY

KINDS: dict[str, AnnotationKind] = {kind.name: kind for kind in (VERIFY, PAIRWISE, AGREEMENT, RATING)}


def kind_of(project: Any) -> AnnotationKind:
    """The kind of a project (a model row, a dict of its fields, or the kind's name);
    ``ValueError`` naming ``kind`` for an unknown one."""
    name = project if isinstance(project, str) else project["kind"] if isinstance(project, dict) else project.kind
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"kind: {name!r} is not one of {', '.join(KINDS)}") from None


def kinds_with(section: str) -> list[str]:
    """The kinds whose projects a dashboard section shows (``AnnotationKind.dashboard_sections``)."""
    return [name for name, kind in KINDS.items() if section in kind.dashboard_sections]


__all__ = ["KINDS", "AnnotationKind", "kind_of", "kinds_with"]
