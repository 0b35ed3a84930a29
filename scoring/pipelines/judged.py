"""What a judge was shown for one stored verdict, rebuilt with the pipelines' own builders.

A verdict stores its answer, not its question: an agreement workspace that shows a
citation-support verdict as ``0:arxiv:2108.02755`` hides what the annotator must decide on.
``judged_inputs`` rebuilds each verdict's step variables from stored data with the same
functions the pipeline called when it asked (``pair_questions``, ``cited_passage``,
``organization_variables``, ...), so the page shows the judge's question, not a re-derivation
of it. Nothing is fetched from the web (``SourceResolver(fetch=False)``: a run that fetched a
source stored it). Variables that hold the whole report are marked ``is_report`` rather than
copied: the page shows the report beside the item.

``step_labels`` are the labels a step's verdicts carry (the pipelines' label maps), so an
agreement item offers its own step's labels only. Steps without a builder show their judged
row's text (or target key) beside the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from benchmark.models import ChecklistItem, GoldReference, Nugget, RubricCriterion
from scoring.models import Statement, Verdict

from . import deepsynth, reportbench
from .report_sources import SourceResolver, cited_passage
from .deepscholar.citation_support import CITATIONS, QUERY_SOURCE, SUPPORT_LABELS, pair_questions
from .deepscholar.documents import Document, ReportCitations, report_citations
from .deepscholar.inputs import claim_windows, exemplar_text, query_text
from .deepscholar.nuggets import NUGGET_KIND, NUGGET_LABELS, NUGGETS
from .deepscholar.organization import (
    ORGANIZATION, OUTCOME_LABELS, REPORT_FIRST, REPORT_SECOND, organization_variables,
)
from .deepscholar.reference_coverage import IMPORTANCE, IMPORTANCE_KIND, IMPORTANCE_LABELS, reference_document
from .deepscholar.relevance import GRADE_LABELS, RELEVANCE
from .surveys.pairwise import ORDERS, OUTCOMES, PAIRWISE, pairwise_variables
from .surveys.ssr import report_ssr, survey_ssr, survey_topic
from .surveys.surveylens import CRITERION_KIND, RUBRIC
from .surveys.surveyscope import QUALITY


@dataclass(frozen=True)
class Part:
    name: str  # the step's variable
    label: str  # the variable in words
    text: str = ""  # empty when ``is_report``
    is_report: bool = False  # the whole report under evaluation


@dataclass(frozen=True)
class JudgedInput:
    step: str
    parts: tuple[Part, ...]
    complete: bool = True  # False when the judged row or its source is gone: parts say what is left

    @property
    def text(self) -> str:
        """The judged text in words: every part but the whole report, each under its label
        (a single part as it is)."""
        shown = [part for part in self.parts if not part.is_report]
        if len(shown) == 1:
            return shown[0].text
        return "\n\n".join(f"{part.label}:\n{part.text}" for part in shown)

    def as_dict(self) -> dict:
        return {"step": self.step, "complete": self.complete, "parts": [
            {"name": p.name, "label": p.label, "text": p.text, "is_report": p.is_report} for p in self.parts]}


# The labels each step's verdicts carry, in the order the pipelines rank them.
STEP_LABELS: dict[str, tuple[str, ...]] = {
    deepsynth.STEP: tuple(deepsynth.LABEL_SCORES),
    reportbench.CONSISTENCY: tuple(reportbench.CONSISTENCY_LABELS),
    reportbench.FACTUALITY: tuple(reportbench.FACTUALITY_LABELS),
    ORGANIZATION: tuple(OUTCOME_LABELS),
    NUGGETS: tuple(NUGGET_LABELS),
    RELEVANCE: tuple(GRADE_LABELS),
    IMPORTANCE: tuple(IMPORTANCE_LABELS),
    CITATIONS: tuple(SUPPORT_LABELS),
    PAIRWISE: tuple(OUTCOMES),
}


def step_labels(step: str) -> tuple[str, ...]:
    """The labels verdicts of ``step`` carry; empty for steps that score rather than label."""
    return STEP_LABELS.get(step, ())


@dataclass
class _ReportCache:
    """What several verdicts on one report share: its citations, its source resolver, its task's query."""

    report: object
    citations: ReportCitations | None = None
    resolver: SourceResolver | None = None
    values: dict = field(default_factory=dict)

    def report_citations(self) -> ReportCitations:
        if self.citations is None:
            self.citations = report_citations(self.report)
        return self.citations

    def source_resolver(self) -> SourceResolver:
        if self.resolver is None:
            self.resolver = SourceResolver(self.report, fetch=False)
        return self.resolver

    def once(self, name: str, compute):
        if name not in self.values:
            self.values[name] = compute()
        return self.values[name]


def _report(name: str = "report", label: str = "The report") -> Part:
    return Part(name, label, is_report=True)


def _missing(verdict: Verdict, what: str) -> JudgedInput:
    shown = verdict.target_key or f"{verdict.target_kind} #{verdict.target_id}"
    return JudgedInput(verdict.step, (Part("target", f"{what} (no longer stored)", shown),), complete=False)


def _checklist(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    item = rows.get((ChecklistItem, verdict.target_id))
    if item is None:
        return _missing(verdict, "Checklist item")
    group = item.group
    parts = [_report(), Part("group_name", "Checklist group", group.name)]
    question = deepsynth.constraint_question(group)
    if question:
        parts.append(Part("constraint_question", "Constraint question", question))
    parts.append(Part("items", "Checklist item", item.text))
    return JudgedInput(verdict.step, tuple(parts))


def _statement(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    statement = rows.get((Statement, verdict.target_id))
    if statement is None:
        return _missing(verdict, "Statement")
    parts = [Part("statement", "Statement", statement.text)]
    if verdict.step == reportbench.CONSISTENCY:
        sources = cache.source_resolver().sources_for(statement.citations)
        if not sources:
            return JudgedInput(verdict.step, (*parts, Part("passage", "Cited source", "(no stored source text)")),
                               complete=False)
        parts.append(Part("passage", "Cited source" + ("s" if len(sources) > 1 else ""),
                          cited_passage(sources)))
    return JudgedInput(verdict.step, tuple(parts))


def _query(cache: _ReportCache) -> str:
    return cache.once("query", lambda: query_text(cache.report.task))


def _organization(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    exemplar = cache.once("exemplar", lambda: exemplar_text(cache.report.task))
    if verdict.target_key not in (REPORT_FIRST, REPORT_SECOND) or not exemplar:
        return _missing(verdict, "Comparison")
    variables = organization_variables(cache.report, verdict.target_key, query=_query(cache), exemplar=exemplar)
    return JudgedInput(verdict.step, _two_texts(verdict.target_key == REPORT_FIRST, "report_a",
                                                "report_b", Part("query", "Query", variables["query"]),
                                                exemplar, "Report"))


def _two_texts(report_first: bool, name_a: str, name_b: str, head: Part, other: str, noun: str) -> tuple[Part, ...]:
    """A comparison's parts: the report (shown beside the item) and the human-written text, in the judge's order."""
    report = _report(name_a if report_first else name_b, f"{noun} {'A' if report_first else 'B'}: this report")
    human = Part(name_b if report_first else name_a, f"{noun} {'B' if report_first else 'A'}: the human-written one",
                 other)
    return (head, report, human) if report_first else (head, human, report)


def _nugget(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    nugget = rows.get((Nugget, verdict.target_id))
    if nugget is None:
        return _missing(verdict, "Nugget")
    return JudgedInput(verdict.step, (_report(), Part("nuggets", "Nugget", nugget.text)))


def _document(cache: _ReportCache, key: str) -> Document | None:
    return cache.report_citations().documents.get(key)


def _relevance(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    doc = _document(cache, verdict.target_key)
    if doc is None or not doc.text:
        return _missing(verdict, "Cited document")
    return JudgedInput(verdict.step, (Part("query", "Query", _query(cache)),
                                      Part("document", "Cited document", doc.as_source())))


def _importance(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    reference = rows.get((GoldReference, verdict.target_id))
    if reference is None:
        return _missing(verdict, "Exemplar reference")
    return JudgedInput(verdict.step, (Part("query", "Query", _query(cache)),
                                      Part("document", "Exemplar reference",
                                           reference_document(reference.bib_entry))))


def _citation(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    questions = cache.once("pairs", lambda: {q.key: q for q in pair_questions(
        cache.report_citations(), _query(cache), claim_windows(verdict.judge_config)[1])})
    question = questions.get(verdict.target_key)
    if question is None:
        return _missing(verdict, "Sentence and source")
    sentence = Part("sentence", "Sentence of the report", question.claim)
    if question.document == QUERY_SOURCE:
        source = Part("source", "Source: the query (the paper's title and abstract)", question.source)
    else:
        doc = cache.report_citations().documents[question.document]
        source = Part("source", f"Cited source: {doc.title}" if doc.title else "Cited source",
                      question.source or "(no stored source text)")
    return JudgedInput(verdict.step, (sentence, source), complete=bool(question.source))


def _survey_pairwise(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    human = cache.once("human", lambda: survey_ssr(cache.report.task.survey))
    if verdict.target_key not in ORDERS or not human.text.strip():
        return _missing(verdict, "Comparison")
    topic = cache.once("topic", lambda: survey_topic(cache.report.task))
    variables = pairwise_variables(cache.report, verdict.target_key, topic=topic, human=human)
    return JudgedInput(verdict.step, _two_texts(verdict.target_key == ORDERS[0], "survey_a", "survey_b",
                                                Part("topic", "Topic", variables["topic"]), human.text, "Survey"))


def _criterion(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    criterion = rows.get((RubricCriterion, verdict.target_id))
    if criterion is None:
        return _missing(verdict, "Criterion")
    parts = [Part("criteria", "Criterion", f"{criterion.name}: {criterion.description}".strip(": "))]
    if verdict.step == RUBRIC:
        generated = cache.once("ssr", lambda: report_ssr(cache.report))
        parts.insert(0, Part("survey", f"The report's {criterion.component}", generated.component_text(
            criterion.component)))
    else:
        parts.insert(0, _report("survey"))
    return JudgedInput(verdict.step, tuple(parts))


_BUILDERS = {
    deepsynth.STEP: _checklist,
    reportbench.CONSISTENCY: _statement,
    reportbench.FACTUALITY: _statement,
    ORGANIZATION: _organization,
    NUGGETS: _nugget,
    RELEVANCE: _relevance,
    IMPORTANCE: _importance,
    CITATIONS: _citation,
    PAIRWISE: _survey_pairwise,
    RUBRIC: _criterion,
    QUALITY: _criterion,
}

# The judged rows the builders read, one query per model whatever the number of verdicts.
_ROWS = {
    deepsynth.TARGET_KIND: ChecklistItem.objects.select_related("group__constraint_question"),
    reportbench.CITED_KIND: Statement.objects.all(),
    reportbench.UNCITED_KIND: Statement.objects.all(),
    "statement": Statement.objects.all(),  # verdicts on a statement from outside the ReportBench pipeline
    NUGGET_KIND: Nugget.objects.all(),
    IMPORTANCE_KIND: GoldReference.objects.select_related("bib_entry"),
    CRITERION_KIND: RubricCriterion.objects.all(),
}


def judged_inputs(verdicts: Iterable[Verdict]) -> dict[int, JudgedInput]:
    """verdict id → what its judge was shown. Verdicts come with ``report`` (and its task and
    survey) and ``judge_config`` loaded or loadable; steps without a builder (extraction steps,
    which read the whole report) show the report alone."""
    verdicts = list(verdicts)
    wanted: dict[str, set[int]] = {}
    for verdict in verdicts:
        if verdict.target_kind in _ROWS:
            wanted.setdefault(verdict.target_kind, set()).add(verdict.target_id)
    rows: dict = {}
    for kind, ids in wanted.items():
        queryset = _ROWS[kind]
        rows.update({(queryset.model, pk): row for pk, row in queryset.in_bulk(list(ids)).items()})
    caches: dict[int, _ReportCache] = {}
    out = {}
    for verdict in verdicts:
        cache = caches.setdefault(verdict.report_id, _ReportCache(verdict.report))
        builder = _BUILDERS.get(verdict.step, _judged_row)
        out[verdict.pk] = builder(verdict, cache, rows)
    return out


def _judged_row(verdict: Verdict, cache: _ReportCache, rows: dict) -> JudgedInput:
    """A step without a builder (an extraction step, a step of another protocol): its judged
    row's text, else its target key, beside the whole report."""
    queryset = _ROWS.get(verdict.target_kind)
    row = rows.get((queryset.model, verdict.target_id)) if queryset is not None else None
    text = (getattr(row, "text", "") or str(row)) if row is not None else verdict.target_key
    if not text:
        return JudgedInput(verdict.step, (_report(),))
    name = "statement" if isinstance(row, Statement) else "target"
    return JudgedInput(verdict.step, (_report(), Part(name, verdict.target_kind.replace("_", " ").capitalize(),
                                                      text)))
