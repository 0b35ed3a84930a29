"""Reference matching and reference precision/recall (ReportBench §3.2, SciSage §5.1.3).

ReportBench compares the (normalised, deduplicated) reference list of a
generated report with the ground-truth bibliography of the source survey and
reports precision and recall; SciSage reports TP = |A ∩ B| and
F1 with Precision = |A ∩ B| / |A| and Recall = |A ∩ B| / |B|, A and B being
*sets* of references.  This module supplies the pieces: identifier and title
normalisation, one-to-one matching of two reference lists, deduplication, and
:func:`reference_prf`.

Matching (:func:`match_references`) runs in three stages, each one-to-one and
only over entries left unmatched by the previous stages:

1. identifiers — normalised DOI, arXiv id and URL (an arXiv DOI
   ``10.48550/arXiv.<id>`` and arxiv.org/doi.org URLs also yield the arXiv id /
   DOI they contain); predicted entries are taken in input order and each
   takes the first still-unmatched gold entry sharing any identifier (DOI
   first, then arXiv id, then URL);
2. exact normalised title (:func:`normalize_title`), again in input order;
3. fuzzy title similarity ≥ ``fuzzy_threshold`` (see :func:`title_similarity`),
   pairs accepted greedily from the most similar down (ties: lower predicted
   index, then lower gold index).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
import string
from difflib import SequenceMatcher
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from core.text import normalize_title

from ._validate import check_choice, check_real, fail

__all__ = [
    "normalize_title",
    "normalize_doi",
    "normalize_arxiv_id",
    "normalize_url",
    "title_similarity",
    "match_references",
    "deduplicate_references",
    "reference_prf",
    "upstream_title_key",
    "scisage_upstream_similar",
    "pooled_reference_prf",
    "REFERENCE_VARIANTS",
]

# "paper": identifiers, then exact and fuzzy titles, one-to-one (``match_references``);
# the released code of each benchmark, reproducible by name, as the issue tracker records it.
REFERENCE_VARIANTS = ("paper", "reportbench_upstream", "scisage_upstream")
SCISAGE_UPSTREAM_SIMILARITY = 0.8
_SCISAGE_SUB_SENTENCE = re.compile(r"[.!?。\n]")
_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)

# --------------------------------------------------------------------------- titles

def title_similarity(a: str, b: str) -> float:
    """Similarity of two *normalised* titles in [0, 1].

    It is difflib's ``SequenceMatcher(None, x, y, autojunk=False).ratio()``
    = 2·M / (|x| + |y|), M being the number of characters in matching blocks,
    computed with the two strings in sorted order so that the measure is
    symmetric.  Two empty strings have similarity 0 (nothing to match on).
    """
    if not isinstance(a, str) or not isinstance(b, str):
        fail("title_similarity expects two strings")
    if not a or not b:
        return 0.0
    x, y = (a, b) if a <= b else (b, a)
    return SequenceMatcher(None, x, y, autojunk=False).ratio()


# --------------------------------------------------------------------------- identifiers

_DOI_PREFIX = re.compile(r"^(?:https?://)?(?:dx\.|www\.)?doi\.org/|^doi:\s*", re.IGNORECASE)
_ARXIV_PREFIX = re.compile(r"^arxiv:\s*", re.IGNORECASE)
_ARXIV_VERSION = re.compile(r"v\d+$", re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$")
_ARXIV_PATH = re.compile(r"^/(?:abs|pdf|html|format)/(.+?)(?:\.pdf)?/?$", re.IGNORECASE)


def normalize_doi(doi: str) -> str:
    """Lower-cased DOI without resolver prefix (``https://doi.org/``, ``doi:``), percent-decoded."""
    if not isinstance(doi, str):
        fail(f"doi must be a string; got {type(doi).__name__}")
    return _DOI_PREFIX.sub("", unquote(doi.strip())).strip().rstrip(".,;").lower()


def normalize_arxiv_id(arxiv_id: str) -> str:
    """arXiv identifier without ``arXiv:`` prefix, URL wrapper or version suffix (``v2``), lower-cased."""
    if not isinstance(arxiv_id, str):
        fail(f"arxiv_id must be a string; got {type(arxiv_id).__name__}")
    text = _ARXIV_PREFIX.sub("", arxiv_id.strip())
    from_url = _arxiv_from_url(text)
    if from_url is not None:
        return from_url
    return _ARXIV_VERSION.sub("", text.strip().rstrip("/")).lower()


def _split_url(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url.strip() if "://" in url else "//" + url.strip())
    host = parts.netloc.lower()
    if host.startswith("www."):
        host = host[4:]
    return host, parts.path, parts.query


def _arxiv_from_url(url: str) -> str | None:
    host, path, _ = _split_url(url)
    if host not in {"arxiv.org", "export.arxiv.org"}:
        return None
    match = _ARXIV_PATH.match(path)
    if not match:
        return None
    return _ARXIV_VERSION.sub("", match.group(1)).lower()


def normalize_url(url: str) -> str:
    """URL key: scheme, ``www.``, fragment and trailing slash removed, host lower-cased.

    The path and query keep their case (servers may be case-sensitive).
    """
    if not isinstance(url, str):
        fail(f"url must be a string; got {type(url).__name__}")
    host, path, query = _split_url(url)
    path = path.rstrip("/")
    return f"{host}{path}" + (f"?{query}" if query else "")


_FIELDS = ("title", "doi", "arxiv_id", "url")
_BUCKETS = 64
_CHUNK_ELEMENTS = 1 << 21


def _reference_keys(ref: Any, where: str) -> tuple[list[tuple[str, str]], str]:
    """Identifier keys (in priority order) and normalised title of one reference."""
    if not isinstance(ref, Mapping):
        fail(f"{where} must be a dict with optional keys {list(_FIELDS)}; got {type(ref).__name__}")
    for field in _FIELDS:
        value = ref.get(field)
        if value is not None and not isinstance(value, str):
            fail(f"{where}[{field!r}] must be a string or None; got {type(value).__name__}")
    doi = normalize_doi(ref["doi"]) if ref.get("doi") else ""
    arxiv = normalize_arxiv_id(ref["arxiv_id"]) if ref.get("arxiv_id") else ""
    url = normalize_url(ref["url"]) if ref.get("url") else ""
    if url:
        arxiv = arxiv or (_arxiv_from_url(ref["url"]) or "")
        host, path, _ = _split_url(ref["url"])
        if host.endswith("doi.org") and not doi:
            doi = normalize_doi(path.lstrip("/"))
    if doi and not arxiv:
        embedded = _ARXIV_DOI.match(doi)
        arxiv = embedded.group(1) if embedded else ""
    keys = [(kind, value) for kind, value in (("doi", doi), ("arxiv", arxiv), ("url", url)) if value]
    title = normalize_title(ref["title"]) if ref.get("title") else ""
    return keys, title


def _prepare(refs: Any, name: str) -> list[tuple[list[tuple[str, str]], str]]:
    if isinstance(refs, (str, bytes, Mapping)) or not isinstance(refs, Sequence):
        fail(f"{name} must be a list of reference dicts; got {type(refs).__name__}")
    return [_reference_keys(ref, f"{name}[{i}]") for i, ref in enumerate(refs)]


def _stage_keys(entry: tuple[list[tuple[str, str]], str], use_titles: bool) -> list[Any]:
    keys, title = entry
    if use_titles:
        return [("title", title)] if title else []
    return keys


def _exact_stage(
    pred: list, gold: list, pred_free: np.ndarray, gold_free: np.ndarray, use_titles: bool
) -> list[tuple[int, int]]:
    table: dict[Any, list[int]] = {}
    for j, entry in enumerate(gold):
        for key in _stage_keys(entry, use_titles):
            table.setdefault(key, []).append(j)
    pairs: list[tuple[int, int]] = []
    for i in np.flatnonzero(pred_free):
        for key in _stage_keys(pred[i], use_titles):
            hit = next((j for j in table.get(key, ()) if gold_free[j]), None)
            if hit is not None:
                pairs.append((int(i), hit))
                pred_free[i] = gold_free[hit] = False
                break
    return pairs


def _char_profiles(titles: list[str], buckets: int = _BUCKETS) -> np.ndarray:
    """Bucketed character counts: an upper bound on the matched-character count."""
    lengths = np.fromiter((len(t) for t in titles), dtype=np.intp, count=len(titles))
    codes = np.frombuffer("".join(titles).encode("utf-32-le"), dtype=np.uint32) % buckets
    rows = np.repeat(np.arange(len(titles)), lengths)
    counts = np.bincount(rows * buckets + codes.astype(np.intp), minlength=len(titles) * buckets)
    return counts.reshape(len(titles), buckets).astype(np.float32)


def _shared_char_bound(p_prof: np.ndarray, g_prof: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Σ_b min(p_b, g_b) for each candidate pair, in memory-bounded chunks."""
    out = np.empty(rows.size, dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // p_prof.shape[1])
    for start in range(0, rows.size, step):
        sl = slice(start, start + step)
        out[sl] = np.minimum(p_prof[rows[sl]], g_prof[cols[sl]]).sum(axis=1)
    return out


def _fuzzy_stage(
    pred: list, gold: list, pred_free: np.ndarray, gold_free: np.ndarray, threshold: float
) -> list[tuple[int, int]]:
    p_idx = np.array([i for i in np.flatnonzero(pred_free) if pred[i][1]], dtype=np.intp)
    g_idx = np.array([j for j in np.flatnonzero(gold_free) if gold[j][1]], dtype=np.intp)
    if p_idx.size == 0 or g_idx.size == 0:
        return []
    p_titles = [pred[i][1] for i in p_idx]
    g_titles = [gold[j][1] for j in g_idx]
    p_len = np.array([len(t) for t in p_titles], dtype=float)[:, None]
    g_len = np.array([len(t) for t in g_titles], dtype=float)[None, :]
    # ratio = 2M / (|a| + |b|) with M <= min(|a|, |b|) and M <= shared characters
    # (bucketed): both give cheap, exact upper bounds used to prune candidates.
    bound = 2.0 * np.minimum(p_len, g_len) / (p_len + g_len)
    candidates = bound >= threshold
    if candidates.any():
        rows, cols = np.nonzero(candidates)
        shared = _shared_char_bound(_char_profiles(p_titles), _char_profiles(g_titles), rows, cols)
        keep = 2.0 * shared / (p_len[rows, 0] + g_len[0, cols]) >= threshold
        rows, cols = rows[keep], cols[keep]
    else:
        rows = cols = np.zeros(0, dtype=np.intp)
    scored = [(title_similarity(p_titles[r], g_titles[c]), r, c) for r, c in zip(rows.tolist(), cols.tolist())]
    scored = [item for item in scored if item[0] >= threshold]
    scored.sort(key=lambda item: (-item[0], p_idx[item[1]], g_idx[item[2]]))
    pairs: list[tuple[int, int]] = []
    for _, r, c in scored:
        i, j = int(p_idx[r]), int(g_idx[c])
        if pred_free[i] and gold_free[j]:
            pairs.append((i, j))
            pred_free[i] = gold_free[j] = False
    return pairs


def _match_prepared(pred: list, gold: list, fuzzy_threshold: float) -> list[tuple[int, int]]:
    pred_free = np.ones(len(pred), dtype=bool)
    gold_free = np.ones(len(gold), dtype=bool)
    pairs = _exact_stage(pred, gold, pred_free, gold_free, use_titles=False)
    pairs += _exact_stage(pred, gold, pred_free, gold_free, use_titles=True)
    pairs += _fuzzy_stage(pred, gold, pred_free, gold_free, fuzzy_threshold)
    return sorted(pairs)


def match_references(
    predicted: Sequence[Mapping[str, str | None]],
    gold: Sequence[Mapping[str, str | None]],
    fuzzy_threshold: float = 0.9,
) -> list[tuple[int, int]]:
    """One-to-one matching of predicted to gold references.

    Each reference is a dict with optional ``title``, ``doi``, ``arxiv_id`` and
    ``url`` (other keys such as authors are ignored).  Returns the matched
    ``(pred_index, gold_index)`` pairs sorted by predicted index; no predicted
    and no gold entry appears twice.  Stages: identifiers, exact normalised
    title, then fuzzy title similarity (:func:`title_similarity`) ≥
    ``fuzzy_threshold`` — see the module docstring.  ``fuzzy_threshold=1``
    disables fuzzy matching beyond exact titles.
    """
    threshold = check_real(fuzzy_threshold, "fuzzy_threshold", low=0.0, high=1.0, low_open=True)
    return _match_prepared(_prepare(predicted, "predicted"), _prepare(gold, "gold"), threshold)


def _dedup_prepared(entries: list) -> list[int]:
    """Indices of the first entry of each group sharing an identifier or exact title."""
    parent = list(range(len(entries)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_seen: dict[Any, int] = {}
    for i, (keys, title) in enumerate(entries):
        for key in keys + ([("title", title)] if title else []):
            if key in first_seen:
                a, b = find(i), find(first_seen[key])
                parent[max(a, b)] = min(a, b)
            else:
                first_seen[key] = i
    return [i for i in range(len(entries)) if find(i) == i]


def deduplicate_references(refs: Sequence[Mapping[str, str | None]]) -> list[int]:
    """Indices (ascending) of the references kept after deduplication.

    References sharing any normalised identifier (DOI, arXiv id, URL) or the
    exact normalised title are the same work (transitively); the first
    occurrence of each work is kept.  Near-duplicate titles are *not* merged.
    """
    return _dedup_prepared(_prepare(refs, "refs"))


def upstream_title_key(title: str) -> str:
    """ReportBench's released title normalisation: lowercase, ASCII punctuation dropped,
    whitespace collapsed ("A/B Testing" → "ab testing")."""
    if not isinstance(title, str):
        fail(f"title must be a string; got {type(title).__name__}")
    return " ".join(title.lower().translate(_ASCII_PUNCTUATION).split())


def scisage_upstream_similar(generated: str, gold: str) -> bool:
    """SciSage's released title test (``eval/reference_eval.py`` ``is_similar``): the lower-cased,
    stripped generated title against each piece of the lower-cased gold title split at
    ``.!?。`` and newlines (each piece stripped), similar when difflib's
    ``SequenceMatcher(None, generated, piece).ratio()`` (default autojunk, generated title
    first) reaches 0.8 for some piece. An empty generated title matches a gold title with an
    empty piece (one ending in a period): ``SequenceMatcher`` rates two empty strings 1.0."""
    if not isinstance(generated, str) or not isinstance(gold, str):
        fail("scisage_upstream_similar expects two strings")
    sentence = generated.strip().lower()
    return any(SequenceMatcher(None, sentence, piece.strip()).ratio() >= SCISAGE_UPSTREAM_SIMILARITY
               for piece in _SCISAGE_SUB_SENTENCE.split(gold.lower()))


def _prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def pooled_reference_prf(tp: Sequence[int], n_predicted: Sequence[int], n_gold: Sequence[int]) -> dict[str, float | int]:
    """Precision, recall and F1 of counts pooled over papers (SciSage's released scorer):
    precision = Σ TP / Σ |A|, recall = Σ TP / Σ |B|, F1 their harmonic mean — not the mean of
    per-paper values (two papers 1/1 and 0/10 pool to F1 = 1/11, where the mean is 0.5).
    Ratios with an empty denominator are 0 (the released code divides by zero)."""
    counts = [list(map(int, _arrays_of(v, name))) for v, name in
              ((tp, "tp"), (n_predicted, "n_predicted"), (n_gold, "n_gold"))]
    if len({len(c) for c in counts}) != 1:
        fail("tp, n_predicted and n_gold must have one entry per paper")
    total_tp, total_pred, total_gold = (sum(c) for c in counts)
    precision, recall, f1 = _prf(total_tp, total_pred, total_gold)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": total_tp, "n_predicted": total_pred,
            "n_gold": total_gold, "papers": len(counts[0])}


def _arrays_of(values: Any, name: str) -> list[int]:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
        fail(f"{name} must be a list of counts; got {type(values).__name__}")
    for k, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            fail(f"{name}[{k}] must be a non-negative integer count; got {v!r}")
    return list(values)


def _titles(refs: Any, name: str) -> list[str]:
    _prepare(refs, name)  # the same validation as the paper's variant
    return [ref.get("title") or "" for ref in refs]


def _upstream_prf(predicted: Any, gold: Any, variant: str) -> dict[str, float | int]:
    pred, gold_titles = _titles(predicted, "predicted"), _titles(gold, "gold")
    if variant == "reportbench_upstream":  # exact match of the normalised title sets
        a = {k for k in map(upstream_title_key, pred) if k}
        b = {k for k in map(upstream_title_key, gold_titles) if k}
        tp, n_pred, n_gold = len(a & b), len(a), len(b)
    else:  # scisage_upstream: every (gold, generated) pair similar by the released test counts, many-to-many;
        # every entry counts, an empty title too (a missing title is taken as "")
        tp = sum(scisage_upstream_similar(x, y) for y in gold_titles for x in pred)
        n_pred, n_gold = len(pred), len(gold_titles)
    precision, recall, f1 = _prf(tp, n_pred, n_gold)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "n_predicted": n_pred, "n_gold": n_gold}


def reference_prf(
    predicted: Sequence[Mapping[str, str | None]],
    gold: Sequence[Mapping[str, str | None]],
    *,
    deduplicate: bool = True,
    fuzzy_threshold: float = 0.9,
    variant: str = "paper",
) -> dict[str, float | int]:
    """Reference precision, recall and F1 on a 0–1 scale (ReportBench §3.2; SciSage §5.1.3).

    TP = |A ∩ B| (matched pairs, :func:`match_references`), precision =
    TP / |A|, recall = TP / |B|, F1 = their harmonic mean.  The papers define
    A and B as sets, so by default both lists are deduplicated first
    (:func:`deduplicate_references`); ``deduplicate=False`` counts every list
    entry.  Empty inputs give 0 for the undefined ratios, never an error.
    Also returns ``n_predicted`` and ``n_gold`` (after deduplication).

    ``variant`` reproduces a released scorer by name: ``"reportbench_upstream"`` counts exact
    matches of :func:`upstream_title_key` titles (sets, titles only); ``"scisage_upstream"``
    counts every (predicted, gold) title pair that :func:`scisage_upstream_similar` accepts as a
    true positive, many to many, so a title matching several counts several times (precision or
    recall can exceed 1), over every entry of both lists (empty titles included, no
    deduplication). The released SciSage scorer pools its counts over papers: aggregate a
    system's per-paper results with :func:`pooled_reference_prf`, not by averaging.
    """
    check_choice(variant, "variant", REFERENCE_VARIANTS)
    if variant != "paper":
        return _upstream_prf(predicted, gold, variant)
    if not isinstance(deduplicate, bool):
        fail(f"deduplicate must be True or False; got {deduplicate!r}")
    threshold = check_real(fuzzy_threshold, "fuzzy_threshold", low=0.0, high=1.0, low_open=True)
    pred, gold_entries = _prepare(predicted, "predicted"), _prepare(gold, "gold")
    if deduplicate:
        pred = [pred[i] for i in _dedup_prepared(pred)]
        gold_entries = [gold_entries[i] for i in _dedup_prepared(gold_entries)]
    tp = len(_match_prepared(pred, gold_entries, threshold))
    precision = tp / len(pred) if pred else 0.0
    recall = tp / len(gold_entries) if gold_entries else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tp": tp,
        "n_predicted": len(pred),
        "n_gold": len(gold_entries),
    }
