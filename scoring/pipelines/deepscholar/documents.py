"""The works a DeepScholar report cites and its claim sentences, read from stored data only.

The report's documents S are every distinct work it cites inline or lists in its reference list;
a work is found in the report's ``Report.sources`` or the stored bibliography (never the web). A
document without stored text gets the verdict error "source not available", never a call.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from benchmark.models import BibEntry
from benchmark.services.bibliography import clean_arxiv_id, clean_doi
from scoring.metrics import normalize_title, normalize_url
from scoring.models import Verdict
from scoring.sources import citation_count

from ..report_sources import SOURCE_NOT_AVAILABLE, SOURCE_TEXT_FIELDS, parsed_report
from ..verdicts import upsert_verdicts, verdict_fields

CLAIM_MIN_CHARS = 50  # shorter sentences (headings, fragments) make no claim, as in the released code
COUNT_FIELDS = ("citation_count", "cited_by_count", "citations", "num_citations")
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\\?\[\s*\\?\]")  # what a removed "([x](url))" or "\\[[x](url)\\]" leaves


def work_ids(title: str = "", url: str = "", arxiv_id: str = "", doi: str = "") -> dict[str, str]:
    return {"title": title or "", "url": url or "", "arxiv_id": arxiv_id or "", "doi": doi or ""}


@dataclass(frozen=True)
class Document:
    """A work the report cites, as far as stored data tells."""

    key: str  # identity: arxiv:…, doi:…, url:…, title:… (hashed when long), or unresolved:…
    title: str = ""
    url: str = ""
    arxiv_id: str = ""
    doi: str = ""
    text: str = ""  # the Report.sources snippet, else the BibEntry abstract; "" when neither is stored
    origin: str = ""  # report_sources / bib_entry / ""
    bib_entry: int | None = None
    citation_count: int | None = None

    @property
    def resolved(self) -> bool:
        return not self.key.startswith("unresolved:")

    def as_source(self) -> str:
        return f"Title: {self.title}\n{self.text}".strip() if self.title else self.text

    def describe(self) -> dict:
        return {"key": self.key, "title": self.title, "url": self.url, "arxiv_id": self.arxiv_id, "doi": self.doi,
                "from": self.origin, "bib_entry": self.bib_entry}


def _short(kind: str, value: str) -> str:
    return f"{kind}:{value}" if len(value) <= 120 else f"{kind}:{hashlib.sha256(value.encode()).hexdigest()[:24]}"


@dataclass(frozen=True)
class ClaimSentence:
    index: int  # the parsed sentence's index (window positions count every parsed sentence)
    text: str  # without its citation markers
    documents: tuple[str, ...]  # keys of the documents it cites, in order


@dataclass
class ReportCitations:
    sentence_count: int
    claims: list[ClaimSentence]
    cited_by_sentence: dict[int, tuple[str, ...]]  # every sentence's cited document keys (claim or not)
    documents: dict[str, Document]  # every document a citation or the reference list names
    retrieved: list[str]  # S: distinct resolved documents, in order of first mention


class DocumentResolver:
    """Finds a cited work in the report's stored sources and the stored bibliography (never the web)."""

    def __init__(self, report) -> None:
        self.sources = [s for s in (report.sources or []) if isinstance(s, dict)]
        self.by_index: dict[int, dict] = {}
        self.by_arxiv: dict[str, dict] = {}
        self.by_url: dict[str, dict] = {}
        self.by_title: dict[str, dict] = {}
        for doc in self.sources:
            index = doc.get("index")
            if isinstance(index, int) and not isinstance(index, bool):
                self.by_index.setdefault(index, doc)
            url = doc.get("url") if isinstance(doc.get("url"), str) else ""
            arxiv = clean_arxiv_id(url) or clean_arxiv_id(str(doc.get("id") or ""))
            if arxiv:
                self.by_arxiv.setdefault(arxiv.lower(), doc)
            if url:
                self.by_url.setdefault(normalize_url(url), doc)
            title = doc.get("title") if isinstance(doc.get("title"), str) else ""
            if title and normalize_title(title):
                self.by_title.setdefault(normalize_title(title), doc)
        self._entries: dict[str, dict[str, BibEntry]] = {"arxiv": {}, "doi": {}, "title": {}}

    def prefetch(self, probes: Sequence[dict]) -> None:
        """Load the bibliography entries these probes may name in one query."""
        arxiv = {p["arxiv_id"] for p in probes if p["arxiv_id"]}
        dois = {p["doi"] for p in probes if p["doi"]}
        titles = {normalize_title(p["title"])[:500] for p in probes if p["title"] and normalize_title(p["title"])}
        if not (arxiv or dois or titles):
            return
        rows = list(BibEntry.objects.filter(
            Q(arxiv_id__in=arxiv) | Q(doi__in=dois) | Q(normalized_title__in=titles)
        ).only("id", "title", "normalized_title", "arxiv_id", "doi", "url", "abstract", "citation_count"))
        for b in rows:
            if b.arxiv_id:
                self._entries["arxiv"].setdefault(b.arxiv_id.lower(), b)
            if b.doi:
                self._entries["doi"].setdefault(b.doi.lower(), b)
            self._entries["title"].setdefault(b.normalized_title, b)

    def _bib_entry(self, probe: dict) -> BibEntry | None:
        """The stored entry a probe names (among those :meth:`prefetch` loaded)."""
        entries = self._entries
        title = normalize_title(probe["title"])[:500] if probe["title"] else ""
        return (entries["arxiv"].get(probe["arxiv_id"].lower()) if probe["arxiv_id"] else None) or (
            entries["doi"].get(probe["doi"].lower()) if probe["doi"] else None) or (
            entries["title"].get(title) if title else None)

    def source_for(self, probe: dict, *, number: int | None = None) -> dict | None:
        if number is not None and number in self.by_index:
            return self.by_index[number]
        if probe["arxiv_id"] and probe["arxiv_id"].lower() in self.by_arxiv:
            return self.by_arxiv[probe["arxiv_id"].lower()]
        if probe["url"] and normalize_url(probe["url"]) in self.by_url:
            return self.by_url[normalize_url(probe["url"])]
        title = normalize_title(probe["title"]) if probe["title"] else ""
        return self.by_title.get(title) if title else None

    def locate(self, probe: dict, *, number: int | None = None) -> tuple[dict, dict | None]:
        """The probe completed from the matching ``Report.sources`` document (the work as the system
        itself saw it), and that document."""
        source = self.source_for(probe, number=number)
        if source is None:
            return probe, None
        url = source.get("url") if isinstance(source.get("url"), str) else ""
        return work_ids(
            title=str(source.get("title") or probe["title"]), url=url or probe["url"],
            arxiv_id=clean_arxiv_id(url) or clean_arxiv_id(str(source.get("id") or "")) or probe["arxiv_id"],
            doi=clean_doi(str(source.get("doi") or "")) or probe["doi"],
        ), source

    def document(self, probe: dict, source: dict | None) -> Document:
        """The work a located probe names, with its stored text, citation count and identity."""
        bib = self._bib_entry(probe)
        if bib is not None:
            probe = work_ids(title=probe["title"] or bib.title, url=probe["url"] or bib.url,
                         arxiv_id=probe["arxiv_id"] or bib.arxiv_id, doi=probe["doi"] or bib.doi)
        text, origin = "", ""
        if source is not None:
            text = next((source[f].strip() for f in SOURCE_TEXT_FIELDS
                         if isinstance(source.get(f), str) and source[f].strip()), "")
            origin = "report_sources" if text else ""
        if not text and bib is not None and bib.abstract.strip():
            text, origin = bib.abstract.strip(), "bib_entry"
        count = citation_count(bib) if bib is not None else None
        if count is None and source is not None:
            count = next((source[f] for f in COUNT_FIELDS
                          if isinstance(source.get(f), int) and not isinstance(source.get(f), bool) and source[f] >= 0),
                         None)
        if probe["arxiv_id"]:
            key = f"arxiv:{probe['arxiv_id'].lower()}"
        elif probe["doi"]:
            key = _short("doi", probe["doi"].lower())
        elif probe["url"]:
            key = _short("url", normalize_url(probe["url"]))
        elif probe["title"] and normalize_title(probe["title"]):
            key = _short("title", normalize_title(probe["title"]))
        else:
            key = ""
        return Document(key=key, title=probe["title"], url=probe["url"], arxiv_id=probe["arxiv_id"], doi=probe["doi"],
                        text=text, origin=origin, bib_entry=bib.id if bib is not None else None, citation_count=count)


def report_citations(report) -> ReportCitations:
    """The report's claim sentences, what each cites, and its document set S — from the stored parse."""
    parsed = parsed_report(report)
    resolver = DocumentResolver(report)
    references = list(parsed.references)

    def probe_of_reference(ref) -> dict:
        return work_ids(ref.title, ref.url or "", (ref.arxiv_id or "") or clean_arxiv_id(ref.url or ""), ref.doi or "")

    def probe_of_citation(cit) -> tuple[dict | None, int | None]:
        number = int(cit.target) if cit.kind == "numeric" and cit.target.isdigit() else None
        if number is not None and number in resolver.by_index:
            return work_ids(), number
        if cit.reference_index is not None and 0 <= cit.reference_index < len(references):
            return probe_of_reference(references[cit.reference_index]), None
        if cit.kind in ("link", "url", "arxiv", "doi"):
            url = cit.target if cit.kind in ("link", "url") else ""
            return work_ids(url=url, arxiv_id=cit.arxiv_id or clean_arxiv_id(url), doi=cit.doi or ""), None
        return None, None

    cited = []
    for cit in parsed.citations:
        if cit.sentence_index is not None:
            probe, number = probe_of_citation(cit)
            cited.append((cit, resolver.locate(probe, number=number) if probe is not None else None))
    listed = [resolver.locate(probe_of_reference(r), number=r.number if r.number in resolver.by_index else None)
              for r in references]
    resolver.prefetch([located[0] for _, located in cited if located] + [probe for probe, _ in listed])

    documents: dict[str, Document] = {}
    retrieved: list[str] = []

    def add(doc: Document) -> str:
        if doc.key not in documents or (doc.text and not documents[doc.key].text):
            documents[doc.key] = doc
        if doc.resolved and doc.key not in retrieved:
            retrieved.append(doc.key)
        return doc.key

    per_sentence: dict[int, list[str]] = defaultdict(list)
    for cit, located in cited:
        doc = resolver.document(*located) if located is not None else None
        if doc is None or not doc.key:
            doc = Document(key=_short("unresolved", f"{cit.kind}:{cit.target}"), title=cit.raw)
        key = add(doc)
        if key not in per_sentence[cit.sentence_index]:
            per_sentence[cit.sentence_index].append(key)
    for located in listed:
        doc = resolver.document(*located)
        if doc.key:
            add(doc)

    claims = []
    for sentence in parsed.sentences:
        spans = sorted((c.start, c.end) for c in parsed.citations if c.sentence_index == sentence.index)
        text, cursor = [], sentence.start
        for start, end in spans:
            if start >= cursor:
                text.append(parsed.text[cursor:start])
                cursor = end
        text.append(parsed.text[cursor:sentence.end])
        claim = " ".join(_EMPTY_BRACKETS.sub("", "".join(text)).split()).replace(" .", ".").replace(" ,", ",")
        if len(claim) >= CLAIM_MIN_CHARS:
            claims.append(ClaimSentence(sentence.index, claim, tuple(per_sentence.get(sentence.index, ()))))
    return ReportCitations(
        sentence_count=len(parsed.sentences), claims=claims,
        cited_by_sentence={i: tuple(keys) for i, keys in per_sentence.items()},
        documents=documents, retrieved=retrieved,
    )


def store_unavailable(run, report, *, step: str, kind: str, items: list[tuple[int, str, str, dict]], labels) -> None:
    """Verdicts with the error "source not available" (no call) for (target_id, key, input_hash, extra)."""
    if not items:
        return
    rows = [
        Verdict(**verdict_fields(run, report, step=step, kind=kind, target_id=target_id, key=key),
                error=SOURCE_NOT_AVAILABLE, raw_response={"input_hash": input_hash, **extra})
        for target_id, key, input_hash, extra in items
    ]
    with transaction.atomic():
        upsert_verdicts(rows, run=run, report=report, labels=labels)
