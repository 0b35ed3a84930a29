"""Report parser: turns a generated report (markdown or plain text) into a
structured, JSON-serializable ``ParsedReport`` - outline, sections,
paragraphs, sentences, inline citations resolved against the report's own
reference list, and SurveyLens structural statistics.

Pure Python, no Django imports: usable from importers, pipelines and the API.

    >>> from benchmark.parsing import parse_report
    >>> report = parse_report(
    ...     "# Intro\\n\\nLLMs help [1].\\n\\n## References\\n\\n"
    ...     "[1] Vaswani, A. (2017). Attention is all you need. NeurIPS."
    ... )
    >>> report.references[report.citations[0].reference_index].title
    'Attention is all you need'

See README.md beside this file for the fields, decisions and deviations.
"""

from .model import (
    SCHEMA_VERSION,
    Citation,
    OutlineEntry,
    Paragraph,
    ParsedReport,
    Reference,
    ReportStats,
    Section,
    Sentence,
)
from .parser import FORMATS, parse_report

CITATION_KINDS = (
    "numeric",
    "footnote",
    "link",
    "url",
    "arxiv",
    "doi",
    "author_year",
    "latex",
    "source_chip",
)

__all__ = [
    "CITATION_KINDS",
    "FORMATS",
    "SCHEMA_VERSION",
    "Citation",
    "OutlineEntry",
    "Paragraph",
    "ParsedReport",
    "Reference",
    "ReportStats",
    "Section",
    "Sentence",
    "parse_report",
]
