"""ReportBench's ``reportbench_upstream`` reference variant against the released scorer's own outputs.

``tests/fixtures/upstream/reportbench.json`` holds what ByteDance-BandAI/ReportBench's
``related_work_evaluator.py`` (``analyze_papers`` then ``evaluate_predictions``) computed for a report
citing four pages, its LLM replaced by a rule: a page is an academic paper when its URL is on arxiv.org
or openreview.net. Here the same references go through our pipeline, the academic filter asked of the
offline judge (its scholarly-host heuristic gives the rule's answers on these URLs) and of a scripted judge
applying the rule itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmark.models import Protocol
from scoring.judges import judge_for
from scoring.judges.base import Judge, JudgeAnswer, JudgeCall
from scoring.models import EvaluationRun, Verdict
from scoring.pipelines import PIPELINES
from scoring.pipelines.reportbench import REFERENCES
from scoring.pipelines.reportbench_academic import ACADEMIC, ACADEMIC_KIND, academic_filter
from tests.factories import BibEntryFactory, GoldReferenceFactory, TaskFactory
from tests.scoring.pipelines.test_reportbench import make_report
from tests.scoring.services.fakes import judge_config

FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures/upstream/reportbench.json").read_text())
pipeline = PIPELINES["reportbench"]


def report_text() -> str:
    lines = [f"[{k + 1}] {page['content'].splitlines()[0].lstrip('# ')}. {page['url']}"
             for k, page in enumerate(FIXTURE["pages"])]
    cites = " ".join(f"[{k + 1}]" for k in range(len(lines)))
    return f"# Widgets\n\nWidgets are studied in several works {cites}.\n\n## References\n\n" + "\n".join(lines) + "\n"


@pytest.fixture
def case():
    task = TaskFactory(protocol=Protocol.REPORTBENCH)
    for position, title in enumerate(FIXTURE["gold"]):
        GoldReferenceFactory(task=task, bib_entry=BibEntryFactory(title=title), position=position)
    return task, make_report(task, text=report_text())


class RuleJudge(Judge):
    """The fixture's LLM rule, answering only the academic question."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.calls: list[JudgeCall] = []

    def answer(self, call: JudgeCall) -> JudgeAnswer:
        self.calls.append(call)
        assert call.step == ACADEMIC
        host = re.sub(r"^www\.", "", re.match(r"https?://([^/]+)", call.variables["url"]).group(1))
        return JudgeAnswer(data={"is_academic_paper": host in ("arxiv.org", "openreview.net"), "reason": "rule"},
                           raw="{}", model="rule")


def score(config, report, judge) -> dict:
    run = EvaluationRun.objects.create(protocol="reportbench", judge_config=config)
    pipeline.run_step(run=run, report=report, step=REFERENCES, judge=judge)
    return pipeline.score_report(run=run, report=report)


def test_fixture_names_the_released_code():
    assert FIXTURE["repository"] == "ByteDance-BandAI/ReportBench"
    assert re.fullmatch(r"[0-9a-f]{40}", FIXTURE["commit"])


@pytest.mark.django_db
@pytest.mark.parametrize("which", ["offline", "rule"])
def test_the_upstream_variant_drops_non_academic_references_as_the_released_scorer(case, which):
    task, report = case
    config = judge_config(options={"variants": {"references": "reportbench_upstream"}})
    judge = judge_for(config) if which == "offline" else RuleJudge(config)
    result = score(config, report, judge)
    m, released = result["metrics"], FIXTURE["upstream"]
    assert (m["references"], m["gold_references"], m["tp"]) == (
        released["predicted_count"], released["ground_truth_count"], released["intersection_count"])
    assert (m["precision"], m["recall"], m["f1"]) == (
        pytest.approx(released["precision"]), pytest.approx(released["recall"]), pytest.approx(released["f1_score"]))
    assert (m["not_academic"], m["academic_failed"]) == (2, 0)
    labels = dict(Verdict.objects.filter(report=report, target_kind=ACADEMIC_KIND).values_list("target_key", "label"))
    expected = {str(k): "academic" if a["is_academic_paper"] else "not_academic"
                for k, a in enumerate(FIXTURE["analysis"])}
    assert labels == expected
    # a second run of the same configuration asks nothing again
    again = RuleJudge(config)
    score(config, report, again)
    assert again.calls == []


@pytest.mark.django_db
def test_without_the_filter_the_counts_are_the_unfiltered_ones(case):
    """Before: the variant matched titles without asking which references are papers (0.750 / 0.750)."""
    task, report = case
    config = judge_config(options={"variants": {"references": "reportbench_upstream"}})
    run = EvaluationRun.objects.create(protocol="reportbench", judge_config=config)
    pipeline.run_step(run=run, report=report, step=REFERENCES, judge=RuleJudge(config))
    Verdict.objects.filter(target_kind=ACADEMIC_KIND).update(label="academic")
    m = pipeline.score_report(run=run, report=report)["metrics"]
    unfiltered = FIXTURE["unfiltered"]
    assert (m["precision"], m["recall"]) == (pytest.approx(unfiltered["precision"]), pytest.approx(unfiltered["recall"]))
    assert m["tp"] == unfiltered["intersection_count"] == 3


@pytest.mark.django_db
def test_a_failed_academic_question_keeps_the_reference_and_counts_as_failed(case):
    task, report = case
    config = judge_config(options={"variants": {"references": "reportbench_upstream"}})

    class Failing(RuleJudge):
        def answer(self, call):
            if "github" in call.variables["url"]:
                return JudgeAnswer(data=None, error="timeout", model="rule")
            return super().answer(call)

    result = score(config, report, Failing(config))
    m = result["metrics"]
    assert (m["not_academic"], m["academic_failed"], m["references"]) == (1, 1, 3)
    assert result["items_failed"] >= 1


def test_academic_filter_ignores_verdicts_on_another_reference():
    refs = [{"title": "A", "url": "u1"}, {"title": "B", "url": "u2"}]
    rows = [{"target_key": "0", "label": "not_academic", "error": "", "raw_response": {"reference": {"title": "Z", "url": "u1"}}},
            {"target_key": "1", "label": "not_academic", "error": "", "raw_response": {"reference": refs[1]}}]
    kept, counts = academic_filter(refs, rows)
    assert kept == [refs[0]] and counts == {"not_academic": 1, "academic_failed": 1}


def test_the_offline_heuristic_reads_the_url_host():
    from scoring.judges.offline_extraction import reportbench_academic_reference as decide

    assert decide(None, "T", "https://www.nature.com/articles/x", "")["is_academic_paper"] is True
    assert decide(None, "T", "https://export.arxiv.org/abs/1", "")["is_academic_paper"] is True
    assert decide(None, "T", "https://en.wikipedia.org/wiki/Widget", "")["is_academic_paper"] is False
    assert decide(None, "T", "https://cs.example.edu/~a/paper.pdf", "")["is_academic_paper"] is True
    assert decide(None, "Deep residual learning for image recognition", "", "")["is_academic_paper"] is True
    assert decide(None, "Homepage", "", "")["is_academic_paper"] is False
