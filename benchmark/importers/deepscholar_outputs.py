"""DeepScholar-bench system outputs: ``<outputs>/<system>/<row>/`` folders, one per paper row.

Upstream ships them under ``tests/baselines_results/`` (our copy: ``system_outputs/``) and
its ``eval/parsers/`` read each baseline's own layout. The folder name is kept as the
``System`` name. In a row folder the report is, in this order:

* ``intro.md`` (deepscholar_base) with its retrieved documents in ``paper.csv``;
* ``storm_gen_article_polished.md``, else ``storm_gen_article.md`` (storm), directly in the
  row folder or in the one run folder inside it (upstream nests it in a timestamped
  folder), with ``url_to_info.json`` beside it;
* the one ``.md`` file of the folder (deepresearcher, openscholar, search_ai,
  openai_deepresearch; its name is the query, so it may hold newlines, ``:``, ``$`` or
  trailing spaces), with the ``.json`` of the folder for its ``ctxs`` documents — or, when
  there is no ``.md``, that ``.json``'s ``output`` field as the report.

Every other file of the folder is listed as skipped with the reason; a row folder without a
report is skipped as a whole, with the reason, in the import table.
"""

from dataclasses import dataclass
from pathlib import Path

from ..models import System
from ..services.reports import ReportInput
from .base import ImportFailed, ImportResult, Record, read_json
from .common import read_csv, read_text
from .systems import SystemSpec, systems_ensure

PAPERS = "papers_with_related_works.csv"

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
    "deepresearcher": SystemSpec(
        "deepresearcher", System.Workflow.DEEP_RESEARCH, "",
        "DeepResearcher agent, run by the DeepScholar-bench authors.",
    ),
    "openscholar": SystemSpec(
        "openscholar", System.Workflow.RAG, "",
        "OpenScholar retrieval-augmented LM, run by the DeepScholar-bench authors.",
    ),
    "openai_deepresearch": SystemSpec(
        "openai_deepresearch", System.Workflow.DEEP_RESEARCH, "",
        "OpenAI Deep Research, run by the DeepScholar-bench authors.",
    ),
}
STORM_REPORTS = ("storm_gen_article_polished.md", "storm_gen_article.md")
DOCUMENT_FIELDS = ("id", "title", "url", "snippet", "date", "authors")


def shown(name: str) -> str:
    """A file name as messages show it: control characters and edge spaces made visible."""
    return repr(name) if name != name.strip() or any(c < " " for c in name) else name


@dataclass
class RowLayout:
    report: Path | None  # the report file (markdown, or a JSON answer with ``output``)
    documents: Path | None
    used: set[Path]
    reason: str = ""  # why the row has no report


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def _storm_layout(row_dir: Path) -> RowLayout | None:
    folders = [row_dir] + sorted(p for p in row_dir.iterdir() if p.is_dir())
    for folder in folders:
        for name in STORM_REPORTS:
            if (folder / name).is_file():
                docs = folder / "url_to_info.json"
                return RowLayout(folder / name, docs if docs.is_file() else None, {folder / name, docs})
    return None


def row_layout(row_dir: Path) -> RowLayout:
    if (row_dir / "intro.md").is_file():
        docs = row_dir / "paper.csv"
        return RowLayout(row_dir / "intro.md", docs if docs.is_file() else None, {row_dir / "intro.md", docs})
    storm = _storm_layout(row_dir)
    if storm is not None:
        return storm
    files = _files(row_dir)
    markdown = [p for p in files if p.suffix.lower() == ".md"]
    answers = [p for p in files if p.suffix.lower() == ".json" and p.name != "url_to_info.json"]  # STORM's documents
    if len(markdown) > 1:
        return RowLayout(None, None, set(), f"{len(markdown)} .md files, expected one report")
    if len(answers) > 1:
        return RowLayout(None, None, set(), f"{len(answers)} .json files, expected one answer")
    if markdown:
        docs = answers[0] if answers else None
        return RowLayout(markdown[0], docs, {markdown[0], docs})
    if answers:
        return RowLayout(answers[0], answers[0], {answers[0]})
    return RowLayout(None, None, set(), "no report (intro.md, storm_gen_article*.md, a .md or a .json answer)")


def _record(path: Path, name: str) -> Record:
    data = read_json(path, name=name)
    rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
    if not isinstance(data, dict):
        raise rec.fail(f"expected a JSON object, got {type(data).__name__}")
    return rec


def _documents_csv(path: Path, name: str) -> list[dict]:
    return [
        {f: rec.data[f] for f in DOCUMENT_FIELDS if rec.data.get(f)}
        for rec in read_csv(path, required=("title", "url"), name=name)
    ]


def _documents_storm(path: Path, name: str) -> list[dict]:
    rec = _record(path, name)
    info = rec.get("url_to_info", dict, required=True)
    index = rec.get("url_to_unified_index", dict, default={})
    docs = []
    for url, value in info.items():
        doc = rec.child(value, f"url_to_info[{url!r}]")
        snippets = doc.get("snippets", list, default=[])
        docs.append({
            "url": url,
            "title": doc.text("title"),
            "snippet": doc.text("description") or next((s for s in snippets if isinstance(s, str)), ""),
            "index": index.get(url) if isinstance(index.get(url), int) else None,
        })
    return sorted(docs, key=lambda d: (d["index"] is None, d["index"] or 0))


def _documents_ctxs(rec: Record) -> list[dict]:
    """``ctxs`` of a JSON answer: search_ai (``text``) or deepresearcher/openscholar (``paperId``, ``abstract``)."""
    docs = []
    for i, value in enumerate(rec.get("ctxs", list, default=[])):
        ctx = rec.child(value, f"ctxs[{i}]")
        doc = {
            "id": str(ctx.get("paperId", (str, int), default="") or ctx.get("id", (str, int), default="")),
            "title": ctx.text("title"),
            "url": ctx.text("url"),
            "snippet": ctx.text("text") or ctx.text("abstract"),
            "date": ctx.text("date") or str(ctx.get("year", (str, int), default="") or ""),
        }
        docs.append({k: v for k, v in doc.items() if v})
    return docs


def _report(row_dir: Path, layout: RowLayout, name: str) -> tuple[str, list | None]:
    report_name = shown(f"{name}/{layout.report.relative_to(row_dir).as_posix()}")
    docs_name = shown(f"{name}/{layout.documents.relative_to(row_dir).as_posix()}") if layout.documents else ""
    if layout.report.suffix.lower() == ".json":
        rec = _record(layout.report, report_name)
        return rec.text("output", required=True), _documents_ctxs(rec)
    text = read_text(layout.report, name=report_name)
    if layout.documents is None:
        return text, None
    if layout.documents.name == "paper.csv":
        return text, _documents_csv(layout.documents, docs_name)
    if layout.documents.name == "url_to_info.json":
        return text, _documents_storm(layout.documents, docs_name)
    return text, _documents_ctxs(_record(layout.documents, docs_name))


def outputs_read(root: Path, base: Path, tasks_by_row: dict[int, object], *, result: ImportResult) -> list[ReportInput]:
    """The reports under ``root`` (``<system>/<row>/``); names in messages are relative to ``base``."""
    system_dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    for stray in _files(root):
        result.messages.append(f"{stray.relative_to(base).as_posix()}: ignored (not a <system>/ folder)")
    systems = systems_ensure(
        [KNOWN_SYSTEMS.get(s.name) or SystemSpec(s.name, description="Released with DeepScholar-bench.")
         for s in system_dirs],
        result=result,
    )
    items = []
    for system_dir in system_dirs:
        system = system_dir.name
        result.system(system)  # a system whose every row is skipped still gets its row in the table
        for stray in _files(system_dir):
            result.skip(system, shown(stray.relative_to(base).as_posix()), "not in a <row>/ folder")
        for row_dir in sorted(p for p in system_dir.iterdir() if p.is_dir()):
            name = row_dir.relative_to(base).as_posix()
            if not row_dir.name.isdigit() or int(row_dir.name) not in tasks_by_row:
                raise ImportFailed(
                    f"folder name must be a row number of {PAPERS} (0–{len(tasks_by_row) - 1})", file=shown(name)
                )
            layout = row_layout(row_dir)
            if layout.report is None:
                result.skip(system, shown(name + "/"), layout.reason)
                continue
            text, sources = _report(row_dir, layout, name)
            if not text.strip():
                result.skip(system, shown(name + "/" + layout.report.name), "the report is empty")
                continue
            for other in sorted(p for p in row_dir.rglob("*") if p.is_file() and p not in layout.used):
                result.skip(system, shown(other.relative_to(base).as_posix()),
                            "not read: not the report or its documents")
            items.append(ReportInput(
                task=tasks_by_row[int(row_dir.name)], system=systems[system], text=text, sources=sources,
                source_path=shown(f"{name}/{layout.report.relative_to(row_dir).as_posix()}")[:500],
            ))
    return items
