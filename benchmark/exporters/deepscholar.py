"""DeepScholar-bench layout: the release folder ``benchmark.importers.deepscholar`` reads.

Files: ``papers_with_related_works.csv`` (one row per task: the query paper and its
human-written related-work section), ``citations.csv`` (its gold references, one row per
citation, in order), ``citation_stats.csv`` (the survey's ``stats``, when it has any) and
``gt_nuggets_outputs/<row>/res.json`` (its nuggets, when it has any). Input is native task
lines; only curated content is written (rejected gold references and nuggets are left out).

Rows keep the order of the original release (``extra.row``, then key), because the importer
numbers tasks by their row. The benchmark's query is the fixed instruction followed by the
abstract, so it is rebuilt from the abstract on import; system outputs are reports, not task
content, and are not written. CSV cells are written as they are: these files are data for
the benchmark's tools, not spreadsheets.
"""

import io
import json
from collections.abc import Callable, Iterable

from ..importers.deepscholar import CITATIONS, NUGGETS, PAPERS, STATS
from ..models import Protocol, ReviewStatus
from ..spreadsheet import csv_writer

PAPER_COLUMNS = ("arxiv_id", "title", "authors", "abstract", "categories", "published_date",
                 "clean_latex_related_works")
CITATION_COLUMNS = ("parent_paper_title", "parent_paper_arxiv_id", "citation_shorthand", "cited_paper_title",
                    "cited_paper_arxiv_link", "cited_paper_abstract", "is_arxiv_paper", "bib_paper_authors",
                    "bib_paper_year", "bib_paper_url", "bib_paper_doi", "bib_paper_journal")
STATS_COLUMNS = ("paper_title", "arxiv_link", "total_citations", "resolved_citations", "resolution_rate",
                 "arxiv_citations", "arxiv_citation_rate")


def _kept(items: Iterable[dict]) -> list[dict]:
    return [item for item in items if item.get("review_status") != ReviewStatus.REJECTED]


def _csv(columns: tuple[str, ...], rows: list[dict]) -> bytes:
    buffer = io.StringIO(newline="")
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row.get(c) for c in columns])
    return buffer.getvalue().encode("utf-8")


def _order(task: dict) -> tuple:
    row = (task["extra"] or {}).get("row")
    return (row if isinstance(row, int) and not isinstance(row, bool) else float("inf"), task["key"])


def _bib_key(bib: dict) -> str:
    return json.dumps(bib, sort_keys=True, ensure_ascii=False)


def write_deepscholar(lines: Iterable[dict], sink: Callable[[str, bytes], None], counts: dict[str, int]) -> None:
    tasks = []
    for task in lines:
        if task["protocol"] != Protocol.DEEPSCHOLAR:
            counts["left out: tasks of other protocols"] += 1
            continue
        survey = task["survey"]
        if not survey["full_text"].strip():
            raise ValueError(f"deepscholar task {task['key']} has no related-work section (the survey's full "
                             "text); DeepScholar-bench needs one")
        # Only what the rows below need: the full lines of a large set need not stay in memory.
        tasks.append({"key": task["key"], "extra": task["extra"], "survey": survey,
                      "gold": task["gold_references"], "nuggets": task["nuggets"], "prompts": task["prompts"]})
    if not tasks:
        raise ValueError("the task set has no deepscholar tasks to write in the DeepScholar-bench format")
    papers, citations, stats = [], [], []
    for row, task in enumerate(sorted(tasks, key=_order)):
        survey = task["survey"]
        paper_id = (survey["extra"] or {}).get("arxiv_version_id") or task["key"]
        papers.append({
            "arxiv_id": paper_id, "title": survey["title"], "authors": survey["authors"],
            "abstract": survey["abstract"], "categories": survey["categories"],
            "published_date": survey["publication_date"], "clean_latex_related_works": survey["full_text"],
        })
        keys = {_bib_key(c["bib"]): c["key"] for c in survey["bibliography"]}
        golds = _kept(task["gold"])
        counts["left out: rejected gold references"] += len(task["gold"]) - len(golds)
        counts["gold references"] += len(golds)
        for gold in golds:
            bib = gold["bib"]
            # An identifier the importer set aside (another entry owns it) is what the source said.
            arxiv_id = bib["arxiv_id"] or (bib["extra"] or {}).get("conflicting_arxiv_id", "")
            doi = bib["doi"] or (bib["extra"] or {}).get("conflicting_doi", "")
            citations.append({
                "parent_paper_title": survey["title"], "parent_paper_arxiv_id": paper_id,
                "citation_shorthand": keys.get(_bib_key(bib), ""), "cited_paper_title": bib["title"],
                "cited_paper_arxiv_link": f"http://arxiv.org/abs/{arxiv_id}" if arxiv_id else "",
                "cited_paper_abstract": bib["abstract"], "is_arxiv_paper": bool(arxiv_id),
                "bib_paper_authors": bib["authors"], "bib_paper_year": bib["year"], "bib_paper_url": bib["url"],
                "bib_paper_doi": doi, "bib_paper_journal": bib["venue"],
            })
        if survey["stats"]:
            stats.append({"paper_title": survey["title"], "arxiv_link": f"http://arxiv.org/abs/{paper_id}",
                          **survey["stats"]})
        nuggets = _kept(task["nuggets"])
        counts["left out: rejected nuggets"] += len(task["nuggets"]) - len(nuggets)
        if nuggets:
            counts["nuggets"] += len(nuggets)
            query = next((p["text"] for p in _kept(task["prompts"]) if p["level"] == "general"), "")
            body = {"qid": paper_id, "query": query,
                    "nuggets": [{"text": n["text"], "importance": n["importance"]} for n in nuggets]}
            sink(f"{NUGGETS}/{row}/res.json", (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
        counts["tasks"] += 1
    sink(PAPERS, _csv(PAPER_COLUMNS, papers))
    sink(CITATIONS, _csv(CITATION_COLUMNS, citations))
    if stats:
        sink(STATS, _csv(STATS_COLUMNS, stats))
