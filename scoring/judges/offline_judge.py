"""The ``offline`` backend: a heuristic judge from sentence embeddings and lexical evidence, no network.

It is the embedded default, so every step gets an answer in its schema wherever a
heuristic can be honest about it; ``heuristic = True`` marks every verdict it makes.
The same input always gives the same answer (no sampling; similarities are rounded
to 4 decimals before any threshold, so float noise cannot flip a decision).

Each kind of step has its module: ``offline_claims`` (a claim checked against a text: checklist
items, nuggets, consistency, citation support — how, is told there), ``offline_extraction``
(statements, passages, reference titles), ``offline_comparison`` (relevance, importance,
organization, pairwise), ``offline_criteria`` (rubric, quality, section structure) and
``offline_proposals`` (nuggetize, propose.*). This module answers calls: it validates them,
dispatches each to its step's handler and keeps the vectors and text indexes they share.

Steps and labels:

* ``deepsynth.checklist_group``: supported → correct, contradicted → incorrect, else
  omitted; evidence is the deciding (or the most similar) candidate, the rationale
  gives the similarity and the terms found, missing or in conflict.
* ``deepscholar.nugget_support``: supported → support; related with similarity ≥
  ``partial_similarity`` (0.50) or half the terms → partial_support; else not_support.
* ``reportbench.consistency`` (claim against the passage) and
  ``deepscholar.citation_support`` (sentence against the source): supported →
  consistent / support, otherwise inconsistent / not_support.
* ``reportbench.support_passage``: the best window of up to 3 source sentences;
  found when its similarity is ≥ ``passage_similarity`` (0.45).
* ``reportbench.cited_statements`` / ``uncited_statements``: sentences with / without
  URLs, DOIs, markdown links, ``[n]`` or (Author, Year) markers, up to a references
  heading; uncited ones must carry a number, year or name and have ≥ 6 words.
* ``reportbench.reference_titles``: entries of the references section (markdown link
  text, quoted titles, or the title segment after "Authors (Year)."), else titled
  links anywhere.
* ``reportbench.academic_reference``: a scholarly URL host or a PDF → academic; any other
  URL → not; no URL → academic when the title has ≥ 4 words (``offline_extraction``).
* ``deepscholar.relevance``: query–document cosine ≥ ``relevance_high`` (0.55) → 2,
  ≥ ``relevance_low`` (0.35) → 1, else 0. ``deepscholar.reference_importance``:
  cosine ≥ ``importance_similarity`` (0.50) — a topical proxy, not the paper's
  "could not be substituted".
* ``deepscholar.organization`` and ``survey.pairwise``: a structure score per text —
  mean similarity of adjacent sentences within paragraphs, paragraph focus (mean
  similarity to the paragraph centroid), signposting (share of headings and
  paragraphs opening with a discourse marker, up to 0.2) minus redundancy (share of
  sentence pairs with similarity ≥ 0.9); pairwise adds topic similarity. Winner by
  a margin of ``tie_margin`` (0.02), otherwise a tie.
* ``surveylens.rubric`` (1–5) and ``scisage.quality`` (1–10): how well the best
  matching passages address each criterion (mean of the 3 best similarities),
  mapped linearly from ``rubric_floor`` (0.15) to ``rubric_ceiling`` (0.55) onto the
  scale. A topical proxy for quality, said so in every rationale.
* ``scisage.section_structure`` (1–5): the structure score above within each section,
  minus repeated headings (``offline_structure``, its thresholds documented there).
* ``deepscholar.nuggetize``: up to ``nugget_count`` (20) salient sentences (centrality
  plus a bonus per checkable term, kept in document order), the top
  ``vital_fraction`` (0.5) of them vital.
* ``propose.general_question``, ``propose.reportbench_prompts``: templates filled with
  the topic from the title and key phrases of the abstract. ``propose.topic_groups``:
  one group per top-level section of the outline (introduction, conclusion and the
  like left out), items from its subsections. ``propose.constraint_pairs``: one pair
  per markdown table in the content, one item per row.
* Not supported — the answer is an error saying so: ``reportbench.factuality`` (needs
  knowledge outside the report) and ``propose.rubric_criteria`` (needs judgement to
  write criteria).

Every threshold is read from ``JudgeConfig.options`` under the name given above.
"""

import hashlib
import threading
import time
from collections import OrderedDict

import numpy as np

from scoring.embeddings import Embedder, EmbeddingError, embed_cached, embedder_for

from . import lexical, offline_claims, offline_comparison, offline_criteria, offline_extraction, offline_proposals
from .base import Judge, JudgeAnswer, JudgeCall
from .offline_claims import TextIndex, candidate_texts, round4
from .steps import STEPS, StepError, get_step, request_hash, validate_answer, validate_variables

DEFAULTS = {
    "support_similarity": 0.65,
    "strong_similarity": 0.80,
    "strong_keyword_overlap": 0.15,
    "keyword_overlap": 0.35,
    "keyword_count": 3,
    "related_similarity": 0.45,
    "contradiction_similarity": 0.65,
    "negation_similarity": 0.75,
    "evidence_coverage": 0.5,
    "partial_similarity": 0.50,
    "passage_similarity": 0.45,
    "relevance_high": 0.55,
    "relevance_low": 0.35,
    "importance_similarity": 0.50,
    "tie_margin": 0.02,
    "rubric_floor": 0.15,
    "rubric_ceiling": 0.55,
    "nugget_count": 20,
    "vital_fraction": 0.5,
}
NOT_SUPPORTED = {
    "reportbench.factuality": "checking a statement without a citation needs knowledge outside the report",
    "propose.rubric_criteria": "writing discipline-aware rubric criteria needs a language model's judgement",
}
HANDLERS = {
    **offline_claims.HANDLERS, **offline_extraction.HANDLERS, **offline_comparison.HANDLERS,
    **offline_criteria.HANDLERS, **offline_proposals.HANDLERS,
}


class _VectorMemo:
    """Process-wide memo text → vector per embedder, bounded, in front of the database cache."""

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, embedder: Embedder, texts: list[str], compute=None) -> np.ndarray:
        """Vectors of ``texts``; the ones not remembered come from ``compute`` (default ``embedder.embed``)."""
        keys = [(embedder.name, t) for t in texts]
        with self._lock:
            known = {k: self._data[k] for k in keys if k in self._data}
        todo = list(dict.fromkeys(t for k, t in zip(keys, texts) if k not in known))
        if todo:
            fresh = (compute or embedder.embed)(todo)
            with self._lock:
                for text, vector in zip(todo, fresh):
                    self._data[(embedder.name, text)] = vector
                    known[(embedder.name, text)] = vector
                while len(self._data) > self.capacity:
                    self._data.popitem(last=False)
        if not texts:
            return np.zeros((0, embedder.dim or 1), dtype=np.float32)
        return np.stack([known[k] for k in keys])


MEMO = _VectorMemo()


class OfflineJudge(Judge):
    heuristic = True

    def __init__(self, config, *, embedder: Embedder | None = None, stored: bool = True) -> None:
        """``stored``: vectors go through the database cache (``scoring.embeddings.cache``), shared by every
        process and run; off only where there is no database (a few unit tests)."""
        super().__init__(config)
        self.stored = stored
        options = getattr(config, "options", None) or {}
        self.options = options
        self.thresholds = {key: type(default)(options.get(key, default)) for key, default in DEFAULTS.items()}
        self.embedder = embedder or embedder_for(getattr(config, "embedding_backend", "") or "", config=config)
        self.prompt_version = getattr(config, "prompt_version", "") or "v1"
        self.model = f"offline+{self.embedder.name}"
        self._indexes: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    # --- the Judge interface ------------------------------------------------------------------------------------

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        started = time.perf_counter()
        extra = {"prompt_version": self.prompt_version, "heuristic": True,
                 "request_hash": request_hash(model=self.model, prompt_version=self.prompt_version, step=call.step,
                                              variables=call.variables, repeat=call.repeat)}

        def finish(data: dict | None, error: str = "") -> JudgeAnswer:
            return JudgeAnswer(data=None if error else data, error=error, model=self.model,
                               latency_ms=(time.perf_counter() - started) * 1000.0, extra=extra)

        try:
            get_step(call.step)
        except StepError as error:
            return finish(None, str(error))
        if call.step in NOT_SUPPORTED:
            return finish(None, f"not supported by the offline judge: {NOT_SUPPORTED[call.step]}")
        problems = validate_variables(call.step, call.variables)
        if problems:
            return finish(None, "invalid variables: " + "; ".join(problems))
        handler = HANDLERS[call.step]
        wanted = get_step(call.step).inputs["properties"]
        try:
            data = handler(self, **{key: value for key, value in call.variables.items() if key in wanted})
        except EmbeddingError as error:  # a remote embedding endpoint that failed for good
            return finish(None, str(error))
        problems = validate_answer(call.step, data, call.variables)
        if problems:  # a bug here, not a bad input: say so loudly in the answer
            return finish(None, "offline judge produced an invalid answer: " + "; ".join(problems))
        return finish(data)

    def answer_many(self, calls) -> list[JudgeAnswer]:
        """Embed every text the calls need in one batch, then answer them in order (one thread, deterministic)."""
        self.prefetch(calls)
        return [self.answer(call) for call in calls]

    def answer_as_completed(self, calls, *, stop=lambda: False):
        """Every text of every call embedded first, in one length-sorted pass (a job's calls are one
        report's step: one pass per report, not one per chunk of ``max_concurrency`` calls, which left
        batches of ~7 texts and 39 % padding), then answered one by one; ``stop`` is asked between calls."""
        calls = list(calls)
        self.prefetch(calls)
        for index, call in enumerate(calls):
            if index and stop():
                return
            yield index, self.answer(call)

    def prefetch(self, calls) -> None:
        """The vectors of every text ``calls`` will embed, computed (or read from the cache) at once."""
        needed: list[str] = []
        for call in calls:
            if call.step in STEPS and not validate_variables(call.step, call.variables):
                needed.extend(self._texts_for(call.step, call.variables))
        if needed:
            self.vectors_of(list(dict.fromkeys(needed)))

    def _texts_for(self, step: str, v: dict) -> list[str]:
        """The texts a call will embed, for prefetching; steps that are cheap anyway return none."""
        if step == "deepsynth.checklist_group":
            return [lexical.strip_requirement(i["text"]) for i in v["items"]] + candidate_texts(v["report"])
        if step == "deepscholar.nugget_support":
            return [n["text"] for n in v["nuggets"]] + candidate_texts(v["report"])
        if step == "reportbench.consistency":
            return [v["statement"]] + candidate_texts(v["passage"])
        if step == "deepscholar.citation_support":
            return [lexical.strip_citations(v["sentence"])] + candidate_texts(v["source"])
        if step in ("deepscholar.relevance", "deepscholar.reference_importance"):
            return [v["query"], v["document"]]
        return []

    # --- what the step handlers share ------------------------------------------------------------------------

    def vectors_of(self, texts: list[str]) -> np.ndarray:
        if not self.stored:
            return MEMO.vectors(self.embedder, texts)
        return MEMO.vectors(self.embedder, texts, lambda todo: embed_cached(self.embedder, todo))

    def text_index(self, text: str) -> TextIndex:
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self._lock:  # one build per text even when threads ask at once
            if key not in self._indexes:
                self._indexes[key] = TextIndex(list(lexical.split_sentences(text)), self.vectors_of)
                while len(self._indexes) > 16:
                    self._indexes.popitem(last=False)
            self._indexes.move_to_end(key)
            return self._indexes[key]

    def cosine(self, a: str, b: str) -> float:
        vectors = self.vectors_of([a, b])
        return round4(vectors[0] @ vectors[1])
