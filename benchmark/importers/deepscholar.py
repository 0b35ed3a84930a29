"""DeepScholar-bench (guestrin-lab): a release folder.

``path`` is the ``deepscholar-bench/`` folder:

* ``papers_with_related_works.csv`` → per paper a ``Survey`` (kind related_work, source
  ``deepscholar``, external id = arXiv id without version) holding the human-written
  related-work section (``full_text``; ``content``/``outline`` split at its
  ``\\section``-style headings) and a ``Task`` (protocol deepscholar, key = arXiv id
  without version; ``extra.row`` = the paper's row index) with the benchmark's query as
  its general ``TaskPrompt``. Search in the benchmark is limited to papers published
  before the query paper, so ``cutoff_date`` is the day before its publication and the
  paper itself is an excluded title.
* ``citation_stats.csv`` → the paper's ``Survey.stats`` (per-paper counts of citations,
  resolved citations and arXiv citations; nothing per cited work).
* ``citations.csv`` → ``BibEntry`` + ``GoldReference`` (and the exemplar's
  ``SurveyCitation`` list), in file order per paper. The release does not carry the
  paper's "important reference" labels (an LLM judge assigns them at evaluation time),
  so ``important`` stays False for curators or a judge to set.
* ``gt_nuggets_outputs/**/res.json`` → ``Nugget`` rows (vital/okay). Folders nest
  (``20/26/29/32/res.json``) and their names are not reliable row numbers, so each file
  is matched to its paper by ``qid``.
* ``system_outputs/<system>/<row>/`` → a ``System`` per folder and its ``Report`` on
  the paper of that row: ``intro.md`` (+ ``paper.csv``), ``storm_gen_article_polished.md``
  (+ ``url_to_info.json``) or ``answer.md`` (+ ``answer.json``); the retrieved documents
  go to ``Report.sources`` as ``{title, url, snippet, ...}``.
"""

import re
from datetime import datetime, timedelta
from pathlib import Path

from ..models import Nugget, Origin, Protocol, Survey, System, TaskPrompt
from ..services.bibliography import clean_arxiv_id, clean_doi
from ..services.reports import ReportInput
from .base import ImportFailed, ImportResult, Record, read_json
from .common import (
    CitedWork,
    SystemSpec,
    bibliographies_store,
    csv_number,
    has_usable_title,
    proposables_sync,
    read_csv,
    read_text,
    reports_store,
    require_unique,
    systems_ensure,
    task_prompts_sync,
    tasks_with_surveys_upsert,
)

SOURCE = "deepscholar"
PAPERS = "papers_with_related_works.csv"
CITATIONS = "citations.csv"
STATS = "citation_stats.csv"
NUGGETS = "gt_nuggets_outputs"
OUTPUTS = "system_outputs"

QUERY = "Write a Related Works section for an academic paper given the paper's abstract. Here is the paper abstract:\n"

# What the release and the paper (§8.6–8.7) say about the systems whose outputs it ships.
KNOWN_SYSTEMS = {
    "deepscholar-base": SystemSpec(
        "deepscholar-base", System.Workflow.RAG, "",
        "DeepScholar-base reference pipeline (arXiv search + LOTUS semantic operators); the release does not "
        "name its model.",
    ),
    "deepscholar_base_gpt_4.1": SystemSpec(
        "deepscholar_base_gpt_4.1", System.Workflow.RAG, "gpt-4.1-2025-04-14",
        "DeepScholar-base reference pipeline with GPT-4.1, as released by DeepScholar-bench.",
    ),
    "storm": SystemSpec(
        "storm", System.Workflow.SURVEY_PIPELINE, "Llama-4-Scout-17B-16E-Instruct",
        "STORM with arXiv search, run by the DeepScholar-bench authors (paper §8.7).",
    ),
    "search_ai_gpt_4.1": SystemSpec(
        "search_ai_gpt_4.1", System.Workflow.DEEP_RESEARCH, "gpt-4.1-2025-04-14",
        "OpenDeepSearch ReAct search agent with arXiv search and GPT-4.1 (paper §8.7.3).",
    ),
}
# (report file, retrieved-documents file), tried in order.
OUTPUT_LAYOUTS = (
    ("intro.md", "paper.csv"),
    ("storm_gen_article_polished.md", "url_to_info.json"),
    ("answer.md", "answer.json"),
)
DOCUMENT_FIELDS = ("id", "title", "url", "snippet", "date", "authors")

_HEADING = re.compile(r"^\s*\\(?P<kind>(?:sub)*section|paragraph)\*?\s*\{")


def _brace_group(text: str, start: int) -> str:
    """The content of the balanced ``{...}`` opening at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    return text[start + 1 :]


def latex_sections(text: str) -> list[dict]:
    """Split a LaTeX related-work section at ``\\section``/``\\subsection``/``\\paragraph`` lines."""
    sections = [{"heading": "Related Work", "level": 1, "text": []}]
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            kind = match["kind"]
            level = 4 if kind == "paragraph" else 1 + kind.count("sub")
            heading = _brace_group(line, match.end() - 1)
            sections.append({"heading": " ".join(heading.split()), "level": level, "text": []})
        else:
            sections[-1]["text"].append(line)
    out = [dict(s, text="\n".join(s["text"]).strip()) for s in sections]
    return out if out[0]["text"] or len(out) == 1 else out[1:]


def _papers(folder: Path) -> list[Record]:
    required = ("arxiv_id", "title", "abstract", "clean_latex_related_works")
    records, seen = [], {}
    for rec in read_csv(folder / PAPERS, required=required):
        paper_id = clean_arxiv_id(rec.text("arxiv_id", required=True))
        if not paper_id:
            raise rec.fail(f"not an arXiv id: {rec.data['arxiv_id'][:40]!r}", "arxiv_id")
        require_unique(seen, paper_id, rec, "arxiv_id", "paper")
        for name in required[1:]:
            rec.text(name, required=True)
        records.append(rec)
    return records


def _published(rec: Record) -> datetime | None:
    raw = (rec.data.get("published_date") or rec.data.get("publication_date") or "").strip()
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        raise rec.fail(f"not an ISO date: {raw[:40]!r}", "published_date") from None


def _stats(folder: Path, paper_ids: set[str]) -> dict[str, dict]:
    path = folder / STATS
    if not path.is_file():
        return {}
    stats = {}
    for rec in read_csv(path, required=("arxiv_link", "total_citations")):
        paper_id = clean_arxiv_id(rec.text("arxiv_link", required=True))
        if paper_id not in paper_ids:
            raise rec.fail(f"no paper {paper_id or rec.data['arxiv_link'][:60]!r} in {PAPERS}", "arxiv_link")
        stats[paper_id] = {
            "total_citations": csv_number(rec, "total_citations", int),
            "resolved_citations": csv_number(rec, "resolved_citations", int),
            "resolution_rate": csv_number(rec, "resolution_rate"),
            "arxiv_citations": csv_number(rec, "arxiv_citations", int),
            "arxiv_citation_rate": csv_number(rec, "arxiv_citation_rate"),
        }
    return stats


def _citations(folder: Path, paper_ids: set[str], *, result: ImportResult) -> dict[str, list[CitedWork]]:
    required = ("parent_paper_arxiv_id", "cited_paper_title")
    works: dict[str, list[CitedWork]] = {paper_id: [] for paper_id in paper_ids}
    for rec in read_csv(folder / CITATIONS, required=required):
        parent = clean_arxiv_id(rec.text("parent_paper_arxiv_id", required=True))
        if parent not in works:
            raise rec.fail(f"no paper {rec.data['parent_paper_arxiv_id'][:40]!r} in {PAPERS}", "parent_paper_arxiv_id")
        title = rec.text("cited_paper_title")
        if not has_usable_title(title):
            result.messages.append(f"{CITATIONS}, line {rec.line}: skipped a citation without a usable title")
            result.add("citation line", "skipped")
            continue
        link = rec.text("cited_paper_arxiv_link")
        url = rec.text("bib_paper_url").strip()
        record = {
            "title": title,
            "authors": rec.text("bib_paper_authors"),
            "year": csv_number(rec, "bib_paper_year", int),
            "venue": rec.text("bib_paper_journal").strip(),
            "arxiv_id": clean_arxiv_id(link),
            "doi": clean_doi(rec.text("bib_paper_doi")),
            "url": url if url.startswith(("http://", "https://")) else link.strip(),
            "abstract": rec.text("cited_paper_abstract").strip(),
        }
        works[parent].append(CitedWork(record=record, key=rec.text("citation_shorthand"), where=f"{CITATIONS} line {rec.line}"))
    return works


def _nuggets(folder: Path, paper_ids: set[str]) -> dict[str, list[tuple[str, str]]]:
    root = folder / NUGGETS
    if not root.is_dir():
        return {}
    found: dict[str, list[tuple[str, str]]] = {}
    origin: dict[str, str] = {}
    for path in sorted(root.rglob("res.json")):
        name = path.relative_to(folder).as_posix()
        data = read_json(path)
        rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
        if not isinstance(data, dict):
            raise rec.fail(f"expected a JSON object, got {type(data).__name__}")
        qid = clean_arxiv_id(rec.text("qid", required=True))
        if qid not in paper_ids:
            raise rec.fail(f"no paper {rec.data['qid'][:40]!r} in {PAPERS}", "qid")
        if qid in origin:
            raise rec.fail(f"nuggets for {qid} were already read from {origin[qid]}", "qid")
        origin[qid] = name
        items = []
        for i, item in enumerate(rec.get("nuggets", list, required=True)):
            nugget = rec.child(item, f"nuggets[{i}]")
            importance = nugget.text("importance", required=True).strip().lower()
            if importance not in Nugget.Importance.values:
                raise nugget.fail(f"expected vital or okay, got {importance[:20]!r}", "importance")
            items.append((nugget.text("text", required=True).strip(), importance))
        found[qid] = items
    return found


def _documents_csv(path: Path, name: str) -> list[dict]:
    return [
        {f: rec.data[f] for f in DOCUMENT_FIELDS if rec.data.get(f)}
        for rec in read_csv(path, required=("title", "url"), name=name)
    ]


def _documents_storm(path: Path, name: str) -> list[dict]:
    data = read_json(path)
    rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
    info = rec.get("url_to_info", dict, required=True)
    index = rec.get("url_to_unified_index", dict, default={})
    docs = []
    for url, value in info.items():
        doc = rec.child(value, f"url_to_info[{url!r}]")
        docs.append({
            "url": url,
            "title": doc.text("title"),
            "snippet": doc.text("description"),
            "index": index.get(url) if isinstance(index.get(url), int) else None,
        })
    return sorted(docs, key=lambda d: (d["index"] is None, d["index"] or 0))


def _documents_answer(path: Path, name: str) -> list[dict]:
    data = read_json(path)
    rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
    docs = []
    for i, value in enumerate(rec.get("ctxs", list, default=[])):
        ctx = rec.child(value, f"ctxs[{i}]")
        doc = {"title": ctx.text("title"), "url": ctx.text("url"), "snippet": ctx.text("text"), "date": ctx.text("date")}
        docs.append({k: v for k, v in doc.items() if v})
    return docs


READERS = {"paper.csv": _documents_csv, "url_to_info.json": _documents_storm, "answer.json": _documents_answer}


def _outputs(folder: Path, tasks_by_row: dict[int, object], *, result: ImportResult) -> list[ReportInput]:
    root = folder / OUTPUTS
    if not root.is_dir():
        return []
    folders = [(s, r) for s in sorted(p for p in root.iterdir() if p.is_dir()) for r in sorted(s.iterdir()) if r.is_dir()]
    systems = systems_ensure(
        [KNOWN_SYSTEMS.get(s.name) or SystemSpec(s.name, description="Released with DeepScholar-bench.") for s in
         {s for s, _ in folders}],
        result=result,
    )
    items = []
    for system_dir, row_dir in folders:
        name = row_dir.relative_to(folder).as_posix()
        if not row_dir.name.isdigit() or int(row_dir.name) not in tasks_by_row:
            raise ImportFailed(f"folder name must be a row number of {PAPERS} (0–{len(tasks_by_row) - 1})", file=name)
        layout = next(((r, d) for r, d in OUTPUT_LAYOUTS if (row_dir / r).is_file()), None)
        if layout is None:
            expected = ", ".join(r for r, _ in OUTPUT_LAYOUTS)
            raise ImportFailed(f"no report file in the folder (expected one of {expected})", file=name)
        report_file, docs_file = layout
        text = read_text(row_dir / report_file, name=f"{name}/{report_file}")
        sources = []
        if (row_dir / docs_file).is_file():
            sources = READERS[docs_file](row_dir / docs_file, f"{name}/{docs_file}")
        items.append(ReportInput(
            task=tasks_by_row[int(row_dir.name)], system=systems[system_dir.name], text=text,
            sources=sources, source_path=f"{name}/{report_file}",
        ))
    return items


def import_deepscholar(path: Path, *, result: ImportResult) -> None:
    folder = Path(path)
    if not folder.is_dir() or not (folder / PAPERS).is_file():
        raise ImportFailed(f"expected the DeepScholar-bench folder holding {PAPERS}", file=folder.name)
    papers = _papers(folder)
    paper_ids = {clean_arxiv_id(rec.data["arxiv_id"]) for rec in papers}
    stats = _stats(folder, paper_ids)
    citations = _citations(folder, paper_ids, result=result)
    nuggets = _nuggets(folder, paper_ids)

    survey_rows, task_rows, prompts = [], [], {}
    for row, rec in enumerate(papers):
        paper_id = clean_arxiv_id(rec.data["arxiv_id"])
        title = " ".join(rec.data["title"].split())
        abstract = rec.data["abstract"].strip()
        related = rec.data["clean_latex_related_works"].strip()
        sections = latex_sections(related)
        published = _published(rec)
        survey_rows.append({
            "external_id": paper_id,
            "kind": Survey.Kind.RELATED_WORK,
            "title": title,
            "authors": rec.text("authors"),
            "abstract": abstract,
            "categories": rec.text("categories")[:300],
            "arxiv_id": paper_id,
            "url": f"https://arxiv.org/abs/{paper_id}",
            "publication_date": published.date() if published else None,
            "year": published.year if published else None,
            "full_text": related,
            "content": sections,
            "outline": [[s["level"], s["heading"]] for s in sections],
            "stats": stats.get(paper_id, {}),
            "extra": {"arxiv_version_id": rec.data["arxiv_id"].strip()},
        })
        task_rows.append({
            "key": paper_id,
            "survey": paper_id,
            "title": title[:500],
            "cutoff_date": published.date() - timedelta(days=1) if published else None,
            "excluded_titles": [title],
            "source": SOURCE,
            "extra": {"row": row},
        })
        prompts[paper_id] = QUERY + abstract
        if paper_id not in nuggets and nuggets:
            result.messages.append(f"{PAPERS}, line {rec.line}: no nuggets were released for {paper_id}")

    tasks = tasks_with_surveys_upsert(survey_rows, task_rows, source=SOURCE, protocol=Protocol.DEEPSCHOLAR,
                                      result=result)
    task_prompts_sync([TaskPrompt(task=tasks[k], level=TaskPrompt.Level.GENERAL, text=text)
                       for k, text in prompts.items()], label=SOURCE, result=result)
    bibliographies_store(
        bibliographies=[(tasks[k], citations[k]) for k in tasks], label=SOURCE, result=result
    )
    proposables_sync(
        existing=Nugget.objects.filter(task__in=[tasks[k] for k in nuggets], origin=Origin.IMPORT),
        incoming=[
            Nugget(task=tasks[k], text=text, importance=importance, position=i)
            for k, items in nuggets.items()
            for i, (text, importance) in enumerate(items)
        ],
        key=lambda n: (n.task_id, n.position),
        fields=("text", "importance"),
        label=SOURCE,
        result=result,
        kind="nugget",
    )
    tasks_by_row = {row["extra"]["row"]: tasks[row["key"]] for row in task_rows}
    reports_store(_outputs(folder, tasks_by_row, result=result), result=result)
