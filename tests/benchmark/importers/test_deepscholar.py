import csv
import json
import logging
import shutil
from collections import Counter
from datetime import date

import pytest

from benchmark.importers.catalogue import run_import
from benchmark.importers.deepscholar import latex_sections
from benchmark.models import GoldReference, Nugget, Report, Survey, SurveyCitation, System, Task

from . import assert_rejected, model_counts

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(datasets):
    return datasets / "deepscholar-bench"


def _csv_rows(path):
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_full_release(release):
    result = run_import("deepscholar", release)

    papers = _csv_rows(release / "papers_with_related_works.csv")
    citations = _csv_rows(release / "citations.csv")
    assert (len(papers), len(citations)) == (63, 1630)
    assert Task.objects.filter(protocol="deepscholar").count() == 63
    assert Survey.objects.filter(source="deepscholar", kind="related_work").count() == 63
    # Every citation is a gold reference, except 3 that repeat a work the same exemplar
    # already cites under another key: citations.csv lines 486 (vLLM, = line 79), 567
    # (CachedAttention, = 123) and 16903 (MambaRec, = 16834).
    assert GoldReference.objects.filter(task__protocol="deepscholar").count() == 1630 - 3
    assert SurveyCitation.objects.filter(survey__source="deepscholar").count() == 1627
    repeats = [m for m in result.messages if "repeat one listed earlier" in m]
    assert sum(int(m.split(": ")[1].split()[0]) for m in repeats) == 3
    assert "citations.csv line 16903 (same as citations.csv line 16834)" in repeats[-1]
    assert not GoldReference.objects.filter(important=True).exists()  # not in the release

    tax = Task.objects.get(protocol="deepscholar", key="2506.02838")
    assert tax.extra["row"] == 0
    assert tax.title == "TaxAgent: How Large Language Model Designs Fiscal Policy"
    assert tax.cutoff_date == date(2025, 6, 2)
    assert tax.excluded_titles == [tax.title]
    prompt = tax.prompts.get()
    assert prompt.level == "general"
    assert prompt.text.startswith("Write a Related Works section for an academic paper given the paper's abstract.")
    assert tax.survey.full_text.startswith("\\subsection{Traditional Tax Systems}")
    assert [s["heading"] for s in tax.survey.content] == [
        "Traditional Tax Systems", "Artificial Intelligence(AI) in Economic Policy Research"]
    assert tax.survey.stats["total_citations"] == 17
    expected_refs = sum(1 for c in citations if c["parent_paper_arxiv_id"] == "2506.02838v1")
    assert tax.gold_references.count() == expected_refs == 17

    # Nuggets: row 0's file, and a nested folder mapped by its qid (not its folder names).
    row0 = json.loads((release / "gt_nuggets_outputs/0/res.json").read_text())
    assert Counter(n.importance for n in tax.nuggets.all()) == Counter(n["importance"] for n in row0["nuggets"])
    assert tax.nuggets.count() == 17
    assert [n.text for n in tax.nuggets.order_by("position")] == [n["text"] for n in row0["nuggets"]]
    nested = json.loads((release / "gt_nuggets_outputs/20/26/29/32/res.json").read_text())
    assert Task.objects.get(key="2504.14861").nuggets.count() == len(nested["nuggets"]) == 27
    assert Task.objects.get(key="2504.14861").extra["row"] == 29
    assert Nugget.objects.filter(task__protocol="deepscholar").count() == 1043

    # Four systems' reports on rows 0 and 1, with their retrieved documents.
    assert set(System.objects.values_list("name", flat=True)) == {
        "deepscholar-base", "deepscholar_base_gpt_4.1", "storm", "search_ai_gpt_4.1"}
    assert Report.objects.count() == 8
    assert set(Report.objects.values_list("task__key", flat=True)) == {"2506.02838", "2506.02634"}
    by_system = {r.system.name: r for r in Report.objects.filter(task=tax)}
    assert len(by_system["deepscholar-base"].sources) == 30
    assert by_system["deepscholar-base"].sources[0]["url"] == "http://arxiv.org/abs/2108.02755v1"
    assert len(by_system["storm"].sources) == 10 and by_system["storm"].sources[0]["index"] == 1
    assert len(by_system["search_ai_gpt_4.1"].sources) == 54
    assert by_system["storm"].text.startswith("# summary")
    assert by_system["search_ai_gpt_4.1"].source_path == "system_outputs/search_ai_gpt_4.1/0/answer.md"
    assert System.objects.get(name="storm").base_model == "Llama-4-Scout-17B-16E-Instruct"

    # Importing again changes nothing.
    stamps = dict(Survey.objects.values_list("pk", "updated_at"))
    again = run_import("deepscholar", release)
    assert again.counts["task"] == {"unchanged": 63}
    assert again.counts["gold reference"] == {"unchanged": 1627}
    assert again.counts["nugget"] == {"unchanged": 1043}
    assert again.counts["report"] == {"unchanged": 8}
    assert dict(Survey.objects.values_list("pk", "updated_at")) == stamps


def test_latex_sections():
    text = "Intro text.\n\\subsection{Models {with} braces}\nBody one.\n\\paragraph{Data.}\nBody two."
    assert latex_sections(text) == [
        {"heading": "Related Work", "level": 1, "text": "Intro text."},
        {"heading": "Models {with} braces", "level": 2, "text": "Body one."},
        {"heading": "Data.", "level": 4, "text": "Body two."},
    ]
    assert latex_sections("\\section{Only}\nx") == [{"heading": "Only", "level": 1, "text": "x"}]


# --- broken input on a two-paper copy of the release ---------------------------------------


def _write_csv(path, rows, fieldnames):
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def mini(release, tmp_path):
    """Rows 0 and 1 of the release with their citations, stats, nuggets and system outputs."""
    root = tmp_path / "deepscholar-bench"
    root.mkdir()
    papers = _csv_rows(release / "papers_with_related_works.csv")[:2]
    ids = {p["arxiv_id"] for p in papers}
    _write_csv(root / "papers_with_related_works.csv", papers, list(papers[0]))
    citations = [c for c in _csv_rows(release / "citations.csv") if c["parent_paper_arxiv_id"] in ids]
    _write_csv(root / "citations.csv", citations, list(citations[0]))
    stats = _csv_rows(release / "citation_stats.csv")[:2]
    _write_csv(root / "citation_stats.csv", stats, list(stats[0]))
    for row in ("0", "1"):
        (root / "gt_nuggets_outputs" / row).mkdir(parents=True)
        shutil.copy(release / "gt_nuggets_outputs" / row / "res.json", root / "gt_nuggets_outputs" / row)
    shutil.copytree(release / "system_outputs", root / "system_outputs")
    return root


def test_mini_release_imports(mini):
    result = run_import("deepscholar", mini)
    assert result.counts["task"] == {"created": 2}
    assert result.counts["report"] == {"created": 8}
    assert Nugget.objects.filter(task__key="2506.02838").count() == 17


@pytest.fixture
def stored(mini):
    run_import("deepscholar", mini)
    return model_counts()


def _edit_csv(path, line_index, column, value):
    rows = _csv_rows(path)
    rows[line_index][column] = value
    _write_csv(path, rows, list(rows[0]))


def test_bad_csv_row_length_names_file_and_line(mini, stored):
    path = mini / "citations.csv"
    path.write_text(path.read_text(encoding="utf-8") + "only,three,fields\n", encoding="utf-8")
    line = path.read_text(encoding="utf-8").count("\n")
    assert_rejected("deepscholar", mini, match=rf"citations\.csv, line {line}, field '.*': row has 3 fields but the header has 15")


def test_bad_number_names_line_and_column(mini, stored):
    _edit_csv(mini / "citations.csv", 0, "bib_paper_year", "twenty")
    assert_rejected("deepscholar", mini, match=r"citations\.csv, line 2, field 'bib_paper_year': expected a number, got 'twenty'")


def test_missing_required_column(mini, stored):
    rows = _csv_rows(mini / "papers_with_related_works.csv")
    for row in rows:
        del row["abstract"]
    _write_csv(mini / "papers_with_related_works.csv", rows, list(rows[0]))
    assert_rejected("deepscholar", mini, match=r"papers_with_related_works\.csv, line 1, field 'abstract': the header lacks")


def test_duplicate_paper(mini, stored):
    rows = _csv_rows(mini / "papers_with_related_works.csv")
    _write_csv(mini / "papers_with_related_works.csv", rows + rows[:1], list(rows[0]))
    assert_rejected("deepscholar", mini, match=r"papers_with_related_works\.csv, line \d+, field 'arxiv_id': duplicate paper '2506\.02838'")


def test_citation_of_unknown_paper(mini, stored):
    _edit_csv(mini / "citations.csv", 3, "parent_paper_arxiv_id", "2101.00001v1")
    assert_rejected("deepscholar", mini, match=r"citations\.csv, line \d+, field 'parent_paper_arxiv_id': no paper '2101\.00001v1'")


def test_binary_csv(mini, stored):
    (mini / "citation_stats.csv").write_bytes(b"PK\x03\x04\x00\x00zip")
    assert_rejected("deepscholar", mini, match=r"citation_stats\.csv, line 1: contains NUL bytes")


def test_malformed_nugget_json(mini, stored):
    (mini / "gt_nuggets_outputs/1/res.json").write_text('{"qid": "2506.02634v1", "nuggets": [}', encoding="utf-8")
    assert_rejected("deepscholar", mini, match=r"gt_nuggets_outputs/\d+/res\.json, line 1, column \d+: malformed JSON: expecting value$")


def test_bad_nugget_importance_and_unknown_qid(mini, stored):
    path = mini / "gt_nuggets_outputs/1/res.json"
    data = json.loads(path.read_text())
    data["nuggets"][2]["importance"] = "crucial"
    path.write_text(json.dumps(data))
    assert_rejected("deepscholar", mini, match=r"gt_nuggets_outputs/1/res\.json, field 'nuggets\[2\]\.importance': expected vital or okay")
    data["nuggets"][2]["importance"] = "vital"
    data["qid"] = "2101.00001v1"
    path.write_text(json.dumps(data))
    assert_rejected("deepscholar", mini, match=r"gt_nuggets_outputs/1/res\.json, field 'qid': no paper")


def test_system_output_for_unknown_row(mini):
    shutil.copytree(mini / "system_outputs/storm/0", mini / "system_outputs/storm/7")
    # Fails after the papers, citations and nuggets were written into the empty database:
    # all of it is rolled back.
    assert_rejected("deepscholar", mini, match=r"system_outputs/storm/7: folder name must be a row number")


def test_system_output_without_report_file_is_skipped_and_named(mini):
    (mini / "system_outputs/storm/1/storm_gen_article_polished.md").unlink()
    result = run_import("deepscholar", mini)
    storm = result.system("storm")
    assert storm.reports == 1
    assert storm.skipped == [("system_outputs/storm/1/", "no report (intro.md, storm_gen_article*.md, a .md or a .json answer)")]
    assert "skipped storm: system_outputs/storm/1/: no report" in result.summary()
    assert not Report.objects.filter(system__name="storm", task__extra__row=1).exists()


def test_oversized_file(mini, stored, settings):
    settings.IMPORT_MAX_LINE_BYTES = 50_000
    assert_rejected("deepscholar", mini, match=r"citations\.csv: file of [\d,]+ bytes exceeds the 50,000-byte limit")


# --- res.csv nuggets and important_citations.csv, in upstream's shapes -----------------------


def _nuggets_as_res_csv(res_json, path):
    """Upstream's res.csv: the nuggetizer's answer dumped by pandas, list cells as Python literals."""
    data = json.loads(res_json.read_text(encoding="utf-8"))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["qid", "query", "nuggets", "supported_nuggets", "partially_supported_nuggets",
                         "nuggets_metrics"])
        writer.writerow([data["qid"], data["query"], repr(data["nuggets"]), repr(data["supported_nuggets"]),
                         repr(data["partially_supported_nuggets"]), repr(data["nuggets_metrics"])])
    return data


def test_nuggets_are_read_from_res_csv_when_the_folder_has_no_res_json(mini):
    folder = mini / "gt_nuggets_outputs/1"
    data = _nuggets_as_res_csv(folder / "res.json", folder / "res.csv")
    (folder / "res.json").unlink()
    result = run_import("deepscholar", mini)
    stored = Nugget.objects.filter(task__key="2506.02634").order_by("position")
    assert [(n.text, n.importance) for n in stored] == [(n["text"], n["importance"]) for n in data["nuggets"]]
    assert len(data["nuggets"]) == 12
    assert not any("no nuggets imported" in m for m in result.messages)


def test_res_csv_beside_res_json_is_not_read_twice(mini):
    folder = mini / "gt_nuggets_outputs/0"
    _nuggets_as_res_csv(folder / "res.json", folder / "res.csv")
    result = run_import("deepscholar", mini)
    assert result.counts["nugget"] == {"created": 17 + 12}


def test_a_res_csv_nugget_cell_that_is_no_list_names_file_line_and_field(mini):
    folder = mini / "gt_nuggets_outputs/1"
    _nuggets_as_res_csv(folder / "res.json", folder / "res.csv")
    (folder / "res.json").unlink()
    text = (folder / "res.csv").read_text(encoding="utf-8")
    (folder / "res.csv").write_text(text.replace("'importance': 'vital'", "'importance': vital", 1), encoding="utf-8")
    assert_rejected("deepscholar", mini, match=r"^gt_nuggets_outputs/1/res\.csv, line 2, field 'nuggets': expected "
                                                r"a list of \{'text': \.\.\., 'importance': \.\.\.\} entries$")


def _important_citations(mini, rows):
    """Upstream's important_citations.csv: citations.csv rows joined with their paper's row."""
    papers = {p["arxiv_id"]: p for p in _csv_rows(mini / "papers_with_related_works.csv")}
    out = [dict(c, title=papers.get(c["parent_paper_arxiv_id"], {}).get("title", ""), related_work_section="...",
                cited_paper_content=c["cited_paper_abstract"]) for c in rows]
    _write_csv(mini / "important_citations.csv", out, list(out[0]))


def test_important_citations_label_the_gold_references(mini):
    citations = _csv_rows(mini / "citations.csv")
    tax = [c for c in citations if c["parent_paper_arxiv_id"] == "2506.02838v1"]
    kv = [c for c in citations if c["parent_paper_arxiv_id"] == "2506.02634v1"]
    by_title_only = dict(kv[2], citation_shorthand="")  # matched by its normalized title
    unknown = dict(tax[0], citation_shorthand="nokey", cited_paper_title="A Paper Nobody Cited")
    _important_citations(mini, [unknown, tax[0], tax[3], tax[5], by_title_only])

    result = run_import("deepscholar", mini)
    important = set(GoldReference.objects.filter(important=True).values_list("task__key", "bib_entry__title"))
    assert important == {("2506.02838", " ".join(tax[i]["cited_paper_title"].split())) for i in (0, 3, 5)} | {
        ("2506.02634", " ".join(kv[2]["cited_paper_title"].split()))}
    golds = GoldReference.objects.count()
    assert golds == len(citations) - 2  # row 1 cites vLLM and CachedAttention twice (see test_full_release)
    assert GoldReference.objects.filter(important=False).count() == golds - 4
    assert ("important_citations.csv, line 2: no citation of 2506.02838 in citations.csv has this key or title; "
            "its importance was not recorded") in result.messages
    assert not any(m.startswith("important_citations.csv: not imported") for m in result.messages)
    assert result.counts["citation"]["labelled important"] == 4
    # Scoring takes these labels as known (see scoring.pipelines.deepscholar.reference_coverage.importance_known).
    assert {t.extra.get(Task.RELEASED_IMPORTANCE) for t in Task.objects.all()} == {"important_citations.csv"}

    # A changed file relabels the references nobody reviewed; a release without it leaves them.
    _important_citations(mini, [tax[0]])
    again = run_import("deepscholar", mini)
    assert again.counts["gold reference"] == {"updated": 3, "unchanged": golds - 3}
    assert GoldReference.objects.filter(important=True).count() == 1
    (mini / "important_citations.csv").unlink()
    assert run_import("deepscholar", mini).counts["gold reference"] == {"unchanged": golds}
    assert GoldReference.objects.filter(important=True).count() == 1
    assert not any(Task.RELEASED_IMPORTANCE in t.extra for t in Task.objects.all())  # proposals again


def test_an_important_citation_of_an_unknown_paper_is_refused(mini):
    row = dict(_csv_rows(mini / "citations.csv")[0], parent_paper_arxiv_id="2501.00001v1")
    _important_citations(mini, [row])
    row_line = 2
    assert_rejected("deepscholar", mini, match=rf"^important_citations\.csv, line {row_line}, field "
                                               r"'parent_paper_arxiv_id': no paper '2501\.00001v1' in "
                                               r"papers_with_related_works\.csv$")


def test_a_nugget_folder_without_res_json_or_csv_is_skipped_with_a_warning(mini, caplog):
    (mini / "gt_nuggets_outputs" / "7").mkdir()
    (mini / "gt_nuggets_outputs" / "7" / "res.txt").write_text("not nuggets", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="benchmark.importers.deepscholar"):
        result = run_import("deepscholar", mini)
    assert result.counts["task"] == {"created": 2}
    assert [r.getMessage() for r in caplog.records if r.name == "benchmark.importers.deepscholar"] == [
        "gt_nuggets_outputs/7: no res.json or res.csv (only res.txt): no nuggets read from it"]
