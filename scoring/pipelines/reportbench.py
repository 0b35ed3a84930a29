"""ReportBench (paper §3.1–3.2): references, cited statements and non-cited statements.

Three independent job steps per report (they may run in any order, in parallel):

``reportbench.references``
    The report's own reference list from the stored parse (title, URL, arXiv id, DOI); only
    when the parse found none is the judge asked (``reportbench.reference_titles``). Each
    predicted reference gets a verdict (target_kind ``report_reference``, target_key its
    index, label matched / unmatched / duplicate) against the task's gold references (not
    rejected; BibEntry title, arXiv id, DOI, URL), so the matching is auditable. No judge
    call when the parse has references. Score: :func:`reference_prf` (deduplicated sets).
    With ``{"variants": {"references": "reportbench_upstream"}}`` the released scorer is
    reproduced: exact normalised titles, after dropping the references the judge marks not
    academic (``reportbench.academic_reference``, one call per reference, see
    ``reportbench_academic``); ``not_academic`` and ``academic_failed`` count them.

``reportbench.cited_statements``
    The judge extracts the cited statements (stored as ``Statement`` rows, kind cited);
    each statement's cited source is resolved from what is stored — the matching
    ``BibEntry`` abstract, else the text of a matching ``Report.sources`` document, else
    (only when a ``SOURCE_FETCHER`` is configured, see ``scoring.sources``) the fetched page — and ``reportbench.consistency`` decides whether it supports the statement.
    A statement without source text gets a verdict with error "source not available" (no
    call). Score: :func:`match_rate` over the judged statements.

``reportbench.uncited_statements``
    The judge extracts the non-cited factual statements (kind uncited); each is asked
    ``reportbench.factuality`` ``JudgeConfig.repeats`` times; the decision is the
    :func:`majority_vote` over the finished repeats and :func:`factual_accuracy` leaves
    ties out. The offline judge does not support factuality: its answers are per-item
    errors, the statements count as failed and the metric is ``None``.

An extraction is recorded as a verdict too (target_kind ``statement_extraction`` /
``reference_extraction``, target_key the statement kind), carrying the call's cost and
the fingerprint of the report text: a re-run with the same configuration and text reuses
it and the statements, and reuses every finished verdict, so it makes no call. Errored
verdicts are retried in place; a changed report text is extracted and judged again.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction

from scoring.judges.base import Judge, JudgeCall
from scoring.metrics import (
    deduplicate_references,
    factual_accuracy,
    majority_vote,
    match_rate,
    match_references,
    reference_prf,
)
from scoring.models import Statement, Verdict

from .base import BasePipeline, fingerprint, record_answer, variant_option
from .reportbench_academic import ACADEMIC_KIND, academic_filter, ask_academic
from .report_sources import (
    SourceResolver,
    cited_passage,
    gold_references,
    parsed_references,
    reference_dict,
    source_not_available,
)
from .verdicts import (
    RAW_TEXT_LIMIT,
    Pending,
    answer_error,
    ask_one_each,
    cost_share,
    reusable,
    stored_verdicts,
    upsert_verdicts,
    verdict_fields,
)


REFERENCES = "reportbench.references"
CITED = "reportbench.cited_statements"
UNCITED = "reportbench.uncited_statements"
CONSISTENCY = "reportbench.consistency"
FACTUALITY = "reportbench.factuality"
REFERENCE_TITLES = "reportbench.reference_titles"
STEPS = [REFERENCES, CITED, UNCITED]

REFERENCE_KIND = "report_reference"
REFERENCE_EXTRACTION_KIND = "reference_extraction"
EXTRACTION_KIND = "statement_extraction"
CITED_KIND = "cited_statement"
UNCITED_KIND = "uncited_statement"

CONSISTENCY_LABELS = {"consistent": 1.0, "inconsistent": 0.0}
FACTUALITY_LABELS = {"correct": 1.0, "incorrect": 0.0}
REFERENCE_LABELS = {"matched": 1.0, "unmatched": 0.0, "duplicate": None}
EXTRACTED = "extracted"
REFERENCE_VARIANTS = ("paper", "reportbench_upstream")



# --- the pipeline ----------------------------------------------------------------------------------------------


class ReportBenchPipeline(BasePipeline):
    protocol = "reportbench"

    def steps_for(self, report) -> list[str]:
        return list(STEPS)

    def run_step(self, *, run, report, step: str, judge: Judge) -> None:
        if step == REFERENCES:
            self._run_references(run=run, report=report, judge=judge)
        elif step == CITED:
            statements = self._extract(run=run, report=report, judge=judge, kind=Statement.Kind.CITED)
            self._judge_cited(run=run, report=report, judge=judge, statements=statements)
        elif step == UNCITED:
            statements = self._extract(run=run, report=report, judge=judge, kind=Statement.Kind.UNCITED)
            self._judge_uncited(run=run, report=report, judge=judge, statements=statements)
        else:
            raise ValueError(f"the ReportBench pipeline has no step {step!r} (it has {', '.join(STEPS)})")

    # --- references ---------------------------------------------------------------------------------------------

    def _run_references(self, *, run, report, judge: Judge) -> None:
        parsed = parsed_references(report)
        predicted = [reference_dict(r.title, r.url, r.arxiv_id, r.doi) for r in parsed]
        source = "parse"
        if not predicted:
            source = "judge"
            predicted = self._judge_references(run=run, report=report, judge=judge)
            if predicted is None:
                return  # the extraction failed: recorded as an errored verdict, retried on a re-run
        if variant_option(run.judge_config, "references", REFERENCE_VARIANTS) == "reportbench_upstream":
            # the released scorer's filter: which references are academic papers (reportbench_academic)
            ask_academic(run=run, report=report, judge=judge, predicted=predicted)
        gold = gold_references(report.task)
        labels = reference_labels(predicted, gold)
        gold_hash = fingerprint([{k: g[k] for k in ("title", "url", "arxiv_id", "doi")} for g in gold])
        rows = []
        for index, (ref, (label, gold_index)) in enumerate(zip(predicted, labels, strict=True)):
            raw = {
                "input_hash": fingerprint(ref, gold_hash), "reference": ref, "source": source,
                "gold": gold[gold_index] if gold_index is not None else None,
            }
            rows.append(Verdict(
                **verdict_fields(run, report, step=REFERENCES, kind=REFERENCE_KIND, key=str(index)),
                label=label, score=REFERENCE_LABELS[label], raw_response=raw,
                evidence=(gold[gold_index]["title"] if gold_index is not None else ""),
            ))
        config = run.judge_config
        with transaction.atomic():
            # a shorter reference list than last time: the verdicts past its end no longer exist
            stale = Verdict.objects.filter(
                report=report, judge_config=config, prompt_version=config.prompt_version, target_kind=REFERENCE_KIND,
            ).exclude(target_key__in=[str(i) for i in range(len(predicted))])
            stale.delete()
            upsert_verdicts(rows, run=run, report=report, labels=REFERENCE_LABELS)

    def _judge_references(self, *, run, report, judge: Judge) -> list[dict] | None:
        """``reportbench.reference_titles``, reused from its stored extraction verdict when the text is unchanged."""
        input_hash = fingerprint(report.text)
        key = (REFERENCE_EXTRACTION_KIND, 0, "references", 0)
        existing = stored_verdicts(run, report, [REFERENCE_EXTRACTION_KIND]).get(key)
        if reusable(existing, input_hash, {EXTRACTED}) and isinstance(existing.raw_response, dict) and isinstance(
            existing.raw_response.get("references"), list
        ):
            return existing.raw_response["references"]
        answer = judge.answer_many([JudgeCall(step=REFERENCE_TITLES, variables={"report": report.text})])[0]
        refs, error = None, ""
        if not answer.ok:
            error = answer_error(answer)
        else:
            entries = answer.data.get("references") if isinstance(answer.data, dict) else None
            if not isinstance(entries, list):
                error = "malformed answer: no 'references' list"
            else:
                refs = [
                    reference_dict(str(e.get("title") or ""), str(e.get("url") or ""))
                    for e in entries if isinstance(e, dict) and (e.get("title") or e.get("url"))
                ]
        raw = {"input_hash": input_hash}
        if refs is None:
            raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
        else:
            raw["references"] = refs
        with transaction.atomic():
            call = record_answer(answer, run=run, step=REFERENCE_TITLES)
            row = Verdict(
                **verdict_fields(run, report, step=REFERENCE_TITLES, kind=REFERENCE_EXTRACTION_KIND, key="references"),
                label=EXTRACTED if refs is not None else "", score=float(len(refs)) if refs is not None else None,
                error=error, raw_response=raw, call=call, **cost_share(answer, 1)[0],
            )
            upsert_verdicts([row], run=run, report=report, labels={EXTRACTED})
        return refs

    # --- statements ---------------------------------------------------------------------------------------------

    def _extract(self, *, run, report, judge: Judge, kind: str) -> list[Statement]:
        """The report's statements of ``kind``: stored ones when their extraction is reusable, else asked for."""
        config = run.judge_config
        step = CITED if kind == Statement.Kind.CITED else UNCITED
        target_kind = CITED_KIND if kind == Statement.Kind.CITED else UNCITED_KIND
        input_hash = fingerprint(report.text)
        stored = list(
            Statement.objects.filter(
                report=report, judge_config=config, prompt_version=config.prompt_version, kind=kind
            ).order_by("position")
        )
        marker = stored_verdicts(run, report, [EXTRACTION_KIND]).get((EXTRACTION_KIND, 0, kind, 0))
        if reusable(marker, input_hash, {EXTRACTED}):
            return stored
        if marker is None and stored:
            return stored  # imported statements, no extraction recorded: trusted
        answer = judge.answer_many([JudgeCall(step=step, variables={"report": report.text})])[0]
        found, error = None, ""
        if not answer.ok:
            error = answer_error(answer)
        else:
            entries = answer.data.get("statements") if isinstance(answer.data, dict) else None
            if not isinstance(entries, list):
                error = "malformed answer: no 'statements' list"
            else:
                found = []
                for entry in entries:
                    text = str(entry.get("text") or "").strip() if isinstance(entry, dict) else ""
                    if not text:
                        continue
                    cites = entry.get("citations") if kind == Statement.Kind.CITED else []
                    found.append((text, [str(c) for c in cites] if isinstance(cites, list) else []))
        raw = {"input_hash": input_hash}
        if found is None:
            raw["raw"] = (answer.raw or "")[:RAW_TEXT_LIMIT]
        with transaction.atomic():
            call = record_answer(answer, run=run, step=step)
            if found is not None:
                old_ids = [s.id for s in stored]
                if old_ids:  # the text changed: the old statements and their verdicts go
                    Verdict.objects.filter(
                        report=report, judge_config=config, prompt_version=config.prompt_version,
                        target_kind=target_kind, target_id__in=old_ids,
                    ).delete()
                    Statement.objects.filter(id__in=old_ids).delete()
                stored = Statement.objects.bulk_create([
                    Statement(report=report, judge_config=config, prompt_version=config.prompt_version, kind=kind,
                              position=i, text=text, citations=cites)
                    for i, (text, cites) in enumerate(found)
                ])
            row = Verdict(
                **verdict_fields(run, report, step=step, kind=EXTRACTION_KIND, key=kind),
                label=EXTRACTED if found is not None else "", score=float(len(found)) if found is not None else None,
                error=error, raw_response=raw, call=call, **cost_share(answer, 1)[0],
            )
            upsert_verdicts([row], run=run, report=report, labels={EXTRACTED})
        return stored if found is not None else []

    def _judge_cited(self, *, run, report, judge: Judge, statements: list[Statement]) -> None:
        if not statements:
            return
        resolver = SourceResolver(report)
        existing = stored_verdicts(run, report, [CITED_KIND])
        pending, unavailable = [], []
        for statement in statements:
            sources = resolver.sources_for(statement.citations)
            passage = cited_passage(sources)
            input_hash = fingerprint(statement.text, passage)
            if reusable(existing.get((CITED_KIND, statement.id, "", 0)), input_hash, CONSISTENCY_LABELS):
                continue
            extra = {"sources": [{k: v for k, v in s.items() if k != "text"} for s in sources]}
            if not passage:
                unavailable.append(Verdict(
                    **verdict_fields(run, report, step=CONSISTENCY, kind=CITED_KIND, target_id=statement.id),
                    error=source_not_available(resolver.last_refused),
                    raw_response={"input_hash": input_hash, "citations": statement.citations},
                ))
                continue
            call = JudgeCall(step=CONSISTENCY, variables={"statement": statement.text, "passage": passage})
            pending.append(Pending(call, statement.id, input_hash, extra=extra, evidence=passage))
        if unavailable:
            with transaction.atomic():
                upsert_verdicts(unavailable, run=run, report=report, labels=CONSISTENCY_LABELS)
        ask_one_each(judge, pending, run=run, report=report, kind=CITED_KIND, labels=CONSISTENCY_LABELS)

    def _judge_uncited(self, *, run, report, judge: Judge, statements: list[Statement]) -> None:
        existing = stored_verdicts(run, report, [UNCITED_KIND])
        pending = []
        for repeat in range(run.judge_config.repeats):
            for statement in statements:
                input_hash = fingerprint(statement.text)
                if reusable(existing.get((UNCITED_KIND, statement.id, "", repeat)), input_hash, FACTUALITY_LABELS):
                    continue
                call = JudgeCall(step=FACTUALITY, variables={"statement": statement.text}, repeat=repeat)
                pending.append(Pending(call, statement.id, input_hash))
        ask_one_each(judge, pending, run=run, report=report, kind=UNCITED_KIND, labels=FACTUALITY_LABELS)

    # --- scoring ------------------------------------------------------------------------------------------------

    def score_report(self, *, run, report) -> dict:
        config = run.judge_config
        rows = list(
            Verdict.objects.filter(
                report=report, judge_config=config, prompt_version=config.prompt_version,
                target_kind__in=[REFERENCE_KIND, REFERENCE_EXTRACTION_KIND, EXTRACTION_KIND, CITED_KIND, UNCITED_KIND,
                                 ACADEMIC_KIND],
            ).values("target_kind", "target_id", "target_key", "repeat", "label", "error", "raw_response")
        )
        by_kind: dict[str, list[dict]] = defaultdict(list)
        for row in rows:
            by_kind[row["target_kind"]].append(row)
        judged = failed = 0

        # references: the paper's matching, or the released code's ({"variants": {"references": "reportbench_upstream"}})
        reference_variant = variant_option(config, "references", REFERENCE_VARIANTS)
        refs = sorted((r for r in by_kind[REFERENCE_KIND] if not r["error"]), key=lambda r: int(r["target_key"]))
        extraction = next(iter(by_kind[REFERENCE_EXTRACTION_KIND]), None)
        ref_metrics = {"precision": None, "recall": None, "f1": None, "tp": None, "references": None}
        if refs or (extraction and not extraction["error"] and extraction["label"] == EXTRACTED):
            predicted = [r["raw_response"]["reference"] for r in refs]
            gold = [{k: g[k] for k in ("title", "url", "arxiv_id", "doi")} for g in gold_references(report.task)]
            academic = {}
            if reference_variant == "reportbench_upstream":  # the released scorer drops non-academic references
                predicted, academic = academic_filter(predicted, by_kind[ACADEMIC_KIND])
                judged += len(refs) - academic["academic_failed"]
                failed += academic["academic_failed"]
            prf = reference_prf(predicted, gold, variant=reference_variant)
            ref_metrics = {
                "precision": prf["precision"], "recall": prf["recall"], "f1": prf["f1"], "tp": prf["tp"],
                "references": prf["n_predicted"], **academic,
            }
            ref_metrics["gold_references"] = prf["n_gold"]
            judged += len(refs)
        elif extraction and extraction["error"]:
            failed += 1

        text_hash = fingerprint(report.text)
        markers = {r["target_key"]: r for r in by_kind[EXTRACTION_KIND]}

        def current_ids(kind: str) -> set[int]:
            """The statements of ``kind`` that belong to the current text: their extraction finished on
            this text (or was imported without a record); a failed extraction counts as one failed item."""
            nonlocal failed
            marker = markers.get(kind)
            if marker is not None and (marker["error"] or marker["label"] != EXTRACTED):
                failed += 1
                return set()
            recorded = marker["raw_response"].get("input_hash") if marker and isinstance(
                marker["raw_response"], dict) else None
            if recorded is not None and recorded != text_hash:
                return set()  # extracted from an older text: not scored until re-run
            return set(Statement.objects.filter(
                report=report, judge_config=config, prompt_version=config.prompt_version, kind=kind
            ).values_list("id", flat=True))

        cited_ids = current_ids(Statement.Kind.CITED)
        uncited_ids = current_ids(Statement.Kind.UNCITED)

        # cited statements: one consistency verdict each
        flags = {
            r["target_id"]: r["label"] == "consistent"
            for r in by_kind[CITED_KIND]
            if r["target_id"] in cited_ids and r["repeat"] == 0 and not r["error"] and r["label"] in CONSISTENCY_LABELS
        }
        cited_failed = len(cited_ids) - len(flags)
        judged += len(flags)
        failed += cited_failed

        # non-cited statements: majority over the finished repeats; a tie is not verified (paper and released
        # code), or left out with the judge configuration's options {"variants": {"factual_accuracy_ties": "exclude"}}
        votes: dict[int, list[bool]] = defaultdict(list)
        for r in by_kind[UNCITED_KIND]:
            if (r["target_id"] in uncited_ids and r["repeat"] < config.repeats and not r["error"]
                    and r["label"] in FACTUALITY_LABELS):
                votes[r["target_id"]].append(r["label"] == "correct")
        decisions = [majority_vote(v)["decision"] for v in votes.values() if v]
        uncited_failed = len(uncited_ids) - len(decisions)
        judged += len(decisions)
        failed += uncited_failed

        ties = variant_option(config, "factual_accuracy_ties", ("count_as_wrong", "exclude"))
        metrics = {
            **ref_metrics,
            "variants": {"factual_accuracy_ties": ties, "references": reference_variant},
            "match_rate": match_rate(list(flags.values())) if flags else None,
            "cited_statements": len(cited_ids),
            "cited_judged": len(flags),
            "cited_failed": cited_failed,
            "factual_accuracy": factual_accuracy(decisions, ties=ties) if decisions else None,
            "uncited_statements": len(uncited_ids),
            "uncited_judged": len(decisions),
            "uncited_failed": uncited_failed,
            "uncited_ties": sum(1 for d in decisions if d is None),
            "repeats": config.repeats,
        }
        return {"metrics": metrics, "items_judged": judged, "items_failed": failed}


def reference_labels(predicted: list[dict], gold: list[dict]) -> list[tuple[str, int | None]]:
    """Per predicted reference: matched (with the gold index), unmatched, or duplicate (of an earlier
    entry: :func:`reference_prf` counts sets, so duplicates count neither way)."""
    strip = [{k: r.get(k, "") for k in ("title", "url", "arxiv_id", "doi")} for r in predicted]
    gold_strip = [{k: g.get(k, "") for k in ("title", "url", "arxiv_id", "doi")} for g in gold]
    keep = deduplicate_references(strip) if strip else []
    gold_keep = deduplicate_references(gold_strip) if gold_strip else []
    pairs = match_references([strip[i] for i in keep], [gold_strip[j] for j in gold_keep]) if keep and gold_keep else []
    matched = {keep[i]: gold_keep[j] for i, j in pairs}
    kept = set(keep)
    out = []
    for i in range(len(predicted)):
        if i not in kept:
            out.append(("duplicate", None))
        elif i in matched:
            out.append(("matched", matched[i]))
        else:
            out.append(("unmatched", None))
    return out
