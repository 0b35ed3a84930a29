"""DeepScholar-bench (guestrin-lab): the repository as cloned, or its dataset folder.

``path`` is the repository root (``dataset/`` with the CSVs, system outputs in
``tests/baselines_results/``) or a folder holding the CSVs itself (outputs in
``system_outputs/``). Files of the dataset folder that are not read below are named in the
messages. The data:

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
  ``SurveyCitation`` list), in file order per paper.
* ``important_citations.csv`` (the ``citations.csv`` rows the release's LOTUS judge kept as
  important references) → ``GoldReference.important``: True for the listed rows (matched by
  ``citation_shorthand``, else normalized title), False for the paper's other references;
  the task's ``extra`` names the file (``Task.RELEASED_IMPORTANCE``), so scoring uses these
  labels — the benchmark's own — instead of asking a judge. Without the file ``important``
  stays False for curators or a judge to set.
* ``gt_nuggets_outputs/**/res.json`` (else ``res.csv``, the same answer as a pandas CSV) →
  ``Nugget`` rows (vital/okay). Folders nest (``20/26/29/32/res.json``) and their names are
  not reliable row numbers, so each file is matched to its paper by ``qid``.
* Other release files (``recovered_citations.csv``, ``papers.csv``, ``paper_content.csv``,
  ``related_works_combined.csv``) are named in the messages with why they are not read.
* ``<outputs>/<system>/<row>/`` → a ``System`` per folder and its ``Report`` on the paper
  of that row, each baseline's layout read as ``deepscholar_outputs`` describes; the
  retrieved documents go to ``Report.sources`` as ``{title, url, snippet, ...}``.
"""

import ast
import logging
import re
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from core.text import normalize_title

from ..models import Nugget, Origin, Protocol, Survey, Task, TaskPrompt
from ..services.bibliography import clean_arxiv_id, clean_doi
from .base import ImportFailed, ImportResult, Record, read_json
from .common import (
    CitedWork,
    bibliographies_store,
    csv_number,
    has_usable_title,
    proposables_sync,
    read_csv,
    reports_store,
    require_unique,
    task_prompts_sync,
    tasks_with_surveys_upsert,
)
from .deepscholar_outputs import outputs_read

SOURCE = "deepscholar"
logger = logging.getLogger(__name__)

PAPERS = "papers_with_related_works.csv"
CITATIONS = "citations.csv"
STATS = "citation_stats.csv"
IMPORTANT = "important_citations.csv"
NUGGETS = "gt_nuggets_outputs"
OUTPUTS = "system_outputs"
READ_FILES = {PAPERS, CITATIONS, STATS, IMPORTANT}
# Release files with nothing our model keeps, and why (named in the messages when present).
UNREAD_FILES = {
    "recovered_citations.csv": "web-search hits for the citations (search_res_*); a hit may be another page than the "
                               f"cited work, so it is not stored as its metadata; {CITATIONS} holds the references",
    "papers.csv": f"arXiv metadata of the papers, which {PAPERS} carries too",
    "paper_content.csv": f"the papers' related-work sections as extracted from the PDF; {PAPERS} holds them, and "
                         "its clean LaTeX section is the exemplar",
    "related_works_combined.csv": f"the raw, clean-LaTeX and PDF related-work sections, which {PAPERS} carries too",
}

QUERY = "Write a Related Works section for an academic paper given the paper's abstract. Here is the paper abstract:\n"

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


def _shown(path: Path, base: Path) -> str:
    """A file as errors name it: relative to the folder given to the import (``dataset/citations.csv``)."""
    return path.relative_to(base).as_posix()


def _papers(folder: Path, base: Path) -> list[Record]:
    required = ("arxiv_id", "title", "abstract", "clean_latex_related_works")
    records, seen = [], {}
    for rec in read_csv(folder / PAPERS, required=required, name=_shown(folder / PAPERS, base)):
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


def _stats(folder: Path, base: Path, paper_ids: set[str]) -> dict[str, dict]:
    path = folder / STATS
    if not path.is_file():
        return {}
    stats = {}
    for rec in read_csv(path, required=("arxiv_link", "total_citations"), name=_shown(path, base)):
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


def _citations(
    folder: Path, base: Path, paper_ids: set[str], *, result: ImportResult
) -> dict[str, list[CitedWork]]:
    required = ("parent_paper_arxiv_id", "cited_paper_title")
    works: dict[str, list[CitedWork]] = {paper_id: [] for paper_id in paper_ids}
    for rec in read_csv(folder / CITATIONS, required=required, name=_shown(folder / CITATIONS, base)):
        parent = clean_arxiv_id(rec.text("parent_paper_arxiv_id", required=True))
        if parent not in works:
            raise rec.fail(f"no paper {rec.data['parent_paper_arxiv_id'][:40]!r} in {PAPERS}", "parent_paper_arxiv_id")
        title = rec.text("cited_paper_title")
        if not has_usable_title(title):
            result.messages.append(f"{rec.file}, line {rec.line}: skipped a citation without a usable title")
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
        works[parent].append(CitedWork(record=record, key=rec.text("citation_shorthand"), where=f"{rec.file} line {rec.line}"))
    return works


def _mark_important(folder: Path, base: Path, works: dict[str, list[CitedWork]], *, result: ImportResult) -> bool:
    """``important_citations.csv``: the rows of ``citations.csv`` the release's judge kept as
    important references (paper §8.4, get_important_citations.py). Every reference of the
    papers is then labelled — listed ones important, the others not — and a listed row that
    matches no citation is named, not dropped in silence."""
    path = folder / IMPORTANT
    if not path.is_file():
        return False
    name = _shown(path, base)
    by_key = {
        paper: ({w.key: i for i, w in enumerate(cited) if w.key},
                {normalize_title(w.record["title"]): i for i, w in enumerate(cited)})
        for paper, cited in works.items()
    }
    important: dict[str, set[int]] = {paper: set() for paper in works}
    for rec in read_csv(path, required=("parent_paper_arxiv_id", "cited_paper_title"), name=name):
        parent = clean_arxiv_id(rec.text("parent_paper_arxiv_id", required=True))
        if parent not in works:
            raise rec.fail(f"no paper {rec.data['parent_paper_arxiv_id'][:40]!r} in {PAPERS}", "parent_paper_arxiv_id")
        keys, titles = by_key[parent]
        index = keys.get(rec.text("citation_shorthand"))
        if index is None:
            index = titles.get(normalize_title(rec.text("cited_paper_title")))
        if index is None:
            result.messages.append(f"{name}, line {rec.line}: no citation of {parent} in {CITATIONS} has this key "
                                   "or title; its importance was not recorded")
            result.add("important citation line", "skipped")
            continue
        important[parent].add(index)
    for paper, cited in works.items():
        works[paper] = [replace(w, important=i in important[paper]) for i, w in enumerate(cited)]
    result.add("citation", "labelled important", sum(len(found) for found in important.values()))
    return True


def _nugget_items(rec: Record, items: object, field: str) -> list[tuple[str, str]]:
    if not isinstance(items, list):
        raise rec.fail(f"expected a list of nuggets, got {type(items).__name__}", field)
    found = []
    for i, item in enumerate(items):
        nugget = rec.child(item, f"{field}[{i}]")
        importance = nugget.text("importance", required=True).strip().lower()
        if importance not in Nugget.Importance.values:
            raise nugget.fail(f"expected vital or okay, got {importance[:20]!r}", "importance")
        found.append((nugget.text("text", required=True).strip(), importance))
    return found


def _nuggets_json(path: Path, name: str) -> list[tuple[Record, list[tuple[str, str]]]]:
    data = read_json(path, name=name)
    rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
    if not isinstance(data, dict):
        raise rec.fail(f"expected a JSON object, got {type(data).__name__}")
    return [(rec, _nugget_items(rec, rec.get("nuggets", list, required=True), "nuggets"))]


def _nuggets_csv(path: Path, name: str) -> list[tuple[Record, list[tuple[str, str]]]]:
    """Upstream's pandas dump of the nuggetizer's answer: ``nuggets`` is a Python literal
    (``[{'text': ..., 'importance': 'vital', 'assignment': ...}]``), read without evaluating code."""
    found = []
    for rec in read_csv(path, required=("qid", "nuggets"), name=name):
        try:
            items = ast.literal_eval(rec.text("nuggets", required=True).strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise rec.fail("expected a list of {'text': ..., 'importance': ...} entries", "nuggets") from None
        found.append((rec, _nugget_items(rec, items, "nuggets")))
    return found


def _nuggets(folder: Path, base: Path, paper_ids: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Each nugget folder's ``res.json``, else its ``res.csv`` (upstream ships both for most
    rows, with the same nuggets, and only the CSV for some)."""
    root = folder / NUGGETS
    if not root.is_dir():
        return {}
    found: dict[str, list[tuple[str, str]]] = {}
    origin: dict[str, str] = {}
    for nugget_dir in sorted({p.parent for p in root.rglob("res.*")}):
        path = nugget_dir / "res.json"
        if path.is_file():
            read = _nuggets_json(path, _shown(path, base))
        elif (nugget_dir / "res.csv").is_file():
            path = nugget_dir / "res.csv"
            read = _nuggets_csv(path, _shown(path, base))
        else:
            logger.warning("%s: no res.json or res.csv (only %s): no nuggets read from it", _shown(nugget_dir, base),
                           ", ".join(sorted(p.name for p in nugget_dir.glob("res.*"))))
            continue
        for rec, items in read:
            qid = clean_arxiv_id(rec.text("qid", required=True))
            if qid not in paper_ids:
                raise rec.fail(f"no paper {rec.data['qid'][:40]!r} in {PAPERS}", "qid")
            if qid in origin:
                raise rec.fail(f"nuggets for {qid} were already read from {origin[qid]}", "qid")
            origin[qid] = rec.file
            found[qid] = items
    return found


def _locate(path: Path) -> tuple[Path, list[Path]]:
    """The folder holding the CSVs and the folders of system outputs, for the repository as
    cloned (``dataset/`` + ``tests/baselines_results/``) or a bare release folder."""
    if not path.is_dir():
        raise ImportFailed(f"expected the DeepScholar-bench repository (dataset/{PAPERS}) or its dataset folder",
                           file=path.name)
    for data in (path / "dataset", path):
        if (data / PAPERS).is_file():
            roots = [r for r in (data / OUTPUTS, path / "tests" / "baselines_results") if r.is_dir()]
            return data, list(dict.fromkeys(roots))
    raise ImportFailed(f"neither dataset/{PAPERS} nor {PAPERS} is in the folder", file=path.name)


def _unread_files(data: Path, base: Path, *, result: ImportResult) -> None:
    """Release files this importer does not read are named with the reason, never passed over in silence."""
    for path in sorted(p for p in data.iterdir() if p.is_file() and not p.name.startswith(".")):
        if path.name in READ_FILES or path.name.upper().startswith(("LICENSE", "README")):
            continue
        reason = UNREAD_FILES.get(path.name, f"not a release file; this importer reads {PAPERS}, {CITATIONS}, "
                                             f"{STATS}, {IMPORTANT} and {NUGGETS}/")
        result.messages.append(f"{path.relative_to(base).as_posix()}: not imported ({reason})")
    nuggets = data / NUGGETS
    if nuggets.is_dir():
        twins = [p for p in nuggets.rglob("res.csv") if (p.parent / "res.json").is_file()]
        if twins:
            result.messages.append(f"{nuggets.relative_to(base).as_posix()}: {len(twins)} res.csv files not imported "
                                   "(each holds the nuggets of the res.json beside it, which was read)")
        for folder in sorted({p.parent for p in nuggets.rglob("*") if p.is_file()}):
            if not (folder / "res.json").is_file() and not (folder / "res.csv").is_file():
                result.messages.append(f"{folder.relative_to(base).as_posix()}: neither res.json nor res.csv (only "
                                       f"{', '.join(sorted(p.name for p in folder.iterdir() if p.is_file()))}); "
                                       "no nuggets imported from it")


def import_deepscholar(path: Path, *, result: ImportResult) -> None:
    base = Path(path)
    folder, output_roots = _locate(base)
    _unread_files(folder, base, result=result)
    papers = _papers(folder, base)
    paper_ids = {clean_arxiv_id(rec.data["arxiv_id"]) for rec in papers}
    stats = _stats(folder, base, paper_ids)
    citations = _citations(folder, base, paper_ids, result=result)
    labelled = _mark_important(folder, base, citations, result=result)
    nuggets = _nuggets(folder, base, paper_ids)

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
            "extra": {"row": row} | ({Task.RELEASED_IMPORTANCE: IMPORTANT} if labelled else {}),
        })
        prompts[paper_id] = QUERY + abstract
        if paper_id not in nuggets and nuggets:
            result.messages.append(
                f"{_shown(folder / PAPERS, base)}, line {rec.line}: no nuggets were released for {paper_id}"
            )

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
    items = [item for root in output_roots for item in outputs_read(root, base, tasks_by_row, result=result)]
    reports_store(items, result=result)
