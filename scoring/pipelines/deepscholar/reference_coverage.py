"""``deepscholar.reference_importance`` and reference coverage: the exemplar's important references S cites.

target_kind ``gold_reference``, target_id the GoldReference. Importance belongs to the task, not
to the report: it is asked once per task and configuration — a finished verdict on the same
question stored for another report of the task is copied (``raw_response["copied_from"]``), and
the asking is serialised per task (a PostgreSQL advisory lock). A reference an expert settled,
or one whose release labelled importance (:func:`importance_known`), is not asked.
``reference_coverage`` = |cited ∩ E| / |E| over the references whose importance is known.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from contextlib import contextmanager

from django.db import connection, transaction

from benchmark.models import BibEntry, GoldReference, Origin, ReviewStatus, Task
from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import match_references, reference_coverage
from scoring.models import Verdict

from ..base import fingerprint
from ..verdicts import Decision, Pending, ask_one_each, reusable, stored_verdicts, upsert_verdicts, verdict_fields
from .documents import Document, work_ids
from .inputs import query_text

IMPORTANCE = "deepscholar.reference_importance"
IMPORTANCE_KIND = "gold_reference"
IMPORTANCE_LABELS = {"important": 1.0, "not_important": 0.0}
SETTLED_IMPORTANCE = (ReviewStatus.ACCEPTED, ReviewStatus.EDITED)
_LOCK_NAMESPACE = 0x05D5  # pg_advisory_lock(int, int): a key space of its own, apart from the run jobs' bigint keys


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


def _decide_importance(data: Mapping) -> Decision:
    important = data.get("important")
    if not isinstance(important, bool):
        return Decision(error=f"malformed answer: 'important' must be true or false, got {important!r}")
    label = "important" if important else "not_important"
    return Decision(label=label, score=IMPORTANCE_LABELS[label])


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


def ask_importance(*, run, report, judge: Judge) -> None:
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


def score_reference_coverage(*, task, references: list[GoldReference], retrieved: list[Document], query: str,
                             stored) -> tuple[dict, list[str]]:
    """(metrics, notes): the share of the exemplar's important references that S cites."""
    important: dict[int, bool] = {}
    for ref in references:
        if importance_known(ref, task):
            important[ref.id] = ref.important
            continue
        label = stored.label_of((IMPORTANCE_KIND, ref.id, "", 0), fingerprint(query, reference_document(ref.bib_entry)),
                                IMPORTANCE_LABELS)
        if label is not None:
            important[ref.id] = label == "important"
    gold = [work_ids(r.bib_entry.title, r.bib_entry.url, r.bib_entry.arxiv_id, r.bib_entry.doi) for r in references]
    pred = [work_ids(d.title, d.url, d.arxiv_id, d.doi) for d in retrieved]
    cited_refs = [references[j].id for _, j in match_references(pred, gold)] if pred and gold else []
    important_ids = [i for i, flag in important.items() if flag]
    metrics = {
        "reference_coverage": reference_coverage(cited_refs, important_ids) if important_ids else None,
        "important_references": len(important_ids),
        "important_cited": len(set(cited_refs) & set(important_ids)),
        "references_with_importance": len(important),
    }
    notes = []
    if references and important and not important_ids:
        notes.append("no exemplar reference is important: reference coverage is undefined")
    return metrics, notes
