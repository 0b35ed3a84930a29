"""Bibliography entries, deduplicated on DOI, then arXiv id, then normalized title."""

import re
from collections.abc import Sequence

from django.utils import timezone

from core.text import normalize_title

from ..models import BibEntry

_ARXIV_NEW = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")
_ARXIV_OLD = re.compile(r"\b([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?\b")
_DOI = re.compile(r"\b(10\.\d{4,9}/\S+)", re.IGNORECASE)

FILLABLE = ("authors", "year", "venue", "arxiv_id", "doi", "url", "abstract", "citation_count")


def clean_arxiv_id(value: str) -> str:
    """``arXiv:2301.01234v2`` or an arxiv.org URL → ``2301.01234``; '' when none is present."""
    if not value:
        return ""
    match = _ARXIV_NEW.search(value) or _ARXIV_OLD.search(value)
    return match.group(1) if match else ""


def clean_doi(value: str) -> str:
    if not value:
        return ""
    match = _DOI.search(value.strip())
    return match.group(1).rstrip(".,;").lower() if match else ""


def _entry_from(data: dict) -> BibEntry:
    title = " ".join((data.get("title") or "").split())
    return BibEntry(
        title=title,
        normalized_title=normalize_title(title)[:500],
        authors=data.get("authors") or "",
        year=data.get("year"),
        venue=(data.get("venue") or "")[:500],
        arxiv_id=clean_arxiv_id(data.get("arxiv_id") or ""),
        doi=clean_doi(data.get("doi") or ""),
        url=(data.get("url") or "")[:1000],
        abstract=data.get("abstract") or "",
        citation_count=data.get("citation_count"),
        extra=data.get("extra") or {},
    )


def _conflicting(entry: BibEntry, existing: BibEntry) -> bool:
    """Two records name different works when both carry a DOI, or both an arXiv id, that differ."""
    return bool(
        (entry.doi and existing.doi and entry.doi != existing.doi)
        or (entry.arxiv_id and existing.arxiv_id and entry.arxiv_id != existing.arxiv_id)
    )


def bib_entries_upsert(records: Sequence[dict], *, chunk_size: int = 500) -> list[BibEntry]:
    """Store bibliography records, reusing existing entries; returns one entry per record, in order.

    A record is a dict with ``title`` (required, non-empty after normalization) and any of
    ``authors, year, venue, arxiv_id, doi, url, abstract, citation_count, extra``. An
    existing entry gains the fields it lacked; a non-empty stored value is never
    overwritten. Records match by DOI, then arXiv id, then normalized title, but never an
    entry whose DOI or arXiv id differs from the record's. Runs in a bounded number of queries whatever the number of records.
    Callers validate records first (importers raise ``ImportFailed`` with the line).
    """
    incoming = [_entry_from(r) for r in records]
    for position, entry in enumerate(incoming):
        if not entry.normalized_title:
            raise ValueError(f"record {position + 1} has no usable title")

    by_doi: dict[str, BibEntry] = {}
    by_arxiv: dict[str, BibEntry] = {}
    by_title: dict[str, BibEntry] = {}

    def index(entry: BibEntry) -> None:
        if entry.doi:
            by_doi.setdefault(entry.doi, entry)
        if entry.arxiv_id:
            by_arxiv.setdefault(entry.arxiv_id, entry)
        by_title.setdefault(entry.normalized_title, entry)

    dois = list({e.doi for e in incoming if e.doi})
    arxiv_ids = list({e.arxiv_id for e in incoming if e.arxiv_id})
    titles = list({e.normalized_title for e in incoming})
    for field, values in (("doi", dois), ("arxiv_id", arxiv_ids), ("normalized_title", titles)):
        for start in range(0, len(values), chunk_size):
            for existing in BibEntry.objects.filter(**{f"{field}__in": values[start : start + chunk_size]}):
                index(existing)

    resolved: list[BibEntry] = []
    to_create: list[BibEntry] = []
    to_update: dict[int, BibEntry] = {}
    for entry in incoming:
        candidates = (
            by_doi.get(entry.doi) if entry.doi else None,
            by_arxiv.get(entry.arxiv_id) if entry.arxiv_id else None,
            by_title.get(entry.normalized_title),
        )
        match = next((c for c in candidates if c is not None and not _conflicting(entry, c)), None)
        if match is None:
            # An identifier already owned by another work stays on that work (a record with a
            # wrong DOI must not merge two papers); this record keeps it in ``extra`` for review.
            for name, owners in (("doi", by_doi), ("arxiv_id", by_arxiv)):
                value = getattr(entry, name)
                if value and owners.get(value) is not None:
                    entry.extra = {**entry.extra, f"conflicting_{name}": value}
                    setattr(entry, name, "")
            to_create.append(entry)
            index(entry)
            resolved.append(entry)
            continue
        changed = False
        for name in FILLABLE:
            new = getattr(entry, name)
            if new not in ("", None) and getattr(match, name) in ("", None):
                # An identifier already owned by another entry must not be copied (unique constraint).
                if name == "doi" and by_doi.get(new) not in (None, match):
                    continue
                if name == "arxiv_id" and by_arxiv.get(new) not in (None, match):
                    continue
                setattr(match, name, new)
                changed = True
        if changed:
            index(match)
            match.updated_at = timezone.now()  # bulk_update bypasses auto_now
            if match.pk:
                to_update[match.pk] = match
        resolved.append(match)

    BibEntry.objects.bulk_create(to_create, batch_size=chunk_size)
    if to_update:
        BibEntry.objects.bulk_update(list(to_update.values()), [*FILLABLE, "updated_at"], batch_size=chunk_size)
    return resolved
