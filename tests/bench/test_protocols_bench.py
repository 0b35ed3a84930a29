"""The per-protocol calls-and-tokens benchmark at its smallest size: one report per protocol, no latency.

No timing is asserted (the machine is shared). What is asserted: every protocol's run made the calls its
pipeline needs for that report (counted independently of the bench's own bookkeeping), the token sums are
the stored ``LLMCall`` rows', the re-run of the same configuration made no request, and the rows' shape.
"""

import re

import pytest
from django.db.models import Sum

from bench.protocols_bench import IDEAL_TARGET, PROTOCOLS, REPORTBENCH_CITED, figures_of, measure
from benchmark.models import Report
from scoring.models import EvaluationRun, LLMCall
from scoring.pipelines.deepsynth import checklist_for_scoring

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _evaluated_report(protocol: str) -> Report:
    first_run = EvaluationRun.objects.filter(protocol=protocol).order_by("pk").first()
    (report_id,) = set(first_run.jobs.values_list("report", flat=True))
    return Report.objects.get(pk=report_id)


def test_one_report_per_protocol_counts_calls_tokens_and_a_rerun_without_requests(datasets):
    results = {r["protocol"]: r for r in measure(reports=1, latency=0.0, echo=False)}
    assert list(results) == [p.name for p in PROTOCOLS] == [
        "deepsynth", "reportbench", "deepscholar", "surveylens", "surveyscope"]

    for name, result in results.items():
        runs = list(EvaluationRun.objects.filter(protocol=name).order_by("pk"))
        assert len(runs) == 2 and all(run.status == "finished" for run in runs), name
        first, second = runs
        assert result["reports"] == 1, name
        stored = LLMCall.objects.filter(run=first)
        assert result["calls"] == stored.count() > 0, name
        assert result["failed_calls"] == 0 == stored.filter(ok=False).count(), name
        sums = stored.aggregate(tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"))
        assert (result["tokens_in"], result["tokens_out"]) == (sums["tokens_in"], sums["tokens_out"]), name
        assert result["tokens_in"] > result["tokens_out"] > 0, name  # prompts hold the report; answers are short
        # every LLM call is one request; SurveyLens also sends its embedding requests
        assert result["requests"] >= result["calls"], name
        assert (result["rerun_requests"], result["rerun_calls"]) == (0, 0), name
        assert not LLMCall.objects.filter(run=second).exists(), name
        assert 1 <= result["max_in_flight"] <= 8, name

    # the calls each pipeline needs for its one report, counted from the data, not from the run
    deepsynth_report = _evaluated_report("deepsynth")
    assert results["deepsynth"]["calls"] == len(checklist_for_scoring(deepsynth_report.task))  # one per group
    reportbench_text = _evaluated_report("reportbench").text
    cited = len(re.findall(r"\[\d+\]\.", reportbench_text.split("## References")[0]))
    assert cited == REPORTBENCH_CITED
    # two extractions, a consistency check per cited statement, a factuality check for the uncited one
    assert results["reportbench"]["calls"] == 2 + cited + 1
    assert results["surveylens"]["calls"] == 3 + 2  # a rubric call per component, pairwise in both orders
    assert results["surveyscope"]["calls"] == 2 + 2  # quality, section structure, pairwise in both orders
    assert results["surveylens"]["requests"] > results["surveylens"]["calls"]  # its embeddings
    assert results["surveyscope"]["requests"] == results["surveyscope"]["calls"]
    assert results["deepscholar"]["calls"] > 20

    for result in results.values():
        rows = figures_of(result)
        assert [row["figure"].split(": ", 1)[0] for row in rows] == [result["protocol"]] * 5
        assert all(set(row) == {"figure", "value", "target", "unit", "better"} for row in rows)
        assert all(row["better"] == "lower" for row in rows)
        per_report, tokens_in, tokens_out, wall, rerun = rows
        assert (per_report["value"], per_report["target"]) == (result["calls"], None)
        assert (tokens_in["value"], tokens_out["value"]) == (result["tokens_in"], result["tokens_out"])
        assert wall["target"] == IDEAL_TARGET and wall["unit"] == "×"
        assert (rerun["value"], rerun["target"]) == (0, 0)
