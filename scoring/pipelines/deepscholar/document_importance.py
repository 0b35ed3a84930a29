"""Document importance (no judge): DI = min(median cites(S) / median cites(S*), 1).

S* is all the exemplar's references; counts come from ``BibEntry.citation_count`` or a count
field of the ``Report.sources`` document. Works without a count are left out; ``None`` when no
work of S or of S* has one (:func:`document_importance`).
"""

from __future__ import annotations

from benchmark.models import GoldReference
from scoring.metrics import document_importance
from scoring.sources import citation_count

from .documents import Document


def score_document_importance(*, retrieved: list[Document], references: list[GoldReference]) -> tuple[dict, list[str]]:
    """(metrics, notes) from the stored citation counts of S and of the exemplar's references."""
    system_counts = [d.citation_count for d in retrieved if d.citation_count is not None]
    exemplar_counts = [n for n in (citation_count(r.bib_entry) for r in references) if n is not None]
    defined = bool(system_counts and exemplar_counts)
    metrics = {
        "document_importance": document_importance(system_counts, exemplar_counts) if defined else None,
        "documents_with_counts": len(system_counts),
        "exemplar_references_with_counts": len(exemplar_counts),
    }
    notes = [] if defined else ["citation counts are unknown for the report's documents or the exemplar's "
                                "references: document importance is undefined"]
    return metrics, notes
