"""ReportBench v1.1 layout: a task file and its ``_GT`` folder of gold bibliographies, as
``benchmark.importers.reportbench`` reads them.

Files: ``reportbench.jsonl`` (one line per task, the arXiv metadata of the survey and the
prompt) and ``reportbench_GT/<arxiv id>.jsonl`` (the gold references, one per line:
``bib_id``, ``title``, ``author``, ``meta_info``). Input is native task lines; only curated
content is written (rejected prompts and gold references are left out).

What the importer derives is written back where it came from: the first and last version
dates (``versions``, RFC 2822) from the survey's publication date and the task's
``extra.last_version_date``; ``comments``/``update_date`` from the survey's ``extra``; the
application domain from the survey's discipline name. The cut-off date and excluded title
are derived from the prompt and title again on import, so edits made to them directly are
not carried (the prompt is what ReportBench states them in).
"""

import json
from collections.abc import Callable, Iterable
from datetime import date, datetime, timezone
from email.utils import format_datetime

from ..models import Protocol, ReviewStatus, TaskPrompt

TASKS_FILE = "reportbench.jsonl"
GOLD_FOLDER = "reportbench_GT"
# A prompt is written at one level; a task with several is written with the first of these.
LEVEL_ORDER = {level: rank for rank, level in enumerate(TaskPrompt.Level.values)}
META_EXTRA = ("volume", "number", "pages", "publisher", "month")


def _kept(items: Iterable[dict]) -> list[dict]:
    return [item for item in items if item.get("review_status") != ReviewStatus.REJECTED]


def _rfc2822(day: str | None) -> str | None:
    if not day:
        return None
    value = date.fromisoformat(day)
    return format_datetime(datetime(value.year, value.month, value.day, tzinfo=timezone.utc), usegmt=True)


def _safe_name(key: str) -> str:
    if not key or ".." in key or key.startswith("/") or "\\" in key:
        raise ValueError(f"reportbench task key {key!r} cannot name a gold-bibliography file")
    return key


def task_record(task: dict) -> dict:
    survey = task["survey"]
    prompts = sorted(_kept(task["prompts"]), key=lambda p: LEVEL_ORDER.get(p["level"], 99))
    if not prompts:
        raise ValueError(f"reportbench task {task['key']} has no prompt that is not rejected; ReportBench needs one")
    first = _rfc2822(survey["publication_date"])
    last = _rfc2822((task["extra"] or {}).get("last_version_date"))
    versions = [{"version": "v1", "created": first}] if first else []
    if last and last != first:
        versions.append({"created": last})  # the release numbers versions; we only know the last one's date
    extra = survey["extra"] or {}
    discipline = survey["discipline"]
    return {
        "arxiv_id": task["key"],
        "title": survey["title"],
        "authors": survey["authors"],
        "abstract": survey["abstract"],
        "categories": survey["categories"],
        "doi": survey["doi"],
        "journal-ref": survey["venue"],
        "comments": extra.get("comments", ""),
        "update_date": extra.get("update_date", ""),
        "versions": versions,
        "application_domain": discipline["name"] if discipline else "",
        "prompt": prompts[0]["text"],
    }


def _bib_key(bib: dict) -> str:
    return json.dumps(bib, sort_keys=True, ensure_ascii=False)


def gold_record(bib: dict, bib_id: str) -> dict:
    extra = bib["extra"] or {}
    # An identifier the importer set aside (another entry owns it) is what the source said.
    arxiv_id = bib["arxiv_id"] or extra.get("conflicting_arxiv_id", "")
    doi = bib["doi"] or extra.get("conflicting_doi", "")
    meta: dict[str, str] = {}
    if bib["year"] is not None:
        meta["year"] = str(bib["year"])
    for name, value in (("journal", bib["venue"]), ("doi", doi), ("url", bib["url"]), ("abstract", bib["abstract"])):
        if value:
            meta[name] = value
    if arxiv_id:
        meta["eprint"], meta["archivePrefix"] = arxiv_id, "arXiv"
    for name in META_EXTRA:
        value = extra.get(name)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            meta[name] = str(value)
    return {"bib_id": bib_id, "title": bib["title"], "author": bib["authors"], "meta_info": meta}


def write_reportbench(lines: Iterable[dict], sink: Callable[[str, bytes], None], counts: dict[str, int]) -> None:
    """Write the reportbench tasks of ``lines``: each task's gold file as it comes, the task file last."""
    records = []
    for task in lines:
        if task["protocol"] != Protocol.REPORTBENCH:
            counts["left out: tasks of other protocols"] += 1
            continue
        records.append(json.dumps(task_record(task), ensure_ascii=False) + "\n")
        counts["left out: rejected prompts"] += len(task["prompts"]) - len(_kept(task["prompts"]))
        keys = {_bib_key(c["bib"]): c["key"] for c in task["survey"]["bibliography"]}
        golds = _kept(task["gold_references"])
        counts["left out: rejected gold references"] += len(task["gold_references"]) - len(golds)
        counts["gold references"] += len(golds)
        counts["tasks"] += 1
        body = "".join(
            json.dumps(gold_record(g["bib"], keys.get(_bib_key(g["bib"]), "")), ensure_ascii=False) + "\n"
            for g in golds
        )
        sink(f"{GOLD_FOLDER}/{_safe_name(task['key'])}.jsonl", body.encode("utf-8"))
    if not records:
        raise ValueError("the task set has no reportbench tasks to write in the ReportBench format")
    sink(TASKS_FILE, "".join(records).encode("utf-8"))
