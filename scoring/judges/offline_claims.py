"""How the offline judge checks a claim against a text, and the steps that ask it.

A claim (a checklist item, a nugget, a cited sentence, a statement) is checked so: the text is
split into sentences (markdown table rows become ``header: cell; …`` sentences) and the
candidates are every sentence and every pair of adjacent sentences. For the claim (a checklist
item without its "The article should mention that" framing) we take the cosine similarity to
every candidate (all-MiniLM-L6-v2), its checkable terms — numbers with kind and unit, years,
percentages, names (acronyms, CamelCase, tokens with digits, mid-sentence capitals), see
``scoring.judges.lexical`` — and its key words (content words, less the text's topic words:
those in more than 20 % of its sentences, and, for a set of four or more claims, words used by
more than half of them). A candidate is *close* when its similarity is ≥ ``support_similarity``
(0.65) and it holds ≥ ``keyword_overlap`` (0.35) of the key words or ≥ ``keyword_count`` (3) of
them, or when its similarity is ≥ ``strong_similarity`` (0.80) and it holds ≥
``strong_keyword_overlap`` (0.15).
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

Steps: ``deepsynth.checklist_group`` (supported → correct, contradicted → incorrect, else
omitted), ``deepscholar.nugget_support`` (supported → support; related with similarity ≥
``partial_similarity`` or half the terms → partial_support), ``reportbench.consistency`` and
``deepscholar.citation_support`` (supported → consistent / support).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import lexical

TOP_K = 5


def round4(x: float) -> float:
    """Similarities are rounded to 4 decimals before any threshold, so float noise cannot flip a decision."""
    return round(float(x), 4)


@dataclass
class Candidate:
    text: str
    first: int  # sentence span [first, last]
    last: int


def candidate_texts(text: str) -> list[str]:
    """The texts a ``TextIndex`` of ``text`` embeds (its sentences, then adjacent pairs), without building it."""
    sentences = lexical.split_sentences(text)
    return list(sentences) + [f"{sentences[i]} {sentences[i + 1]}" for i in range(len(sentences) - 1)]


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


def _similarities(judge, claims: list[str], index: TextIndex) -> np.ndarray:
    if index.vectors is None or not claims:
        return np.zeros((len(claims), 0), dtype=np.float32)
    return judge.vectors_of(claims) @ index.vectors.T


def assess_all(judge, claims: list[str], index: TextIndex) -> list[Assessment]:
    """Assess claims that come as a set (a checklist group, a nugget list).

    Words used by more than half of the claims of a set of four or more are the
    set's framing ("... as an application area") and do not count as key words.
    """
    sims = _similarities(judge, claims, index)
    framing: frozenset = frozenset()
    if len(claims) >= 4:
        counts: dict[str, int] = {}
        for claim in claims:
            for word in lexical.content_words(claim):
                counts[word] = counts.get(word, 0) + 1
        framing = frozenset(w for w, n in counts.items() if n > len(claims) / 2)
    return [_assess(judge, claim, sims[i], index, framing) for i, claim in enumerate(claims)]


def _assess(judge, claim: str, sims: np.ndarray, index: TextIndex, framing: frozenset = frozenset()) -> Assessment:
    th = judge.thresholds
    if sims.size == 0:  # an empty text
        return Assessment("absent", 0.0, "", [], lexical.evidence(claim).terms, [])
    claim_ev = lexical.evidence(claim).without(index.common_names)
    claim_words = lexical.content_words(claim) - framing
    order = sorted(range(sims.shape[0]), key=lambda j: (-round4(sims[j]), j))[:TOP_K]
    scored = [_score(judge, claim_ev, claim_words, index.candidates[j], round4(sims[j]), index) for j in order]
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


def _score(judge, claim_ev, claim_words: set, candidate: Candidate, similarity: float,
           index: TextIndex) -> _Scored:
    th = judge.thresholds
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
    return _Scored(candidate, similarity, found, missing, clash, round4(overlap), worded, close)


def deepsynth_checklist_group(judge, report, group_name, constraint_question, items):
    index = judge.text_index(report)
    claims = [lexical.strip_requirement(item["text"]) for item in items]
    labels = {"supported": "correct", "contradicted": "incorrect"}
    verdicts = []
    for item, assessment in zip(items, assess_all(judge, claims, index)):
        verdicts.append({"id": item["id"], "label": labels.get(assessment.outcome, "omitted"),
                         "evidence": assessment.evidence, "rationale": assessment.rationale()})
    return {"verdicts": verdicts}


def reportbench_consistency(judge, statement, passage):
    assessment = assess_all(judge, [statement], judge.text_index(passage))[0]
    label = "consistent" if assessment.outcome == "supported" else "inconsistent"
    return {"label": label, "rationale": assessment.rationale()}


def deepscholar_nugget_support(judge, report, nuggets):
    labels = []
    for nugget, a in zip(nuggets, assess_all(judge, [n["text"] for n in nuggets], judge.text_index(report))):
        if a.outcome == "supported":
            label = "support"
        elif a.outcome == "related" and (a.similarity >= judge.thresholds["partial_similarity"]
                                         or len(a.found) >= max(1, len(a.missing))):
            label = "partial_support"
        else:
            label = "not_support"
        labels.append({"id": nugget["id"], "label": label})
    return {"labels": labels}


def deepscholar_citation_support(judge, sentence, source):
    assessment = assess_all(judge, [lexical.strip_citations(sentence)], judge.text_index(source))[0]
    return {"label": "support" if assessment.outcome == "supported" else "not_support"}


HANDLERS = {
    "deepsynth.checklist_group": deepsynth_checklist_group,
    "reportbench.consistency": reportbench_consistency,
    "deepscholar.nugget_support": deepscholar_nugget_support,
    "deepscholar.citation_support": deepscholar_citation_support,
}
