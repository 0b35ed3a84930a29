"""What a ReportBench report cites, resolved to text a judge can read: the report's parsed
reference list, the task's gold bibliography, and ``SourceResolver``, which finds a cited
statement's source text (paper §3.2) among stored data (and the web only through a configured
``SOURCE_FETCHER``). Used by the ReportBench pipeline, DeepScholar's document step and the
judged-input views."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from benchmark.models import BibEntry, GoldReference, ReviewStatus
from benchmark.parsing import parse_report
from benchmark.services.reports import report_parsed
from core.outbound import AddressRefused
from scoring.metrics import match_references, normalize_arxiv_id, normalize_doi, normalize_title, normalize_url
from scoring.sources import fetched_entry

from .base import fingerprint

logger = logging.getLogger(__name__)

SOURCE_NOT_AVAILABLE = "source not available"
SOURCE_TEXT_FIELDS = ("text", "content", "abstract", "snippet", "body")

_NUMBERS = re.compile(r"\d{1,4}(?:\s*[\u2013-]\s*\d{1,4})?")
_AUTHOR_YEAR = re.compile(r"([A-Z][A-Za-z'\-]+)(?: et al\.?| and [A-Z][A-Za-z'\-]+)?,? ((?:19|20)\d{2})")


def reference_dict(title="", url="", arxiv_id="", doi="") -> dict[str, str]:
    """A reference as the matcher reads it (``scoring.metrics.match_references``)."""
    return {"title": title or "", "url": url or "", "arxiv_id": arxiv_id or "", "doi": doi or ""}


def gold_references(task) -> list[dict]:
    """The task's gold references that count (not rejected), as reference dicts with their BibEntry id."""
    rows = (
        GoldReference.objects.filter(task=task)
        .exclude(review_status=ReviewStatus.REJECTED)
        .select_related("bib_entry")
        .order_by("position", "id")
    )
    out = []
    for gold in rows:
        bib = gold.bib_entry
        out.append({**reference_dict(bib.title, bib.url, bib.arxiv_id, bib.doi), "bib_entry": bib.id})
    return out


def parsed_report(report):
    """The stored parse; a report stored without one (e.g. built directly) is parsed here, no judge involved.
    A stored parse that cannot be read (an older schema, a damaged row) is parsed again, with a warning."""
    if report.parsed:
        try:
            return report_parsed(report)
        except (KeyError, ValueError, TypeError) as exc:
            logger.warning("report %s: its stored parse cannot be read (%s: %s); parsing its text again",
                           report.pk, type(exc).__name__, exc)
    return parse_report(report.text, format=report.format)


def parsed_references(report) -> list:
    return list(parsed_report(report).references)


def source_not_available(refusals: Sequence[str] = ()) -> str:
    """The error of a verdict without source text, naming any address the server refused to fetch."""
    return SOURCE_NOT_AVAILABLE + (f" ({'; '.join(dict.fromkeys(refusals))})" if refusals else "")


def cited_passage(sources: Sequence[dict]) -> str:
    """What the consistency judge reads for a cited statement: each source's title and text."""
    return "\n\n".join(f"{s['title']}\n{s['text']}".strip() for s in sources)


class SourceResolver:
    """Resolves a cited statement's citations to stored source text: the report's reference list
    (by number, URL, arXiv id, DOI or author-year), then the BibEntry it names (gold references
    first, then any stored entry with the same DOI, arXiv id or title) for its abstract, else a
    ``Report.sources`` document with the same URL or title for its text; the web only through a
    configured ``SOURCE_FETCHER``."""

    def __init__(self, report, *, fetch: bool = True) -> None:
        self.report = report
        self.fetch = fetch  # False: stored data only (a page showing what a run already asked)
        self.references = parsed_references(report)
        self.gold = gold_references(report.task)
        self.sources = [s for s in (report.sources or []) if isinstance(s, dict)]
        self._bib_cache: dict[str, BibEntry | None] = {}
        self.refused: dict[str, str] = {}  # URL -> why the server would not fetch it (core.outbound)
        self.last_refused: list[str] = []  # the refusals of the last ``sources_for`` call

    def sources_for(self, citations: Sequence[str]) -> list[dict]:
        out, seen = [], set()
        self.last_refused = []
        for citation in citations:
            for ref in self._references_for(str(citation)):
                source = self._text_for(ref)
                if source and (source["title"], source["text"]) not in seen:
                    seen.add((source["title"], source["text"]))
                    out.append(source)
        return out

    def _references_for(self, citation: str) -> list[dict]:
        text = citation.strip()
        by_parse = [reference_dict(r.title, r.url, r.arxiv_id, r.doi) | {"raw": r.raw} for r in self.references]
        if re.match(r"^https?://", text) or text.lower().startswith(("doi:", "arxiv:")) or re.match(r"^10\.\d", text):
            probe = reference_dict(url=text if text.startswith("http") else "",
                              doi=text if not text.startswith("http") and "arxiv" not in text.lower() else "",
                              arxiv_id=text if text.lower().startswith("arxiv:") else "")
            hits = [by_parse[i] for i, _ in match_references(
                [probe], [{k: r[k] for k in ("title", "url", "arxiv_id", "doi")} for r in by_parse], fuzzy_threshold=1.0
            )] if by_parse else []
            return hits or [probe]
        numbers = self._numbers(text)
        if numbers:
            return [
                by_parse[i] for i, r in enumerate(self.references)
                if (r.number in numbers) or (r.label is not None and r.label.strip("[]^") in {str(n) for n in numbers})
            ]
        hits = []
        for surname, year in _AUTHOR_YEAR.findall(text):
            hits.extend(r for r in by_parse if surname in r["raw"] and year in r["raw"])
        return hits

    @staticmethod
    def _numbers(text: str) -> set[int]:
        inner = text.strip().strip("[]^")
        if not re.fullmatch(r"[\d\s,;\u2013-]+", inner or "x"):
            return set()
        numbers: set[int] = set()
        for part in _NUMBERS.findall(inner):
            bounds = [int(x) for x in re.split(r"\s*[\u2013-]\s*", part)]
            if len(bounds) == 2 and 0 <= bounds[1] - bounds[0] <= 200:
                numbers.update(range(bounds[0], bounds[1] + 1))
            else:
                numbers.add(bounds[0])
        return numbers

    def _text_for(self, ref: dict) -> dict | None:
        bib = self._bib_entry(ref)
        if bib is not None and bib.abstract.strip():
            return {"title": bib.title, "text": bib.abstract.strip(), "from": "bib_entry", "bib_entry": bib.id}
        document = self._document(ref, bib)
        if document is not None or not self.fetch:
            return document
        url = ref.get("url") or (bib.url if bib else "")
        if url in self.refused:
            self.last_refused.append(self.refused[url])
            return None
        try:
            fetched = fetched_entry(url=url, title=ref.get("title", ""), entry=bib)
        except AddressRefused as refusal:
            logger.warning("not fetching %s: %s", url, refusal)
            self.refused[url] = f"{url[:200]} not fetched: {refusal}"
            self.last_refused.append(self.refused[url])
            return None
        if fetched is not None:
            return {"title": fetched.title, "text": fetched.abstract, "from": "fetcher", "bib_entry": fetched.id}
        return None

    def _bib_entry(self, ref: dict) -> BibEntry | None:
        probe = {k: ref.get(k, "") for k in ("title", "url", "arxiv_id", "doi")}
        cache_key = fingerprint(probe)
        if cache_key in self._bib_cache:
            return self._bib_cache[cache_key]
        bib = None
        gold = [{k: g[k] for k in ("title", "url", "arxiv_id", "doi")} for g in self.gold]
        pairs = match_references([probe], gold) if gold else []
        if pairs:
            bib = BibEntry.objects.filter(id=self.gold[pairs[0][1]]["bib_entry"]).first()
        if bib is None:
            doi = normalize_doi(probe["doi"]) if probe["doi"] else ""
            arxiv = normalize_arxiv_id(probe["arxiv_id"] or probe["url"]) if (
                probe["arxiv_id"] or "arxiv.org" in probe["url"]) else ""
            title = normalize_title(probe["title"]) if probe["title"] else ""
            query = BibEntry.objects.exclude(abstract="")
            if doi:
                bib = query.filter(doi__iexact=doi).first()
            if bib is None and arxiv:
                bib = query.filter(arxiv_id__iexact=arxiv).first()
            if bib is None and title:
                bib = query.filter(normalized_title=title[:500]).first()
        self._bib_cache[cache_key] = bib
        return bib

    def _document(self, ref: dict, bib: BibEntry | None) -> dict | None:
        urls = {normalize_url(u) for u in (ref.get("url"), bib.url if bib else "") if u}
        titles = {normalize_title(t) for t in (ref.get("title"), bib.title if bib else "") if t}
        titles.discard("")
        for doc in self.sources:
            url = doc.get("url")
            title = doc.get("title")
            if (isinstance(url, str) and url and normalize_url(url) in urls) or (
                isinstance(title, str) and title and normalize_title(title) in titles
            ):
                text = next((doc[f] for f in SOURCE_TEXT_FIELDS if isinstance(doc.get(f), str) and doc[f].strip()), "")
                if text:
                    return {"title": str(title or ""), "text": text.strip(), "from": "report_sources",
                            "url": str(url or "")}
        return None
