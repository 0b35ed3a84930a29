"""DeepScholar-bench (paper §4, App. 8.3–8.4, Table 2): seven metrics and their geometric mean.

One job step per judge step; each stores one verdict per judged target and reuses every
finished verdict on the same question (``raw_response["input_hash"]``), so a second run of
the same configuration makes no call.

``deepscholar.organization`` (target_kind ``organization``, target_key ``report_first`` /
``report_second``, ``repeat`` 0..k-1 for ``JudgeConfig.repeats`` = k)
    The report and the task's exemplar (the human-written related-work section,
    ``Survey.full_text``) are compared twice, the report once as A and once as B, "to avoid
    position bias" (§8.3.1). Each order is its own comparison, labelled from the report's
    side: win, tie or loss. A win counts 1 and a tie ½ — the paper reports "a win rate
    including ties" (§8.6.1), which is :func:`win_rate`; so a report counts as better only as
    far as it wins in both orders, and a preference that flips with the order is worth ½,
    like a tie (the exemplar against itself scores .500, Table 2).

``deepscholar.nugget_support`` (``nugget``, target_id the nugget)
    The task's nuggets that are not rejected, in batches of ``options["nugget_batch_size"]``
    (10, as in AutoNuggetizer) per call; labels support / partial_support / not_support.
    Scores (:func:`nugget_coverage`): ``nugget_coverage`` is the paper's reported strict-all
    score; ``nugget_coverage_all`` (partial = ½), ``nugget_coverage_strict_vital`` and
    ``nugget_coverage_vital`` the other modes. No nugget → ``None`` and a note (nuggets come
    from the import or from the ``propose`` command).

The report's documents S: every distinct work it cites inline or lists in its reference
list ("any valid ArXiv links found within the report", §8.6.1, not only arXiv ones). A
numeric citation takes the ``Report.sources`` entry with that ``index`` (STORM's unified
index) when the sources carry one, else the parsed reference list entry; a work is
identified by arXiv id, DOI, URL or title and read from stored data only: its
``Report.sources`` document (the snippet the system itself used) or the ``BibEntry``
abstract. A document without stored text gets the verdict error "source not available",
never a call.

``deepscholar.relevance`` (``cited_document``, target_key the document's identity)
    Graded 0/1/2; ``relevance_rate`` = Σ grade / 2|S| (:func:`relevance_rate`).

``deepscholar.reference_importance`` (``gold_reference``, target_id the GoldReference)
    Whether each exemplar reference (not rejected) is important. Importance belongs to the
    task, not to the report: it is asked once per task and configuration — a finished verdict
    on the same question stored for another report of the task is copied (no call, no cost,
    ``raw_response["copied_from"]``), and the asking is serialised per task (a PostgreSQL
    advisory lock) so reports judged in parallel do not ask twice. A reference an expert has
    settled (review status accepted or edited) keeps its curated ``important`` flag and is
    not asked; so does an imported reference of a task whose release labelled importance
    (DeepScholar-bench's ``important_citations.csv``, :func:`importance_known`). The reference
    is shown by its metadata and abstract, when stored.
    ``reference_coverage`` = |cited ∩ E| / |E| over the references whose importance is known
    (:func:`reference_coverage`), a cited work matching an exemplar reference by identifier or
    title (:func:`match_references`).

Document importance (no judge)
    DI = min(median cites(S) / median cites(S*), 1) (:func:`document_importance`) with S* all
    the exemplar's references; counts come from ``BibEntry.citation_count`` or a count field of
    the ``Report.sources`` document. Works without a count are left out; ``None`` when no
    work of S or of S* has one.

``deepscholar.citation_support`` (``citation_pair``, target_key ``<sentence>:<document>``)
    Claim sentences are the parsed sentences with at least 50 characters once their citation
    markers are removed (the released code's cut-off). Each (sentence, cited document) pair is
    one call. ``citation_precision`` averages over the citations of the claim sentences
    (:func:`citation_precision`). Claim coverage (:func:`claim_coverage`): sentence i is
    covered at window w when a document cited by a sentence within ±w supports it, or the
    query context does — the paper treats the paper's title and abstract as "an implicitly
    cited reference for each sentence", asked once per sentence (target_key ``<i>:query``).
    So every pair within ±``options["claim_max_window"]`` (5, Fig. 5's range) is asked, and
    ``claim_coverage_by_window`` = {"0": …, "5": …}; ``claim_coverage`` is the value at
    ``options["claim_window"]`` (1, the paper's main results). A pair is judged one document
    at a time, so support that needs two documents together is not credited (a lower bound).
    The step's prompt asks whether the source backs every claim, also for precision, where
    the paper credits support of one claim: precision is as strict as coverage here.

``geometric_mean``
    Table 2's aggregate: the geometric mean of a system's seven metric *means* (how Table 2's
    "Geo. Mean" column follows from its other columns), never a mean of report-level
    geometric means; a 0 anywhere makes it 0, as the formula does. The systems of a run are
    compared over one common set of metrics (:func:`geometric_means_over_common`, in
    ``compare_systems``): a metric undefined for any of them (e.g. document importance without
    citation counts) is left out for all, and ``geometric_mean_over`` names the metrics used
    — the paper likewise leaves metrics out for the human exemplars (Table 2, note 1). A
    report's own ``geometric_mean`` is given only when all seven are defined (else ``None``):
    dropping undefined metrics per report would let a report with two metrics outrank one
    with seven. The leaderboard computes the same aggregate from its own system means.

Failed items (judge errors, malformed answers, documents without text) are counted in
``items_failed`` and left out of every metric, never counted as zeros; a verdict counts only
while its fingerprint matches the current question (a changed report is judged again).
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from django.db.models import Q

from benchmark.models import BibEntry, GoldReference, Nugget, Origin, ReviewStatus, Task
from benchmark.services.bibliography import clean_arxiv_id, clean_doi
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.metrics import (
    citation_precision,
    claim_coverage,
    document_importance,
    geometric_mean,
    geometric_means_over_common,
    TABLE2_METRICS,
    VARIANTS,
    match_references,
    normalize_title,
    normalize_url,
    nugget_coverage,
    reference_coverage,
    relevance_rate,
    win_rate,
)
from scoring.models import Verdict
from scoring.sources import citation_count

from .base import BasePipeline, fingerprint, record_answer, variant_option
from .reportbench import SOURCE_NOT_AVAILABLE, SOURCE_TEXT_FIELDS, parsed_report
from .verdicts import (
    RAW_TEXT_LIMIT,
    Decision,
    Pending,
    answer_error,
    answered_in_chunks,
    ask_one_each,
    cost_share,
    reusable,
    stored_verdicts,
    upsert_verdicts,
    verdict_fields,
)

ORGANIZATION = "deepscholar.organization"
NUGGETS = "deepscholar.nugget_support"
RELEVANCE = "deepscholar.relevance"
IMPORTANCE = "deepscholar.reference_importance"
CITATIONS = "deepscholar.citation_support"
STEPS = [ORGANIZATION, NUGGETS, RELEVANCE, IMPORTANCE, CITATIONS]

ORGANIZATION_KIND = "organization"
NUGGET_KIND = "nugget"
DOCUMENT_KIND = "cited_document"
IMPORTANCE_KIND = "gold_reference"
PAIR_KIND = "citation_pair"
KINDS = [ORGANIZATION_KIND, NUGGET_KIND, DOCUMENT_KIND, IMPORTANCE_KIND, PAIR_KIND]

OUTCOME_LABELS = {"win": 1.0, "tie": 0.5, "loss": 0.0}
NUGGET_LABELS = {"support": 2.0, "partial_support": 1.0, "not_support": 0.0}
GRADE_LABELS = {"0": 0.0, "1": 1.0, "2": 2.0}
IMPORTANCE_LABELS = {"important": 1.0, "not_important": 0.0}
SUPPORT_LABELS = {"support": 1.0, "not_support": 0.0}

REPORT_FIRST, REPORT_SECOND = "report_first", "report_second"
QUERY_SOURCE = "query"
CLAIM_MIN_CHARS = 50  # shorter sentences (headings, fragments) make no claim, as in the released code
DEFAULT_NUGGET_BATCH = 10
DEFAULT_CLAIM_WINDOW = 1
DEFAULT_MAX_WINDOW = 5
COUNT_FIELDS = ("citation_count", "cited_by_count", "citations", "num_citations")
SETTLED_IMPORTANCE = (ReviewStatus.ACCEPTED, ReviewStatus.EDITED)
METRIC_KEYS = TABLE2_METRICS
NO_NUGGETS = ("the task has no nuggets: import them or create them with the propose command "
              "(deepscholar.nuggetize), then rescore")
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\\?\[\s*\\?\]")  # what a removed "([x](url))" or "\\[[x](url)\\]" leaves
_LOCK_NAMESPACE = 0x05D5  # pg_advisory_lock(int, int): a key space of its own, apart from the run jobs' bigint keys


# --- options ---------------------------------------------------------------------------------------------------


def _option(config, name: str, default: int, low: int) -> int:
    """A non-negative integer option of the judge configuration; a bad value is an error naming it."""
    value = (getattr(config, "options", None) or {}).get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"judge configuration option {name!r} must be an integer >= {low}; got {value!r}")
    return value


def claim_windows(config) -> tuple[int, int]:
    """(the reported window w, the largest window asked for) from the configuration's options."""
    window = _option(config, "claim_window", DEFAULT_CLAIM_WINDOW, 0)
    largest = max(window, _option(config, "claim_max_window", DEFAULT_MAX_WINDOW, 0))
    return window, largest


# --- what a task and a report hold ------------------------------------------------------------------------------


def query_text(task) -> str:
    """The paper the related work is written for: its title and abstract (the benchmark's query)."""
    survey = task.survey
    if survey.abstract.strip():
        return f"{survey.title}\n\n{survey.abstract.strip()}".strip()
    prompt = task.prompts.exclude(review_status=ReviewStatus.REJECTED).order_by("level").first()
    return prompt.text if prompt else survey.title


def exemplar_text(task) -> str:
    return (task.survey.full_text or "").strip()


def counted_nuggets(task) -> list[Nugget]:
    nuggets = Nugget.objects.filter(task=task).exclude(review_status=ReviewStatus.REJECTED)
    return list(nuggets.order_by("position", "id"))


def importance_known(ref: GoldReference, task: Task) -> bool:
    """Whether a reference's ``important`` flag is used as it is, not asked of the judge: an
    expert settled it, or the task's release labelled its references (``Task.RELEASED_IMPORTANCE``,
    the benchmark's own judge labels) and nobody has changed the imported flag since."""
    if ref.review_status in SETTLED_IMPORTANCE:
        return True
    released = bool((task.extra or {}).get(Task.RELEASED_IMPORTANCE))
    return released and ref.origin == Origin.IMPORT and ref.review_status == ReviewStatus.PROPOSED


def counted_references(task) -> list[GoldReference]:
    return list(
        GoldReference.objects.filter(task=task).exclude(review_status=ReviewStatus.REJECTED)
        .select_related("bib_entry").order_by("position", "id")
    )


def reference_document(bib: BibEntry) -> str:
    """How an exemplar reference is shown to the importance judge: its metadata and, when stored, abstract."""
    head = " ".join(part for part in (bib.title, f"({bib.year})" if bib.year else "") if part)
    lines = [head, bib.authors.strip(), bib.venue.strip(), bib.abstract.strip()]
    return "\n".join(line for line in lines if line)


def _ids(title: str = "", url: str = "", arxiv_id: str = "", doi: str = "") -> dict[str, str]:
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
        return _ids(
            title=str(source.get("title") or probe["title"]), url=url or probe["url"],
            arxiv_id=clean_arxiv_id(url) or clean_arxiv_id(str(source.get("id") or "")) or probe["arxiv_id"],
            doi=clean_doi(str(source.get("doi") or "")) or probe["doi"],
        ), source

    def document(self, probe: dict, source: dict | None) -> Document:
        """The work a located probe names, with its stored text, citation count and identity."""
        bib = self._bib_entry(probe)
        if bib is not None:
            probe = _ids(title=probe["title"] or bib.title, url=probe["url"] or bib.url,
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
        return _ids(ref.title, ref.url or "", (ref.arxiv_id or "") or clean_arxiv_id(ref.url or ""), ref.doi or "")

    def probe_of_citation(cit) -> tuple[dict | None, int | None]:
        number = int(cit.target) if cit.kind == "numeric" and cit.target.isdigit() else None
        if number is not None and number in resolver.by_index:
            return _ids(), number
        if cit.reference_index is not None and 0 <= cit.reference_index < len(references):
            return probe_of_reference(references[cit.reference_index]), None
        if cit.kind in ("link", "url", "arxiv", "doi"):
            url = cit.target if cit.kind in ("link", "url") else ""
            return _ids(url=url, arxiv_id=cit.arxiv_id or clean_arxiv_id(url), doi=cit.doi or ""), None
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


def organization_variables(report, order: str, *, query: str, exemplar: str) -> dict:
    """The organization question in one order: the report as A (``report_first``) or as B."""
    a, b = (report.text, exemplar) if order == REPORT_FIRST else (exemplar, report.text)
    return {"query": query, "report_a": a, "report_b": b}


@dataclass(frozen=True)
class PairQuestion:
    key: str  # "<sentence index>:<document key>" or "<sentence index>:query"
    sentence: int
    document: str  # a document key, or QUERY_SOURCE
    claim: str
    source: str  # "" when the document has no stored text

    @property
    def input_hash(self) -> str:
        return fingerprint(self.claim, self.source)


def pair_questions(citations: ReportCitations, query: str, largest_window: int) -> list[PairQuestion]:
    """Every (claim sentence, document) pair the metrics need: the documents cited within
    ±``largest_window`` sentences of each claim, plus the query context once per claim."""
    out = []
    for claim in citations.claims:
        keys: list[str] = []
        for j in range(claim.index - largest_window, claim.index + largest_window + 1):
            for key in citations.cited_by_sentence.get(j, ()):
                if key not in keys:
                    keys.append(key)
        for key in keys:
            out.append(PairQuestion(f"{claim.index}:{key}", claim.index, key, claim.text,
                                    citations.documents[key].as_source() if citations.documents[key].text else ""))
        out.append(PairQuestion(f"{claim.index}:{QUERY_SOURCE}", claim.index, QUERY_SOURCE, claim.text, query))
    return out


# --- asking -----------------------------------------------------------------------------------------------------


def _decide_outcome(report_as: str):
    """Read an organization answer from the report's side (it was A, or B)."""
    def decide(data: Mapping) -> Decision:
        winner = str(data.get("winner", "")).strip()
        if winner not in ("A", "B", "tie"):
            return Decision(error=f"malformed answer: unknown winner {data.get('winner')!r}")
        label = "tie" if winner == "tie" else ("win" if winner == report_as else "loss")
        return Decision(label=label, score=OUTCOME_LABELS[label], rationale=str(data.get("rationale") or ""))
    return decide


def _decide_grade(data: Mapping) -> Decision:
    grade = data.get("grade")
    if isinstance(grade, bool) or grade not in (0, 1, 2):
        return Decision(error=f"malformed answer: grade must be 0, 1 or 2, got {grade!r}")
    return Decision(label=str(int(grade)), score=float(grade), rationale=str(data.get("rationale") or ""))


def _decide_importance(data: Mapping) -> Decision:
    important = data.get("important")
    if not isinstance(important, bool):
        return Decision(error=f"malformed answer: 'important' must be true or false, got {important!r}")
    label = "important" if important else "not_important"
    return Decision(label=label, score=IMPORTANCE_LABELS[label])


def parse_nugget_answer(answer: JudgeAnswer, ids: Sequence[int]) -> dict[int, Decision]:
    """Per requested nugget id its label, or why there is none: every id answered exactly once
    with a known label; ids that were not asked about are ignored."""
    if not answer.ok:
        return {i: Decision(error=answer_error(answer)) for i in ids}
    entries = answer.data.get("labels") if isinstance(answer.data, dict) else None
    if not isinstance(entries, list):
        return {i: Decision(error="malformed answer: no 'labels' list") for i in ids}
    found: dict[int, list[dict]] = defaultdict(list)
    for entry in entries:
        if isinstance(entry, dict) and not isinstance(entry.get("id"), bool):
            try:
                found[int(entry.get("id"))].append(entry)
            except (TypeError, ValueError):
                continue
    out = {}
    for i in ids:
        hits = found.get(i, [])
        if len(hits) != 1:
            out[i] = Decision(error="malformed answer: nugget missing from the judge's answer" if not hits
                              else f"malformed answer: nugget answered {len(hits)} times")
            continue
        label = str(hits[0].get("label", "")).strip().lower()
        out[i] = (Decision(label=label, score=NUGGET_LABELS[label]) if label in NUGGET_LABELS
                  else Decision(error=f"malformed answer: unknown label {hits[0].get('label')!r}"))
    return out


def _unavailable(run, report, *, step: str, kind: str, items: list[tuple[int, str, str, dict]], labels) -> None:
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


@contextmanager
def _task_lock(task_id: int, config) -> None:
    """Serialise importance judging per (task, configuration, prompt version) across workers (PostgreSQL;
    elsewhere a no-op: the unique verdict key still prevents duplicate rows)."""
    if connection.vendor != "postgresql":
        yield
        return
    digest = hashlib.sha256(f"{task_id}:{config.pk}:{config.prompt_version}".encode()).digest()
    key = int.from_bytes(digest[:4], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_NAMESPACE, key])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_NAMESPACE, key])


# --- the pipeline -----------------------------------------------------------------------------------------------


class DeepScholarPipeline(BasePipeline):
    protocol = "deepscholar"

    def steps_for(self, report) -> list[str]:
        return list(STEPS)

    def run_step(self, *, run, report, step: str, judge: Judge) -> None:
        handlers = {
            ORGANIZATION: self._organization, NUGGETS: self._nuggets, RELEVANCE: self._relevance,
            IMPORTANCE: self._importance, CITATIONS: self._citations,
        }
        if step not in handlers:
            raise ValueError(f"the DeepScholar pipeline has no step {step!r} (it has {', '.join(STEPS)})")
        handlers[step](run=run, report=report, judge=judge)

    # --- organization -------------------------------------------------------------------------------------------

    @staticmethod
    def _organization_questions(run, report) -> list[tuple[str, int, str, dict]]:
        """(target_key, repeat, input_hash, variables) of every comparison; none without an exemplar."""
        exemplar = exemplar_text(report.task)
        if not exemplar:
            return []
        query = query_text(report.task)
        out = []
        for repeat in range(run.judge_config.repeats):
            for key in (REPORT_FIRST, REPORT_SECOND):
                variables = organization_variables(report, key, query=query, exemplar=exemplar)
                out.append((key, repeat, fingerprint(query, variables["report_a"], variables["report_b"]), variables))
        return out

    def _organization(self, *, run, report, judge: Judge) -> None:
        existing = stored_verdicts(run, report, [ORGANIZATION_KIND])
        for order, report_as in ((REPORT_FIRST, "A"), (REPORT_SECOND, "B")):
            pending = [
                Pending(JudgeCall(step=ORGANIZATION, variables=variables, repeat=repeat), 0, input_hash, key=key,
                        extra={"report_as": report_as})
                for key, repeat, input_hash, variables in self._organization_questions(run, report)
                if key == order and not reusable(existing.get((ORGANIZATION_KIND, 0, key, repeat)), input_hash,
                                                 OUTCOME_LABELS)
            ]
            ask_one_each(judge, pending, run=run, report=report, kind=ORGANIZATION_KIND, labels=OUTCOME_LABELS,
                         decide=_decide_outcome(report_as))

    # --- nuggets ------------------------------------------------------------------------------------------------

    def _nuggets(self, *, run, report, judge: Judge) -> None:
        config = run.judge_config
        size = _option(config, "nugget_batch_size", DEFAULT_NUGGET_BATCH, 1)
        report_hash = fingerprint(report.text)
        existing = stored_verdicts(run, report, [NUGGET_KIND])
        todo = [
            (n, fingerprint(report_hash, n.text)) for n in counted_nuggets(report.task)
            if not reusable(existing.get((NUGGET_KIND, n.id, "", 0)), fingerprint(report_hash, n.text), NUGGET_LABELS)
        ]
        batches = [todo[i:i + size] for i in range(0, len(todo), size)]

        def call_of(batch) -> JudgeCall:
            return JudgeCall(step=NUGGETS, variables={
                "report": report.text, "nuggets": [{"id": n.id, "text": n.text} for n, _ in batch]})

        for chunk, answers in answered_in_chunks(judge, batches, call_of, run=run):
            for batch, answer in zip(chunk, answers, strict=True):
                self._store_nugget_batch(batch, answer, run=run, report=report)

    @staticmethod
    def _store_nugget_batch(batch, answer: JudgeAnswer, *, run, report) -> None:
        decisions = parse_nugget_answer(answer, [n.id for n, _ in batch])
        shares = cost_share(answer, len(batch))
        with transaction.atomic():
            call = record_answer(answer, run=run, step=NUGGETS)
            rows = []
            for (nugget, input_hash), share in zip(batch, shares, strict=True):
                decision = decisions[nugget.id]
                raw = {"input_hash": input_hash, "importance": nugget.importance}
                if decision.error:
                    raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
                else:
                    raw["answer"] = {"id": nugget.id, "label": decision.label}
                rows.append(Verdict(
                    **verdict_fields(run, report, step=NUGGETS, kind=NUGGET_KIND, target_id=nugget.id),
                    label=decision.label, score=decision.score, error=decision.error, raw_response=raw,
                    evidence=nugget.text[:RAW_TEXT_LIMIT], call=call, **share,
                ))
            upsert_verdicts(rows, run=run, report=report, labels=NUGGET_LABELS)

    # --- relevance ----------------------------------------------------------------------------------------------

    def _relevance(self, *, run, report, judge: Judge) -> None:
        citations = report_citations(report)
        query = query_text(report.task)
        existing = stored_verdicts(run, report, [DOCUMENT_KIND])
        pending, unavailable = [], []
        for key in citations.retrieved:
            doc = citations.documents[key]
            input_hash = fingerprint(query, doc.as_source())
            if reusable(existing.get((DOCUMENT_KIND, 0, key, 0)), input_hash, GRADE_LABELS):
                continue
            if not doc.text:
                unavailable.append((0, key, input_hash, {"document": doc.describe()}))
                continue
            pending.append(Pending(JudgeCall(step=RELEVANCE, variables={"query": query, "document": doc.as_source()}),
                                   0, input_hash, key=key, extra={"document": doc.describe()}, evidence=doc.text))
        _unavailable(run, report, step=RELEVANCE, kind=DOCUMENT_KIND, items=unavailable, labels=GRADE_LABELS)
        ask_one_each(judge, pending, run=run, report=report, kind=DOCUMENT_KIND, labels=GRADE_LABELS,
                     decide=_decide_grade)

    # --- reference importance -----------------------------------------------------------------------------------

    def _importance(self, *, run, report, judge: Judge) -> None:
        config = run.judge_config
        query = query_text(report.task)
        asked = {
            ref.id: (ref, fingerprint(query, reference_document(ref.bib_entry)))
            for ref in counted_references(report.task) if not importance_known(ref, report.task)
        }
        existing = stored_verdicts(run, report, [IMPORTANCE_KIND])
        todo = {i: v for i, v in asked.items()
                if not reusable(existing.get((IMPORTANCE_KIND, i, "", 0)), v[1], IMPORTANCE_LABELS)}
        if not todo:
            return
        with _task_lock(report.task_id, config):
            # another report of the task may have been judged meanwhile: copy its finished verdicts
            others = Verdict.objects.filter(
                report__task_id=report.task_id, judge_config=config, prompt_version=config.prompt_version,
                target_kind=IMPORTANCE_KIND, target_key="", repeat=0, target_id__in=list(todo), error="",
            ).exclude(report=report).order_by("id")
            copies = {}
            for other in others:
                ref, input_hash = todo[other.target_id]
                if other.target_id not in copies and reusable(other, input_hash, IMPORTANCE_LABELS):
                    raw = dict(other.raw_response or {}, input_hash=input_hash, copied_from=other.id)
                    copies[other.target_id] = Verdict(
                        **verdict_fields(run, report, step=IMPORTANCE, kind=IMPORTANCE_KIND, target_id=ref.id),
                        label=other.label, score=other.score, rationale=other.rationale, raw_response=raw,
                        evidence=other.evidence,
                    )
            if copies:
                with transaction.atomic():
                    upsert_verdicts(list(copies.values()), run=run, report=report, labels=IMPORTANCE_LABELS)
            pending = [
                Pending(JudgeCall(step=IMPORTANCE, variables={"query": query,
                                                              "document": reference_document(ref.bib_entry)}),
                        ref.id, input_hash, extra={"bib_entry": ref.bib_entry_id,
                                                   "has_abstract": bool(ref.bib_entry.abstract.strip())},
                        evidence=ref.bib_entry.title)
                for ref_id, (ref, input_hash) in todo.items() if ref_id not in copies
            ]
            ask_one_each(judge, pending, run=run, report=report, kind=IMPORTANCE_KIND, labels=IMPORTANCE_LABELS,
                         decide=_decide_importance)

    # --- citations ----------------------------------------------------------------------------------------------

    def _citations(self, *, run, report, judge: Judge) -> None:
        _, largest = claim_windows(run.judge_config)
        citations = report_citations(report)
        questions = pair_questions(citations, query_text(report.task), largest)
        existing = stored_verdicts(run, report, [PAIR_KIND])
        pending, unavailable = [], []
        for q in questions:
            if reusable(existing.get((PAIR_KIND, 0, q.key, 0)), q.input_hash, SUPPORT_LABELS):
                continue
            extra = {"sentence": q.sentence, "document": (
                {"key": QUERY_SOURCE} if q.document == QUERY_SOURCE else citations.documents[q.document].describe())}
            if not q.source:
                unavailable.append((0, q.key, q.input_hash, extra))
                continue
            pending.append(Pending(JudgeCall(step=CITATIONS, variables={"sentence": q.claim, "source": q.source}),
                                   0, q.input_hash, key=q.key, extra=extra, evidence=q.source))
        _unavailable(run, report, step=CITATIONS, kind=PAIR_KIND, items=unavailable, labels=SUPPORT_LABELS)
        ask_one_each(judge, pending, run=run, report=report, kind=PAIR_KIND, labels=SUPPORT_LABELS)

    # --- scoring ------------------------------------------------------------------------------------------------

    def score_report(self, *, run, report) -> dict:
        config = run.judge_config
        task = report.task
        rows = Verdict.objects.filter(
            report=report, judge_config=config, prompt_version=config.prompt_version, target_kind__in=KINDS,
        ).values("target_kind", "target_id", "target_key", "repeat", "label", "error", "raw_response")
        stored: dict[tuple, dict] = {(r["target_kind"], r["target_id"], r["target_key"], r["repeat"]): r for r in rows}
        tally = {"judged": 0, "failed": 0}

        def label_of(key: tuple, input_hash: str, labels) -> str | None:
            """The verdict's label when it answers the current question; a failed item otherwise."""
            row = stored.get(key)
            recorded = row["raw_response"].get("input_hash") if row and isinstance(row["raw_response"], dict) else None
            if row and not row["error"] and row["label"] in labels and recorded in (None, input_hash):
                tally["judged"] += 1
                return row["label"]
            tally["failed"] += 1
            return None

        metrics: dict = {}
        notes: list[str] = []

        # organization: each order of each repeat is one comparison
        outcomes = [label_of((ORGANIZATION_KIND, 0, key, repeat), input_hash, OUTCOME_LABELS)
                    for key, repeat, input_hash, _ in self._organization_questions(run, report)]
        outcomes = [o for o in outcomes if o is not None]
        if not exemplar_text(task):
            notes.append("the task has no exemplar related-work section to compare with")
        metrics["organization"] = win_rate(outcomes) if outcomes else None
        metrics["organization_comparisons"] = len(outcomes)

        # nugget coverage
        nuggets = counted_nuggets(task)
        report_hash = fingerprint(report.text)
        judged = [(label, n.importance) for n in nuggets
                  if (label := label_of((NUGGET_KIND, n.id, "", 0), fingerprint(report_hash, n.text), NUGGET_LABELS))]
        labels, importance = [j[0] for j in judged], [j[1] for j in judged]
        for mode, key in (("strict_all", "nugget_coverage"), ("all", "nugget_coverage_all"),
                          ("strict_vital", "nugget_coverage_strict_vital"), ("vital", "nugget_coverage_vital")):
            metrics[key] = nugget_coverage(labels, importance, mode) if judged else None
        metrics["nuggets"], metrics["nuggets_judged"] = len(nuggets), len(judged)
        if not nuggets:
            notes.append(NO_NUGGETS)

        # retrieval: relevance rate over S
        citations = report_citations(report)
        query = query_text(task)
        grades = []
        for key in citations.retrieved:
            doc = citations.documents[key]
            grade = label_of((DOCUMENT_KIND, 0, key, 0), fingerprint(query, doc.as_source()), GRADE_LABELS)
            if grade is not None:
                grades.append(int(grade))
        variants = {name: variant_option(config, name, VARIANTS) for name in ("relevance_rate", "citation_precision")}
        metrics["variants"] = variants
        metrics["relevance_rate"] = relevance_rate(grades, variant=variants["relevance_rate"]) if grades else None
        metrics["documents"], metrics["documents_graded"] = len(citations.retrieved), len(grades)

        # reference coverage: the exemplar's important references that S cites
        references = counted_references(task)
        important: dict[int, bool] = {}
        for ref in references:
            if importance_known(ref, task):
                important[ref.id] = ref.important
                continue
            label = label_of((IMPORTANCE_KIND, ref.id, "", 0), fingerprint(query, reference_document(ref.bib_entry)),
                             IMPORTANCE_LABELS)
            if label is not None:
                important[ref.id] = label == "important"
        retrieved = [citations.documents[k] for k in citations.retrieved]
        gold = [_ids(r.bib_entry.title, r.bib_entry.url, r.bib_entry.arxiv_id, r.bib_entry.doi) for r in references]
        pred = [_ids(d.title, d.url, d.arxiv_id, d.doi) for d in retrieved]
        cited_refs = [references[j].id for _, j in match_references(pred, gold)] if pred and gold else []
        important_ids = [i for i, flag in important.items() if flag]
        metrics["reference_coverage"] = reference_coverage(cited_refs, important_ids) if important_ids else None
        metrics["important_references"] = len(important_ids)
        metrics["important_cited"] = len(set(cited_refs) & set(important_ids))
        metrics["references_with_importance"] = len(important)
        if references and important and not important_ids:
            notes.append("no exemplar reference is important: reference coverage is undefined")

        # document importance from stored citation counts
        system_counts = [d.citation_count for d in retrieved if d.citation_count is not None]
        exemplar_counts = [n for n in (citation_count(r.bib_entry) for r in references) if n is not None]
        metrics["document_importance"] = (document_importance(system_counts, exemplar_counts)
                                          if system_counts and exemplar_counts else None)
        metrics["documents_with_counts"], metrics["exemplar_references_with_counts"] = (
            len(system_counts), len(exemplar_counts))
        if not (system_counts and exemplar_counts):
            notes.append("citation counts are unknown for the report's documents or the exemplar's references: "
                         "document importance is undefined")

        metrics.update(self._verifiability(run, report, citations, query, label_of, variants["citation_precision"]))
        complete = all(metrics[k] is not None for k in METRIC_KEYS)
        metrics["geometric_mean"] = geometric_mean([metrics[k] for k in METRIC_KEYS]) if complete else None
        metrics["geometric_mean_over"] = list(METRIC_KEYS) if complete else []
        metrics["notes"] = notes
        return {"metrics": metrics, "items_judged": tally["judged"], "items_failed": tally["failed"]}

    @staticmethod
    def _verifiability(run, report, citations: ReportCitations, query: str, label_of, precision_variant: str) -> dict:
        window, largest = claim_windows(run.judge_config)
        supports: dict[str, bool | None] = {}
        for q in pair_questions(citations, query, largest):
            label = label_of((PAIR_KIND, 0, q.key, 0), q.input_hash, SUPPORT_LABELS)
            supports[q.key] = None if label is None else label == "support"

        judged = [(c.index, supports[f"{c.index}:{key}"]) for c in citations.claims for key in c.documents]
        judged = [(sentence, flag) for sentence, flag in judged if flag is not None]
        precision = [flag for _, flag in judged]
        precision_sentences = [sentence for sentence, _ in judged]

        n = citations.sentence_count
        by_window = {}
        for w in range(largest + 1):
            # support[i][j]: a document cited in sentence j (or the query context) supports claim i
            support = np.zeros((n, n), dtype=bool)
            determined = np.zeros(n, dtype=bool)
            for claim in citations.claims:
                i = claim.index
                query_flag = supports[f"{i}:{QUERY_SOURCE}"]
                unknown = query_flag is None
                for j in range(max(0, i - w), min(n, i + w + 1)):
                    flags = [supports[f"{i}:{key}"] for key in citations.cited_by_sentence.get(j, ())]
                    support[i, j] = bool(query_flag) or any(f is True for f in flags)
                    unknown = unknown or any(f is None for f in flags)
                determined[i] = support[i].any() or not unknown
            support[~determined] = False
            counted = int(determined.sum())
            # claim_coverage averages over all n rows; rows that are no claim or undetermined are all False,
            # so rescaling by n / counted gives the mean over the determined claims alone
            by_window[str(w)] = claim_coverage(support, window=w) * n / counted if counted else None
        return {
            "citation_precision": (citation_precision(precision, variant=precision_variant, sentences=precision_sentences)
                                   if precision else None),
            "citations": sum(len(c.documents) for c in citations.claims),
            "citations_judged": len(precision),
            "claim_coverage": by_window[str(window)],
            "claim_coverage_by_window": by_window,
            "claim_window": window,
            "claim_sentences": len(citations.claims),
        }

    def score_system(self, *, report_scores: Sequence[dict]) -> dict:
        """The base means, plus claim coverage per window averaged over the reports where defined,
        the notes once each, and the geometric mean of the system's metric means (Table 2)."""
        score = super().score_system(report_scores=report_scores)
        metrics = score["metrics"]
        windows: dict[str, list[float]] = defaultdict(list)
        for report_score in report_scores:
            for w, value in (report_score["metrics"].get("claim_coverage_by_window") or {}).items():
                windows[w].extend([value] if value is not None else [])  # a window no report defines stays None
        metrics["claim_coverage_by_window"] = {w: (float(np.mean(v)) if v else None)
                                               for w, v in sorted(windows.items(), key=lambda kv: int(kv[0]))}
        metrics["notes"] = sorted({note for s in report_scores for note in s["metrics"].get("notes", [])})
        self.compare_systems(system_scores={None: score})  # alone until the run compares its systems
        return score

    def compare_systems(self, *, system_scores: dict) -> None:
        """Table 2's geometric mean of each system's metric means, over the metrics every system has."""
        common = geometric_means_over_common({s: score["metrics"] for s, score in system_scores.items()}, METRIC_KEYS)
        for system, score in system_scores.items():
            score["metrics"]["geometric_mean"] = common["values"][system]
            score["metrics"]["geometric_mean_over"] = common["over"]
