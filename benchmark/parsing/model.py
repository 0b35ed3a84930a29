"""Frozen, JSON-serializable result types of the report parser.

Every offset is a character offset into ``ParsedReport.text`` (the input,
unchanged), half-open: ``text[start:end]``.  ``to_dict()`` emits keys in the
dataclass field order, so the JSON form is stable; ``from_dict()`` inverts it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

SCHEMA_VERSION = 1


class _Record:
    """Shared ``to_dict``/``from_dict`` for the flat records below.

    Subclasses are frozen dataclasses whose fields are JSON scalars
    (str, int, bool or None) only.
    """

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        return cls(**{f.name: data[f.name] for f in fields(cls)})  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class OutlineEntry(_Record):
    """A heading. ``text[start:end] == title``; ``style`` says how it was found:
    ``atx`` (``# x``), ``setext`` (underlined), ``numbered`` (plain-text
    ``2.3 Methods`` / ``Chapter 1 – X``), ``named`` (a standalone canonical
    section name such as ``References`` or ``Introduction``) or ``latex``
    (``\\section{...}``)."""

    level: int
    title: str
    start: int
    end: int
    style: str


@dataclass(frozen=True, slots=True)
class Section(_Record):
    """A flat section: one heading and the content up to the next heading of
    any level.  ``start``/``end`` cover the heading line and the content;
    ``text == report.text[text_start:text_end]`` is the content, stripped.
    Text before the first heading forms a preamble section with
    ``outline_index`` None, ``heading`` "" and ``level`` 0."""

    index: int
    heading: str
    level: int
    outline_index: int | None
    start: int
    end: int
    text: str
    text_start: int
    text_end: int
    is_references: bool


@dataclass(frozen=True, slots=True)
class Paragraph(_Record):
    """A prose block outside reference lists: ``kind`` is ``text``,
    ``list_item`` (marker excluded) or ``quote``."""

    index: int
    section_index: int
    kind: str
    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Sentence(_Record):
    index: int
    paragraph_index: int
    section_index: int
    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Citation(_Record):
    """One cited target.  A marker that names several targets (``[1, 3]``,
    ``[1-3]``, ``(Smith, 2020; Lee, 2021)``, ``\\cite{a,b}``) yields one
    Citation per target; they share ``group`` and the marker's span, so
    ``raw == text[start:end]`` is the whole marker.

    ``kind``: numeric, footnote, link, url, arxiv, doi, author_year, latex,
    source_chip.  ``target`` is normalized: the number as a string, the
    footnote label, the URL (scheme and host lowercased, fragment and
    trailing slash dropped), the arXiv id without version, the lowercase DOI,
    ``"Surname YEAR"``, the LaTeX key, or the lowercase source name."""

    index: int
    kind: str
    raw: str
    start: int
    end: int
    target: str
    group: int
    sentence_index: int | None
    section_index: int | None
    reference_index: int | None
    arxiv_id: str | None
    doi: str | None


@dataclass(frozen=True, slots=True)
class Reference(_Record):
    """An entry of the report's own reference list (``raw`` includes the
    marker, ``raw == text[start:end]``).  ``style``: bracketed (``[1] x``),
    numbered (``1. x``), footnote (``[^1]: x``), definition (``[1]: url``),
    link (an entry that starts with a markdown link), bullet or plain."""

    index: int
    section_index: int | None
    style: str
    number: int | None
    label: str | None
    raw: str
    start: int
    end: int
    title: str
    url: str | None
    arxiv_id: str | None
    doi: str | None


@dataclass(frozen=True, slots=True)
class ReportStats(_Record):
    """SurveyLens-style structural statistics (see ``stats.py`` for the
    exact definitions and where they deliberately differ)."""

    images: int
    tables: int
    equations: int
    inline_math: int
    paragraphs: int
    words: int
    sentences: int
    citations: int
    citation_groups: int
    resolved_citations: int
    references: int
    chars: int
    surveylens_sentences: int


@dataclass(frozen=True, slots=True)
class ParsedReport:
    text: str
    format: str
    outline: tuple[OutlineEntry, ...]
    sections: tuple[Section, ...]
    paragraphs: tuple[Paragraph, ...]
    sentences: tuple[Sentence, ...]
    citations: tuple[Citation, ...]
    references: tuple[Reference, ...]
    stats: ReportStats

    schema_version: ClassVar[int] = SCHEMA_VERSION
    _ITEM_TYPES: ClassVar[dict[str, type]] = {
        "outline": OutlineEntry,
        "sections": Section,
        "paragraphs": Paragraph,
        "sentences": Sentence,
        "citations": Citation,
        "references": Reference,
    }

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "format": self.format, "text": self.text}
        for name in self._ITEM_TYPES:
            out[name] = [item.to_dict() for item in getattr(self, name)]
        out["stats"] = self.stats.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParsedReport:
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise ValueError(f"unsupported parsed-report schema_version {version!r}")
        parts = {
            name: tuple(item_type.from_dict(item) for item in data[name])
            for name, item_type in cls._ITEM_TYPES.items()
        }
        return cls(
            text=data["text"],
            format=data["format"],
            stats=ReportStats.from_dict(data["stats"]),
            **parts,
        )
