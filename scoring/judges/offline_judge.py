"""The ``offline`` backend: a heuristic judge from sentence embeddings and lexical evidence, no network.

It is the embedded default, so every step gets an answer in its schema wherever a
heuristic can be honest about it; ``heuristic = True`` marks every verdict it makes.
The same input always gives the same answer (no sampling; similarities are rounded
to 4 decimals before any threshold, so float noise cannot flip a decision).

How a claim is checked against a text (checklist items, nuggets, cited sentences,
statements): the text is split into sentences (markdown table rows become
``header: cell; …`` sentences) and the candidates are every sentence and every pair
of adjacent sentences. For the claim (a checklist item without its "The article
should mention that" framing) we take the cosine similarity to every candidate
(all-MiniLM-L6-v2), its checkable terms — numbers with kind and unit, years,
percentages, names (acronyms, CamelCase, tokens with digits, mid-sentence capitals),
see ``scoring.judges.lexical`` — and its key words (content words, less the text's
topic words: those in more than 20 % of its sentences, and, for a set of four or
more claims, words used by more than half of them). A candidate is *close* when its
similarity is ≥ ``support_similarity`` (0.65) and it holds ≥ ``keyword_overlap``
(0.35) of the key words or ≥ ``keyword_count`` (3) of them, or when its similarity
is ≥ ``strong_similarity`` (0.80) and it holds ≥ ``strong_keyword_overlap`` (0.15).
Among the 5 most similar candidates:

1. **supported** if one is close, has no conflict, and contains (with its
   neighbouring sentences) at least ``evidence_coverage`` (0.5) of the claim's terms;
2. else **contradicted** if one conflicts with the claim about the same subject
   (when the claim has a specific name — a strong name of four or more characters,
   or with a digit — the candidate names the first of them) and has similarity ≥
   ``contradiction_similarity`` (0.65), or ≥ ``related_similarity`` when it names
   the claim's subject: a
   different value of the same kind in the same context (same anchor word before
   it, same unit after it, or the only value of that kind on both sides), a
   different strong name right after the same anchor word, or — from
   ``negation_similarity`` (0.75) and with the key words present — one side negated
   and the other not ("not only … but" and "not X but Y" do not count as negation);
3. else **supported** by lexical evidence if one with similarity ≥
   ``related_similarity`` (0.45) contains every term of the claim (at least one) and
   enough key words;
4. else **related** if the best similarity is ≥ ``related_similarity``, otherwise **absent**.

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
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from scoring.embeddings import Embedder, EmbeddingError, embedder_for

from . import lexical, offline_structure
from .base import Judge, JudgeAnswer, JudgeCall
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
TOP_K = 5
NOT_SUPPORTED = {
    "reportbench.factuality": "checking a statement without a citation needs knowledge outside the report",
    "propose.rubric_criteria": "writing discipline-aware rubric criteria needs a language model's judgement",
}
_REFERENCES_HEADING = re.compile(r"^\s*(references|bibliography|works cited|sources|citations|reference list)\s*:?\s*$",
                                 re.IGNORECASE)
_DISCOURSE = re.compile(r"^(first|second|third|finally|in contrast|however|moreover|furthermore|similarly|"
                        r"in addition|another|building on|beyond|more recently|recently|to address|overall|"
                        r"in summary|together|unlike|compared)\b", re.IGNORECASE)
_FRONT_BACK_MATTER = re.compile(r"^(abstract|introduction|conclusions?|concluding remarks|summary|references|"
                                r"bibliography|acknowledg(e)?ments?|appendix|appendices)\b", re.IGNORECASE)


def _round(x: float) -> float:
    return round(float(x), 4)


class _VectorMemo:
    """Process-wide memo text → vector per embedder, bounded, so a report is embedded once per process."""

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, embedder: Embedder, texts: list[str]) -> np.ndarray:
        keys = [(embedder.name, t) for t in texts]
        with self._lock:
            known = {k: self._data[k] for k in keys if k in self._data}
        todo = list(dict.fromkeys(t for k, t in zip(keys, texts) if k not in known))
        if todo:
            fresh = embedder.embed(todo)
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


@dataclass
class Candidate:
    text: str
    first: int  # sentence span [first, last]
    last: int


class TextIndex:
    """A text's sentences and adjacent pairs, with their vectors (fetched on first use) and common names.

    A name that appears in more than ``COMMON_SHARE`` of the sentences (the topic
    itself: "SLAM" in a SLAM survey) proves nothing about a particular claim, so it
    is left out of the claim's checkable terms.
    """

    COMMON_SHARE = 0.2

    def __init__(self, sentences: list[str], vectors_of) -> None:
        self.sentences = sentences
        self.candidates = [Candidate(s, i, i) for i, s in enumerate(sentences)]
        self.candidates += [Candidate(f"{sentences[i]} {sentences[i + 1]}", i, i + 1)
                            for i in range(len(sentences) - 1)]
        self.texts = [c.text for c in self.candidates]
        self._vectors_of = vectors_of
        self._vectors = None
        names: dict[str, int] = {}
        words: dict[str, int] = {}
        self.words = [lexical.content_words(s) for s in sentences]
        for sentence, sentence_words in zip(sentences, self.words):
            for key in lexical.evidence(sentence).name_keys:
                names[key] = names.get(key, 0) + 1
            for word in sentence_words:
                words[word] = words.get(word, 0) + 1
        limit = max(2, self.COMMON_SHARE * len(sentences))
        self.common_names = frozenset(key for key, n in names.items() if n > limit)
        self.common_words = frozenset(key for key, n in words.items() if n > limit)

    @property
    def vectors(self) -> np.ndarray | None:
        if self._vectors is None and self.texts:
            self._vectors = self._vectors_of(self.texts)
        return self._vectors

    def context(self, candidate: Candidate) -> str:
        return " ".join(self.sentences[max(0, candidate.first - 1): candidate.last + 2])

    def overlap(self, claim_words: set[str], candidate: Candidate) -> tuple[float, int]:
        """Share and number of the claim's key words (content words, less the text's topic words) in the candidate."""
        key = claim_words - self.common_words
        if not key:
            return 1.0, 0
        shared = len(key & set().union(*self.words[candidate.first: candidate.last + 1]))
        return shared / len(key), shared


@dataclass
class Assessment:
    outcome: str  # supported, contradicted, related, absent
    similarity: float
    evidence: str
    found: list[str]
    missing: list[str]
    conflicts: list[str]
    overlap: float = 0.0
    via: str = ""

    def rationale(self) -> str:
        parts = [f"heuristic: {self.outcome}; similarity {self.similarity:.2f}, key-word overlap {self.overlap:.2f}"]
        if self.via:
            parts.append(self.via)
        if self.found or self.missing:
            parts.append(f"terms found {self.found or '[]'}, missing {self.missing or '[]'}")
        if self.conflicts:
            parts.append(f"conflicting {self.conflicts}")
        return "; ".join(parts)


@dataclass
class _Scored:
    """One candidate's case for or against a claim."""

    candidate: Candidate
    similarity: float
    found: list[str]
    missing: list[str]
    clash: list[str]
    overlap: float
    worded: bool  # enough of the claim's key words
    close: bool  # similar enough, given the key words

    @property
    def share(self) -> float:
        """Share of the claim's checkable terms present (1 when the claim has none)."""
        total = len(self.found) + len(self.missing)
        return len(self.found) / total if total else 1.0

    def assessment(self, outcome: str, via: str = "") -> Assessment:
        return Assessment(outcome, self.similarity, self.candidate.text, self.found, self.missing, self.clash,
                          self.overlap, via)


class OfflineJudge(Judge):
    heuristic = True

    def __init__(self, config, *, embedder: Embedder | None = None) -> None:
        super().__init__(config)
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
        handler = getattr(self, "_" + call.step.replace(".", "_"))
        wanted = get_step(call.step).inputs["properties"]
        try:
            data = handler(**{key: value for key, value in call.variables.items() if key in wanted})
        except EmbeddingError as error:  # a remote embedding endpoint that failed for good
            return finish(None, str(error))
        problems = validate_answer(call.step, data, call.variables)
        if problems:  # a bug here, not a bad input: say so loudly in the answer
            return finish(None, "offline judge produced an invalid answer: " + "; ".join(problems))
        return finish(data)

    def answer_many(self, calls) -> list[JudgeAnswer]:
        """Embed every text the calls need in one batch, then answer them in order (one thread, deterministic)."""
        needed: list[str] = []
        for call in calls:
            if call.step in STEPS and not validate_variables(call.step, call.variables):
                needed.extend(self._texts_for(call.step, call.variables))
        if needed:
            self._vectors(list(dict.fromkeys(needed)))
        return [self.answer(call) for call in calls]

    def answer_as_completed(self, calls, *, stop=lambda: False):
        """In chunks of ``max_concurrency`` through ``answer_many`` (keeps its batched embedding)."""
        size = max(1, int(getattr(self.config, "max_concurrency", 1) or 1))
        for start in range(0, len(calls), size):
            if start and stop():
                return
            for offset, answer in enumerate(self.answer_many(calls[start:start + size])):
                yield start + offset, answer

    def _texts_for(self, step: str, v: dict) -> list[str]:
        """The texts a call will embed, for prefetching; steps that are cheap anyway return none."""
        if step == "deepsynth.checklist_group":
            return [lexical.strip_requirement(i["text"]) for i in v["items"]] + self._index(v["report"]).texts
        if step == "deepscholar.nugget_support":
            return [n["text"] for n in v["nuggets"]] + self._index(v["report"]).texts
        if step == "reportbench.consistency":
            return [v["statement"]] + self._index(v["passage"]).texts
        if step == "deepscholar.citation_support":
            return [lexical.strip_citations(v["sentence"])] + self._index(v["source"]).texts
        if step in ("deepscholar.relevance", "deepscholar.reference_importance"):
            return [v["query"], v["document"]]
        return []

    # --- shared machinery ---------------------------------------------------------------------------------------

    def _vectors(self, texts: list[str]) -> np.ndarray:
        return MEMO.vectors(self.embedder, texts)

    def _index(self, text: str) -> TextIndex:
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        with self._lock:  # one build per text even when threads ask at once
            if key not in self._indexes:
                self._indexes[key] = TextIndex(list(lexical.split_sentences(text)), self._vectors)
                while len(self._indexes) > 16:
                    self._indexes.popitem(last=False)
            self._indexes.move_to_end(key)
            return self._indexes[key]

    def _similarities(self, claims: list[str], index: TextIndex) -> np.ndarray:
        if index.vectors is None or not claims:
            return np.zeros((len(claims), 0), dtype=np.float32)
        return self._vectors(claims) @ index.vectors.T

    def _assess_all(self, claims: list[str], index: TextIndex) -> list[Assessment]:
        """Assess claims that come as a set (a checklist group, a nugget list).

        Words used by more than half of the claims of a set of four or more are the
        set's framing ("... as an application area") and do not count as key words.
        """
        sims = self._similarities(claims, index)
        framing: frozenset = frozenset()
        if len(claims) >= 4:
            counts: dict[str, int] = {}
            for claim in claims:
                for word in lexical.content_words(claim):
                    counts[word] = counts.get(word, 0) + 1
            framing = frozenset(w for w, n in counts.items() if n > len(claims) / 2)
        return [self._assess(claim, sims[i], index, framing) for i, claim in enumerate(claims)]

    def _assess(self, claim: str, sims: np.ndarray, index: TextIndex, framing: frozenset = frozenset()) -> Assessment:
        th = self.thresholds
        if sims.size == 0:  # an empty text
            return Assessment("absent", 0.0, "", [], lexical.evidence(claim).terms, [])
        claim_ev = lexical.evidence(claim).without(index.common_names)
        claim_words = lexical.content_words(claim) - framing
        order = sorted(range(sims.shape[0]), key=lambda j: (-_round(sims[j]), j))[:TOP_K]
        scored = [self._score(claim_ev, claim_words, index.candidates[j], _round(sims[j]), index) for j in order]
        for c in scored:
            if c.close and not c.clash and c.share >= th["evidence_coverage"]:
                return c.assessment("supported")
        for c in scored:
            if c.clash:
                return c.assessment("contradicted")
        for c in scored:
            if c.similarity >= th["related_similarity"] and c.found and not c.missing and c.worded:
                return c.assessment("supported", via="every checkable term present")
        return scored[0].assessment("related" if scored[0].similarity >= th["related_similarity"] else "absent")

    def _score(self, claim_ev, claim_words: set, candidate: Candidate, similarity: float,
               index: TextIndex) -> "_Scored":
        th = self.thresholds
        found, missing = lexical.coverage(claim_ev, lexical.evidence(index.context(candidate)))
        overlap, shared = index.overlap(claim_words, candidate)
        worded = overlap >= th["keyword_overlap"] or shared >= th["keyword_count"]
        clash = []
        candidate_ev = lexical.evidence(candidate.text)
        same_subject = lexical.shares_subject(claim_ev, candidate_ev)
        if similarity >= th["contradiction_similarity"] or (same_subject and similarity >= th["related_similarity"]):
            clash = lexical.conflicts(claim_ev, candidate_ev)
            if similarity >= th["negation_similarity"] and worded and claim_ev.negated != candidate_ev.negated:
                clash.append("negation differs")
        close = (similarity >= th["support_similarity"] and worded) or (
            similarity >= th["strong_similarity"] and overlap >= th["strong_keyword_overlap"])
        return _Scored(candidate, similarity, found, missing, clash, _round(overlap), worded, close)

    def _cosine(self, a: str, b: str) -> float:
        vectors = self._vectors([a, b])
        return _round(vectors[0] @ vectors[1])

    # --- DeepSynth ----------------------------------------------------------------------------------------------

    def _deepsynth_checklist_group(self, report, group_name, constraint_question, items):
        index = self._index(report)
        claims = [lexical.strip_requirement(item["text"]) for item in items]
        labels = {"supported": "correct", "contradicted": "incorrect"}
        verdicts = []
        for item, assessment in zip(items, self._assess_all(claims, index)):
            verdicts.append({"id": item["id"], "label": labels.get(assessment.outcome, "omitted"),
                             "evidence": assessment.evidence, "rationale": assessment.rationale()})
        return {"verdicts": verdicts}

    # --- ReportBench --------------------------------------------------------------------------------------------

    def _body_sentences(self, report: str) -> list[str]:
        """Sentences before a references heading."""
        body = []
        for block in lexical.blocks(report):
            if block.kind == "heading" and _REFERENCES_HEADING.match(block.text):
                break
            if block.kind == "heading":
                continue
            body.extend([block.text] if block.kind == "row" else lexical.split_text(block.text))
        return body

    def _reportbench_cited_statements(self, report):
        statements = []
        for sentence in self._body_sentences(report):
            cites = lexical.citations_in(sentence)
            text = lexical.strip_citations(sentence)
            if cites and len(lexical.tokens(text)) >= 3:
                statements.append({"text": text, "citations": cites})
        return {"statements": statements}

    def _reportbench_uncited_statements(self, report):
        statements = []
        for sentence in self._body_sentences(report):
            if lexical.citations_in(sentence) or len(lexical.tokens(sentence)) < 6:
                continue
            ev = lexical.evidence(sentence)
            if ev.values or ev.names:
                statements.append({"text": sentence.strip()})
        return {"statements": statements}

    def _reportbench_support_passage(self, statement, source_title, source_text):
        sentences = list(lexical.split_sentences(source_text))
        if not sentences:
            return {"passage": "", "found": False}
        windows = [" ".join(sentences[i:i + 3]) for i in range(max(1, len(sentences) - 2))]
        candidates = sentences + windows
        vectors = self._vectors([statement, *candidates])
        sims = [_round(s) for s in vectors[1:] @ vectors[0]]
        best = max(range(len(candidates)), key=lambda j: (sims[j], -j))
        if sims[best] < self.thresholds["passage_similarity"]:
            return {"passage": "", "found": False}
        return {"passage": candidates[best], "found": True}

    def _reportbench_consistency(self, statement, passage):
        assessment = self._assess_all([statement], self._index(passage))[0]
        label = "consistent" if assessment.outcome == "supported" else "inconsistent"
        return {"label": label, "rationale": assessment.rationale()}

    def _reportbench_reference_titles(self, report):
        lines, in_references = [], False
        for line in lexical.normalize(report).splitlines():
            stripped = line.strip().lstrip("#").strip()
            if _REFERENCES_HEADING.match(stripped):
                in_references = True
                continue
            if in_references and re.match(r"^\s*#{1,6}\s", line):
                break
            if in_references and stripped:
                lines.append(stripped)
        references, seen = [], set()

        def add(title: str, url: str) -> None:
            title = title.strip(" .,:;\"'“”")
            key = re.sub(r"\W+", " ", title.lower()).strip()
            if len(key.split()) >= 3 and key not in seen:
                seen.add(key)
                references.append({"title": title, "url": url})

        for line in lines:
            links = lexical.MARKDOWN_LINK.findall(line)
            urls = lexical.URL.findall(line)
            url = links[0][1] if links else (urls[0] if urls else "")
            quoted = re.search(r"[\"“]([^\"”]{10,300})[\"”]", line)
            after_year = re.search(r"\((?:19|20)\d{2}[a-z]?\)\.?\s+(.{10,300}?)(?:\.\s|\.?\s*https?://|\.?$)", line)
            if quoted:
                add(quoted.group(1), url)
            elif links and len(links[0][0].split()) >= 3:
                add(links[0][0], url)
            elif after_year:
                add(after_year.group(1), url)
            else:
                text = lexical.strip_citations(re.sub(r"^\s*(?:\[\d+\]|\d+[.)])\s*", "", line))
                add(text, url)
        if not lines:
            for text, url in lexical.MARKDOWN_LINK.findall(lexical.normalize(report)):
                if len(text.split()) >= 4:
                    add(text, url)
        return {"references": references}

    # --- DeepScholar --------------------------------------------------------------------------------------------

    def _deepscholar_nuggetize(self, query, text):
        sentences = [lexical.strip_citations(s) for s in lexical.split_sentences(text)]
        sentences = [s for s in dict.fromkeys(sentences) if len(lexical.tokens(s)) >= 4]
        if not sentences:
            return {"nuggets": []}
        vectors = self._vectors(sentences)
        centrality = (vectors @ vectors.T).mean(axis=1)
        query_sim = vectors @ self._vectors([query])[0]
        scores = [_round(centrality[i] + 0.5 * query_sim[i] + 0.02 * min(len(lexical.evidence(s).terms), 5))
                  for i, s in enumerate(sentences)]
        count = int(self.thresholds["nugget_count"])
        ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:count]
        vital = set(ranked[: max(1, round(len(ranked) * self.thresholds["vital_fraction"]))])
        return {"nuggets": [{"text": sentences[i], "importance": "vital" if i in vital else "okay"}
                            for i in ranked]}

    def _deepscholar_nugget_support(self, report, nuggets):
        labels = []
        for nugget, a in zip(nuggets, self._assess_all([n["text"] for n in nuggets], self._index(report))):
            if a.outcome == "supported":
                label = "support"
            elif a.outcome == "related" and (a.similarity >= self.thresholds["partial_similarity"]
                                             or len(a.found) >= max(1, len(a.missing))):
                label = "partial_support"
            else:
                label = "not_support"
            labels.append({"id": nugget["id"], "label": label})
        return {"labels": labels}

    def _deepscholar_relevance(self, query, document):
        similarity = self._cosine(query, document)
        grade = 2 if similarity >= self.thresholds["relevance_high"] else (
            1 if similarity >= self.thresholds["relevance_low"] else 0)
        return {"grade": grade, "rationale": f"heuristic: query-document similarity {similarity:.2f}"}

    def _deepscholar_reference_importance(self, query, document):
        return {"important": self._cosine(query, document) >= self.thresholds["importance_similarity"]}

    def _deepscholar_citation_support(self, sentence, source):
        assessment = self._assess_all([lexical.strip_citations(sentence)], self._index(source))[0]
        return {"label": "support" if assessment.outcome == "supported" else "not_support"}

    def _structure(self, text: str) -> tuple[float, str]:
        """Organisation score of a text and a short account of its parts."""
        paragraphs = [b for b in lexical.blocks(text) if b.kind in ("paragraph", "item")]
        heading_count = sum(1 for b in lexical.blocks(text) if b.kind == "heading")
        per_paragraph = [[s for s in lexical.split_text(p.text) if lexical.tokens(s)] for p in paragraphs]
        sentences = [s for group in per_paragraph for s in group]
        if len(sentences) < 2:
            return 0.0, offline_structure.TOO_SHORT
        vectors = self._vectors(sentences)
        adjacent, focus, offset = [], [], 0
        for group in per_paragraph:
            block = vectors[offset: offset + len(group)]
            offset += len(group)
            if len(group) >= 2:
                adjacent.extend(float(block[i] @ block[i + 1]) for i in range(len(group) - 1))
                centroid = block.mean(axis=0)
                centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
                focus.append(float((block @ centroid).mean()))
        sims = vectors @ vectors.T
        upper = sims[np.triu_indices(len(sentences), k=1)]
        redundancy = float((upper >= 0.9).mean()) if upper.size else 0.0
        marked = sum(1 for p in paragraphs if _DISCOURSE.match(p.text))
        signposting = min(0.2, 0.2 * (heading_count + marked) / max(len(paragraphs), 1))
        coherence = float(np.mean(adjacent)) if adjacent else 0.0
        focused = float(np.mean(focus)) if focus else 0.0
        total = _round(coherence + focused + signposting - redundancy)
        return total, (f"coherence {coherence:.2f}, focus {focused:.2f}, signposting {signposting:.2f}, "
                       f"redundancy {redundancy:.2f}")

    def _winner(self, score_a: float, score_b: float) -> str:
        if abs(score_a - score_b) < self.thresholds["tie_margin"]:
            return "tie"
        return "A" if score_a > score_b else "B"

    def _deepscholar_organization(self, query, report_a, report_b):
        (a, why_a), (b, why_b) = self._structure(report_a), self._structure(report_b)
        return {"winner": self._winner(a, b),
                "rationale": f"heuristic structure score A {a:.2f} ({why_a}) vs B {b:.2f} ({why_b})"}

    # --- SurveyLens, SciSage ------------------------------------------------------------------------------------

    def _criterion_scores(self, survey: str, criteria: list[dict], high: int) -> dict:
        units = list(lexical.split_sentences(survey, headings=True)) or [survey]
        unit_vectors = self._vectors(units)
        queries = [f"{c['name']}: {c['description']}" for c in criteria]
        sims = self._vectors(queries) @ unit_vectors.T
        floor, ceiling = self.thresholds["rubric_floor"], self.thresholds["rubric_ceiling"]
        scores = []
        for criterion, row in zip(criteria, sims):
            top = _round(np.mean(np.sort(row)[-3:]))
            fraction = min(1.0, max(0.0, (top - floor) / max(ceiling - floor, 1e-9)))
            scores.append({"id": criterion["id"], "score": 1 + int(round(fraction * (high - 1))),
                           "rationale": f"heuristic: topical match of the best passages {top:.2f} "
                                        "(a proxy: the offline judge cannot assess quality)"})
        return {"scores": scores}

    def _surveylens_rubric(self, component, survey, criteria):
        return self._criterion_scores(survey, criteria, 5)

    def _scisage_quality(self, survey, dimensions):
        return self._criterion_scores(survey, dimensions, 10)

    def _scisage_section_structure(self, survey, dimensions):
        return offline_structure.section_structure_answer(
            survey, dimensions, structure_of=self._structure, vectors_of=self._vectors, options=self.options)

    def _survey_pairwise(self, topic, survey_a, survey_b):
        results = []
        for survey in (survey_a, survey_b):
            structure, _ = self._structure(survey)
            sentences = list(lexical.split_sentences(survey)) or [survey]
            centroid = self._vectors(sentences).mean(axis=0)
            centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
            results.append((_round(structure + float(self._vectors([topic])[0] @ centroid)), structure))
        (a, sa), (b, sb) = results
        return {"winner": self._winner(a, b),
                "rationale": f"heuristic: topic match plus structure, A {a:.2f} (structure {sa:.2f}) vs "
                             f"B {b:.2f} (structure {sb:.2f})"}

    # --- construction -------------------------------------------------------------------------------------------

    @staticmethod
    def _topic(title: str) -> str:
        topic = re.sub(r"^\s*(a|an|the)?\s*(comprehensive|systematic|brief|short)?\s*(survey|review|overview|"
                       r"tutorial|primer)\s+(of|on|for)\s+", "", title, flags=re.IGNORECASE)
        topic = re.sub(r"\s*[:\-]\s*(a|an)?\s*(comprehensive|systematic)?\s*(survey|review|overview)\s*$", "", topic,
                       flags=re.IGNORECASE)
        return topic.strip(" .") or title.strip()

    @staticmethod
    def _key_phrases(text: str, limit: int = 4) -> list[str]:
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z\-]+", lexical.normalize(text))]
        counts: dict[str, int] = {}
        for first, second in zip(words, words[1:]):
            if first.lower() in lexical.STOPWORDS or second.lower() in lexical.STOPWORDS:
                continue
            if len(first) < 3 or len(second) < 3:
                continue
            phrase = f"{first.lower()} {second.lower()}"
            counts[phrase] = counts.get(phrase, 0) + 1
        return [p for p, _ in sorted(counts.items(), key=lambda kv: (-kv[1], list(counts).index(kv[0])))][:limit]

    def _propose_general_question(self, title, abstract):
        return {"question": f"Please write a comprehensive survey of {self._topic(title)} based on the provided "
                            "papers, covering its main methods, open challenges and future directions."}

    def _propose_reportbench_prompts(self, title, abstract, cutoff_date):
        topic = self._topic(title)
        phrases = ", ".join(self._key_phrases(abstract)) or topic
        rules = (f"Only cite works published before {cutoff_date}, and do not cite the survey titled "
                 f"\"{title}\" itself.")
        return {
            "sentence": f"Write a survey of research on {topic}. {rules}",
            "paragraph": f"Write a survey of research on {topic}, covering its main subtopics and methods, "
                         f"including {phrases}. {rules}",
            "detail": f"Write a detailed survey of {topic}: describe the research domain, the key research "
                      f"directions and the methodological approaches of interest, such as {phrases}, and compare "
                      f"them critically, in English. {rules}",
        }

    def _propose_topic_groups(self, survey_title, outline, content):
        heads = lexical.headings(outline) or lexical.headings(content)
        if not heads:
            return {"groups": []}
        top = min(level for level, _ in heads)
        groups: list[dict] = []
        current = None
        for level, title in heads:
            clean = re.sub(r"^(?:\d+(?:\.\d+)*|[IVXLC]+)[.)]?\s+", "", title).strip()
            if level == top:
                current = None if _FRONT_BACK_MATTER.match(clean) else {"name": clean, "items": []}
                if current:
                    groups.append(current)
            elif current is not None and clean:
                current["items"].append(f"The report should discuss {clean}.")
        return {"groups": [g for g in groups if g["items"]]}

    def _propose_constraint_pairs(self, survey_title, outline, content):
        pairs, caption, rows, header = [], "", [], None
        lines = lexical.normalize(content).splitlines() + [""]
        for i, line in enumerate(lines):
            stripped = line.strip()
            if stripped.startswith("|"):
                if lexical.TABLE_SEPARATOR.match(stripped):
                    continue
                cells = lexical.table_row(stripped)
                if header is None:
                    header = cells
                else:
                    rows.append(cells)
                continue
            if header is not None:
                items = [
                    "In the table, report that " + cells[0] + " has "
                    + "; ".join(f"{h}: {c}" for h, c in zip(header[1:], cells[1:]) if c) + "."
                    for cells in rows if cells and cells[0] and len(cells) == len(header)
                ]
                if items:
                    name = caption or f"table {len(pairs) + 1}"
                    question = (f"Include a table ({name}) comparing each {header[0].lower() or 'entry'} by "
                                f"{', '.join(h for h in header[1:] if h)}.")
                    pairs.append({"anchor": f"table: {name}", "question": question, "items": items})
                header, rows = None, []
            if stripped:
                caption = re.sub(r"^#+\s*", "", stripped)[:120]
        return {"pairs": pairs}
