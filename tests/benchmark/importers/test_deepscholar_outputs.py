"""DeepScholar-bench as cloned: ``dataset/`` + ``tests/baselines_results/<system>/<row>/`` in every
baseline's layout, as upstream's ``eval/parsers/`` read them (fixtures built here, from the
real rows 0 and 1 of the release)."""

import csv
import json
import re
import shutil

import pytest

from benchmark.importers.catalogue import run_import
from benchmark.models import GoldReference, Nugget, Report, System

from . import assert_rejected

pytestmark = pytest.mark.django_db

QUERY_NAME = "Write a Related Works section:\nTaxAgent $ fiscal policy "  # newline, ':', '$', trailing space
DEEPRESEARCHER = (
    "## Related Work\n\nLLM agents have been used for economic simulation [1]. Tax policy design with "
    "reinforcement learning is older [2]. Agent-based models of taxation remain common [3][1].\n\n"
    "<references>\n"
    "[1] http://arxiv.org/abs/2310.10436 Large Language Model-Empowered Agents for Simulating Macroeconomic Activities\n"
    "[2] The AI Economist: Improving Equality and Productivity with AI-Driven Tax Policies\n"
    "[3] https://arxiv.org/abs/2108.02755\n"
    "</references>\n"
)
OPENSCHOLAR_OUTPUT = (
    "Fiscal policy design has been studied with learning agents [0](abc) and with simulations [1](def).\n\n"
    "References\n[0] The AI Economist\n[1] EconAgent\n"
)
OPENAI_DR = (
    "# Related Work\n\nSimulated economies [EconAgent](https://arxiv.org/abs/2310.10436) and learned tax "
    "policies [AI Economist](https://arxiv.org/abs/2108.02755) frame this work.\n"
)


def row1_nuggets(release):
    return json.loads((release / "gt_nuggets_outputs/1/res.json").read_text(encoding="utf-8"))["nuggets"]


def _rows(path):
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def repository(datasets, tmp_path):
    release = datasets / "deepscholar-bench"
    root = tmp_path / "deepscholar-bench"
    data = root / "dataset"
    papers = _rows(release / "papers_with_related_works.csv")[:2]
    ids = {p["arxiv_id"] for p in papers}
    _write(data / "papers_with_related_works.csv", papers)
    _write(data / "citations.csv", [c for c in _rows(release / "citations.csv") if c["parent_paper_arxiv_id"] in ids])
    _write(data / "citation_stats.csv", _rows(release / "citation_stats.csv")[:2])
    # important_citations.csv: citations.csv rows joined with their paper (upstream's get_important_citations.py)
    cited = _rows(data / "citations.csv")
    _write(data / "important_citations.csv",
           [dict(c, title=c["parent_paper_title"], related_work_section="...", cited_paper_content="")
            for c in (cited[0], cited[4], cited[-1])])
    for extra in ("recovered_citations.csv", "related_works_combined.csv", "papers.csv", "paper_content.csv"):
        _write(data / extra, [{"arxiv_id": papers[0]["arxiv_id"]}])
    (data / "gt_nuggets_outputs/0").mkdir(parents=True)
    shutil.copy(release / "gt_nuggets_outputs/0/res.json", data / "gt_nuggets_outputs/0/res.json")
    # row 1 ships only res.csv: the nuggetizer's answer as pandas writes it (list cells as Python literals)
    row1 = json.loads((release / "gt_nuggets_outputs/1/res.json").read_text(encoding="utf-8"))
    _write(data / "gt_nuggets_outputs/1/res.csv",
           [{k: v if isinstance(v, str) else repr(v) for k, v in row1.items()}])
    (data / "gt_nuggets_outputs/2").mkdir(parents=True)
    (data / "gt_nuggets_outputs/2/notes.txt").write_text("scratch", encoding="utf-8")

    outputs = root / "tests/baselines_results"
    shutil.copytree(release / "system_outputs/deepscholar-base/0", outputs / "deepscholar-base/0")
    shutil.copytree(release / "system_outputs/deepscholar_base_gpt_4.1/1", outputs / "deepscholar_base_gpt_4.1/1")
    run = outputs / "storm/0/Related_Work_TaxAgent_20250612_101010"
    run.mkdir(parents=True)
    shutil.copy(release / "system_outputs/storm/0/storm_gen_article_polished.md", run / "storm_gen_article.md")
    shutil.copy(release / "system_outputs/storm/0/url_to_info.json", run)
    (run / "conversation_log.json").write_text("[]", encoding="utf-8")
    search = outputs / "search_ai_gpt_4.1/0"
    search.mkdir(parents=True)
    shutil.copy(release / "system_outputs/search_ai_gpt_4.1/0/answer.md", search / f"{QUERY_NAME}.md")
    shutil.copy(release / "system_outputs/search_ai_gpt_4.1/0/answer.json", search / f"{QUERY_NAME}.json")
    researcher = outputs / "deepresearcher/0"
    researcher.mkdir(parents=True)
    (researcher / f"{QUERY_NAME}.md").write_text(DEEPRESEARCHER, encoding="utf-8")
    (researcher / f"{QUERY_NAME}.json").write_text(json.dumps({
        "output": DEEPRESEARCHER,
        "ctxs": [{"paperId": "p1", "title": "EconAgent", "abstract": "Agents simulate economies.", "year": 2023}],
    }), encoding="utf-8")
    scholar = outputs / "openscholar/1"
    scholar.mkdir(parents=True)
    (scholar / f"{QUERY_NAME}.json").write_text(json.dumps({
        "output": OPENSCHOLAR_OUTPUT,
        "ctxs": [{"id": "abc", "title": "The AI Economist", "text": "Tax policy with RL."},
                 {"id": "def", "title": "EconAgent", "text": "LLM agents."}],
    }), encoding="utf-8")
    (outputs / "openscholar/0").mkdir(parents=True)  # a run that produced nothing
    deep = outputs / "openai_deepresearch/0"
    deep.mkdir(parents=True)
    (deep / f"{QUERY_NAME}.md").write_text(OPENAI_DR, encoding="utf-8")
    return root


def test_repository_layout_imports_every_baseline(repository, datasets):
    release = datasets / "deepscholar-bench"
    result = run_import("deepscholar", repository)

    assert set(System.objects.values_list("name", flat=True)) == {
        "deepscholar-base", "deepscholar_base_gpt_4.1", "storm", "search_ai_gpt_4.1", "deepresearcher", "openscholar",
        "openai_deepresearch"}
    assert Report.objects.count() == 7
    reports = {r.system.name: r for r in Report.objects.select_related("system")}

    # storm: the report inside its timestamped run folder, documents from url_to_info.json beside it.
    storm_docs = json.loads((release / "system_outputs/storm/0/url_to_info.json").read_text())["url_to_info"]
    assert len(reports["storm"].sources) == len(storm_docs)
    assert reports["storm"].source_path == "tests/baselines_results/storm/0/Related_Work_TaxAgent_20250612_101010/storm_gen_article.md"

    # search_ai: the .md/.json pair under the query's own file name.
    answer = json.loads((release / "system_outputs/search_ai_gpt_4.1/0/answer.json").read_text())
    assert len(reports["search_ai_gpt_4.1"].sources) == len(answer["ctxs"])
    assert reports["search_ai_gpt_4.1"].text == (release / "system_outputs/search_ai_gpt_4.1/0/answer.md").read_text()

    # deepresearcher: [n] markers resolve to the <references> block (3 entries, 4 markers).
    researcher = reports["deepresearcher"]
    body = DEEPRESEARCHER.split("<references>")[0]
    assert researcher.stats["citations"] == len(re.findall(r"\[\d+\]", body)) == 4
    assert researcher.stats["resolved_citations"] == 4
    assert researcher.stats["references"] == 3
    assert researcher.sources == [{"id": "p1", "title": "EconAgent", "snippet": "Agents simulate economies.",
                                   "date": "2023"}]

    # openscholar: no .md, so the JSON answer's output is the report; ctxs are its documents.
    assert reports["openscholar"].text == OPENSCHOLAR_OUTPUT
    assert [d["title"] for d in reports["openscholar"].sources] == ["The AI Economist", "EconAgent"]
    # its "[n](paper id)" markers are the n-th passages, listed as "[n] title" after References
    assert (reports["openscholar"].stats["citations"], reports["openscholar"].stats["resolved_citations"]) == (2, 2)
    assert reports["openai_deepresearch"].stats["citations"] == 2

    # The table: per system reports, citations, skipped files with their reasons.
    tally = result.systems
    assert {name: t.reports for name, t in tally.items()} == {
        "deepscholar-base": 1, "deepscholar_base_gpt_4.1": 1, "storm": 1, "search_ai_gpt_4.1": 1,
        "deepresearcher": 1, "openscholar": 1, "openai_deepresearch": 1}
    assert tally["deepresearcher"].citations == 4
    assert tally["storm"].skipped == [(
        "tests/baselines_results/storm/0/Related_Work_TaxAgent_20250612_101010/conversation_log.json",
        "not read: not the report or its documents")]
    assert tally["openscholar"].skipped == [
        ("tests/baselines_results/openscholar/0/", "no report (intro.md, storm_gen_article*.md, a .md or a .json answer)")]
    rows = {row["system"]: row for row in result.system_rows()}
    assert rows["openscholar"]["reports"] == 1 and len(rows["openscholar"]["skipped"]) == 1
    table = result.summary()
    assert re.search(r"^deepresearcher +1 +4 \(4\) +0$", table, re.MULTILINE)
    assert re.search(r"^openscholar +1 +2 \(2\) +1$", table, re.MULTILINE)

    # res.csv nuggets and important citations are read; the files that are not, and a nugget
    # folder with neither res.json nor res.csv, are named with the reason.
    assert Nugget.objects.filter(task__key="2506.02634").count() == len(row1_nuggets(release)) == 12
    assert GoldReference.objects.filter(important=True).count() == 3
    assert not any(m.startswith("dataset/important_citations.csv") for m in result.messages)
    for name in ("recovered_citations.csv", "related_works_combined.csv", "papers.csv", "paper_content.csv"):
        assert any(re.match(rf"dataset/{name}: not imported \(\S.+\)$", m)
                   for m in result.messages), name
    assert ("dataset/gt_nuggets_outputs/2: neither res.json nor res.csv (only notes.txt); no nuggets imported from it"
            in result.messages)
    print(table)  # the import table the issue asks to show


def test_query_named_files_appear_escaped_in_errors(repository):
    bad = repository / "tests/baselines_results/deepresearcher/0" / f"{QUERY_NAME}.json"
    bad.write_text('{"output": "x",\n "ctxs": [}', encoding="utf-8")
    assert_rejected(
        "deepscholar", repository,
        match=r"^'tests/baselines_results/deepresearcher/0/Write a Related Works section:\\nTaxAgent \$ fiscal policy "
              r"\.json', line 2, column 11: malformed JSON: expecting value$",
    )


def test_a_folder_that_is_no_release_is_refused(tmp_path):
    assert_rejected("deepscholar", tmp_path,
                    match=r"neither dataset/papers_with_related_works\.csv nor papers_with_related_works\.csv is in the folder")


def test_reimport_keeps_documents_of_reports_with_identical_text(repository, tmp_path):
    run_import("deepscholar", repository)
    storm = Report.objects.get(system__name="storm")
    documents = list(storm.sources)
    assert documents
    # The same text as a markdown report folder (which carries no documents).
    folder = tmp_path / "reports/storm/deepscholar"
    folder.mkdir(parents=True)
    (folder / f"{storm.task.key}.md").write_text(storm.text, encoding="utf-8")
    result = run_import("reports", tmp_path / "reports")
    assert result.counts["report"] == {"unchanged": 1}
    storm.refresh_from_db()
    assert storm.sources == documents


def test_errors_in_the_dataset_folder_name_it(repository):
    path = repository / "dataset/citations.csv"
    path.write_text(path.read_text(encoding="utf-8") + "only,three,fields\n", encoding="utf-8")
    line = path.read_text(encoding="utf-8").count("\n")
    assert_rejected("deepscholar", repository,
                    match=rf"^dataset/citations\.csv, line {line}, field '\w+': row has 3 fields but the header has 15$")
