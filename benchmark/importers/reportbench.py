"""ReportBench v1.1 (ByteDance-BandAI): ``ReportBench_v1.1.jsonl`` and its ``_GT`` folder.

``path`` is the JSONL file, or the folder holding exactly one ``*.jsonl``; the gold
bibliographies are read from ``<jsonl stem>_GT/<arxiv_id>.jsonl`` beside it.

Each line becomes:

* a ``Survey`` (kind survey, source ``reportbench``, external id = arXiv id) with the
  arXiv metadata; ``publication_date`` is the date of the first version; its
  ``application_domain`` is a ``Discipline`` of taxonomy ``reportbench`` coded A–K as
  in the paper's domain table;
* a ``Task`` (protocol reportbench, key = arXiv id) whose ``excluded_titles`` hold the
  survey's own title (the prompt rule "do not cite the survey") and whose
  ``cutoff_date`` is read from the prompt (see ``cutoff_from_prompt``);
* one ``TaskPrompt`` at the level the prompt was written at (``prompt_level``);
* its gold bibliography as ``GoldReference`` rows (and the survey's ``SurveyCitation``
  list), position = order in the file, entries deduplicated by ``bib_entries_upsert``.

Real-data quirks handled: gold lines without a usable title are skipped with a message
naming file and line; a bibliography listing the same work twice keeps it once and says
so; free-text ``year`` values (``'2019b'``, ``'Aug. 2021'``) yield their year or none.
Malformed JSON, a missing required field or a wrong type fails the whole import.

Options: ``limit`` (first N tasks of the file) and ``keys`` (only these arXiv ids).
"""

import calendar
import re
from collections.abc import Sequence
from datetime import date, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

from ..models import Protocol, Survey, TaskPrompt
from ..services.bibliography import clean_arxiv_id, clean_doi
from .base import ImportFailed, ImportResult, Record, read_jsonl
from .common import (
    CitedWork,
    bibliographies_store,
    disciplines_ensure,
    has_usable_title,
    read_jsonl_as,
    require_unique,
    slugify_key,
    task_prompts_sync,
    tasks_with_surveys_upsert,
    year_from,
)

SOURCE = "reportbench"

# The paper's application-domain table (§2.1.3); the release spells some names differently,
# so a domain is recognised by its first word.
DOMAIN_CODES = {
    "basic": "A", "information": "B", "artificial": "C", "healthcare": "D", "manufacturing": "E",
    "transportation": "F", "public": "G", "finance": "H", "energy": "I", "culture": "J", "unknown": "K",
}

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTH_RE = "|".join(name for name in calendar.month_name if name)
_CUTOFF = re.compile(
    r"(?P<rel>on or before|no later than|not later than|prior to|before|until|up to)\W{0,4}"
    r"(?:the end of\s+)?(?:(?P<month>" + _MONTH_RE + r")\.?\s+)?(?P<year>(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"(?:^|\n)\s*(?:\d+[.)]|[-*•])\s+")
_DETAIL_CONSTRAINT = re.compile(
    r"\b(?:conferences?|journals?|venues?|English|Chinese|institutions?|laborator(?:y|ies)|universit(?:y|ies)"
    r"|top-tier|research (?:teams?|groups?|labs?))\b",
    re.IGNORECASE,
)
SENTENCE_MAX_CHARS = 320


def prompt_level(prompt: str) -> str:
    """The ReportBench prompt template a prompt came from (paper §2.1.2).

    The release does not record it, so it is recognised from the templates' definitions:
    a *detail-rich* prompt carries constraints beyond the cut-off (preferred venues,
    language, institutions) or a structured list of aspects; a *sentence-level* prompt is
    one short sentence (all 35 of them are under 270 characters, the shortest paragraph
    is 408); everything else is *paragraph-level*. On v1.1 this gives 35/32/33.
    """
    if _LIST_ITEM.search(prompt) or _DETAIL_CONSTRAINT.search(prompt):
        return TaskPrompt.Level.DETAIL
    if len(prompt.strip()) <= SENTENCE_MAX_CHARS:
        return TaskPrompt.Level.SENTENCE
    return TaskPrompt.Level.PARAGRAPH


def cutoff_from_prompt(prompt: str) -> tuple[date | None, str]:
    """The last publication date the prompt allows, and the phrase it was read from.

    Read literally: "before/prior to April 2025" → 2025-03-31; "no later than / on or
    before / until April 2025" → 2025-04-30; a bare year covers the whole year (or ends
    the year before, for "before 2021"). ``(None, '')`` when the prompt states no date.
    """
    match = _CUTOFF.search(prompt)
    if not match:
        return None, ""
    year = int(match["year"])
    month = _MONTHS[match["month"].lower()] if match["month"] else None
    exclusive = match["rel"].lower() in ("before", "prior to")
    if month is None:
        last = date(year - 1, 12, 31) if exclusive else date(year, 12, 31)
    elif exclusive:
        last = date(year, month, 1) - timedelta(days=1)
    else:
        last = date(year, month, calendar.monthrange(year, month)[1])
    return last, " ".join(match.group(0).split())


def _version_date(rec: Record, versions: list, index: int) -> date | None:
    if not versions:
        return None
    version = rec.child(versions[index], f"versions[{index % len(versions)}]")
    created = version.text("created")
    if not created:
        return None
    try:
        return parsedate_to_datetime(created).date()
    except (TypeError, ValueError):
        raise version.fail(f"not an RFC 2822 date: {created[:40]!r}", "created") from None


def _locate(path: Path) -> tuple[Path, Path]:
    if path.is_dir():
        candidates = sorted(p for p in path.glob("*.jsonl") if p.is_file())
        if len(candidates) != 1:
            raise ImportFailed(
                f"expected exactly one .jsonl task file in the folder, found {len(candidates)}", file=path.name
            )
        path = candidates[0]
    gt_dir = path.with_name(f"{path.stem}_GT")
    if not gt_dir.is_dir():
        raise ImportFailed(f"the gold-bibliography folder {gt_dir.name}/ is missing beside it", file=path.name)
    return path, gt_dir


def _bib_record(rec: Record) -> dict | None:
    """A gold line → a ``bib_entries_upsert`` record, or None when it has no usable title."""
    title = rec.get("title", str, default="")
    if not has_usable_title(title):
        return None
    meta = rec.child(rec.get("meta_info", dict, default={}), "meta_info")
    text: dict[str, str] = {}
    for name, value in meta.data.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise meta.fail(f"expected a string, got {type(value).__name__}", name)
        if str(value).strip():
            text[name.lower()] = str(value).strip()
    arxiv = ""
    for name in ("eprint", "arxivid", "arxiv", "url", "journal", "note"):
        value = text.get(name, "")
        if name == "eprint" and text.get("archiveprefix", "arxiv").lower() != "arxiv":
            continue
        if name in ("url", "journal", "note") and "arxiv" not in value.lower():
            continue
        arxiv = clean_arxiv_id(value)
        if arxiv:
            break
    doi = clean_doi(text.get("doi", "")) or (clean_doi(text["url"]) if "doi.org" in text.get("url", "") else "")
    return {
        "title": title,
        "authors": rec.get("author", str, default=""),
        "year": year_from(text.get("year")),
        "venue": text.get("journal") or text.get("booktitle") or "",
        "arxiv_id": arxiv,
        "doi": doi,
        "url": text.get("url", "") if text.get("url", "").startswith(("http://", "https://")) else "",
        "abstract": text.get("abstract", ""),
        "extra": {k: text[k] for k in ("volume", "number", "pages", "publisher", "month") if k in text},
    }


def _gold_bibliography(gt_dir: Path, arxiv_id: str, *, result: ImportResult) -> list[CitedWork]:
    path = gt_dir / f"{arxiv_id}.jsonl"
    name = f"{gt_dir.name}/{path.name}"
    if not path.is_file():
        raise ImportFailed("gold bibliography file is missing", file=name)
    works = []
    for line, data in read_jsonl_as(path, name):
        rec = Record(data, file=name, line=line)
        record = _bib_record(rec)
        if record is None:
            result.messages.append(f"{name}, line {line}: skipped a reference without a usable title")
            result.add("gold line", "skipped")
            continue
        works.append(CitedWork(record=record, key=rec.get("bib_id", str, default=""), where=f"line {line}"))
    return works


def import_reportbench(
    path: Path, *, result: ImportResult, limit: int | None = None, keys: Sequence[str] | None = None
) -> None:
    jsonl, gt_dir = _locate(Path(path))
    wanted = set(keys) if keys is not None else None
    records: list[Record] = []
    seen: dict[str, int] = {}
    for line, data in read_jsonl(jsonl):
        rec = Record(data, file=jsonl.name, line=line)
        arxiv_id = rec.text("arxiv_id", required=True).strip()
        require_unique(seen, arxiv_id, rec, "arxiv_id", "arXiv id")
        if wanted is not None and arxiv_id not in wanted:
            continue
        records.append(rec)
        if limit is not None and len(records) >= limit:
            break
    if wanted is not None and limit is None and (unknown := wanted - seen.keys()):
        raise ImportFailed(f"no task with arXiv id {', '.join(sorted(unknown))}", file=jsonl.name)

    domains: dict[str, str] = {}
    survey_rows, task_rows, prompts = [], [], {}
    for rec in records:
        arxiv_id = rec.data["arxiv_id"].strip()
        title = " ".join(rec.text("title", required=True).split())
        prompt = rec.text("prompt", required=True)
        versions = rec.get("versions", list, default=[])
        first, last = _version_date(rec, versions, 0), _version_date(rec, versions, -1)
        domain = " ".join(rec.text("application_domain").split())
        code = ""
        if domain:
            code = DOMAIN_CODES.get(domain.split()[0].lower().strip(",")) or slugify_key(domain)[:50]
            if code not in DOMAIN_CODES.values():
                result.messages.append(f"{jsonl.name}, line {rec.line}: unknown application domain {domain!r}")
            domains.setdefault(code, domain)
        categories = rec.get("categories", str, default="")
        survey_rows.append({
            "external_id": arxiv_id,
            "kind": Survey.Kind.SURVEY,
            "title": title,
            "authors": rec.text("authors"),
            "abstract": rec.text("abstract").strip(),
            "categories": categories[:300],
            "doi": clean_doi(rec.get("doi", str, default="")),
            "arxiv_id": clean_arxiv_id(arxiv_id) or arxiv_id[:40],
            "url": f"https://arxiv.org/abs/{arxiv_id}",
            "venue": rec.get("journal-ref", str, default="")[:500],
            "publication_date": first,
            "year": first.year if first else None,
            "discipline_code": code,
            "extra": {"comments": rec.get("comments", str, default=""), "update_date": rec.get("update_date", str, default="")},
        })
        cutoff, phrase = cutoff_from_prompt(prompt)
        if cutoff is None:
            result.messages.append(f"{jsonl.name}, line {rec.line}: the prompt of {arxiv_id} states no cut-off date")
        if re.match(r"\s*(certainly|sure|of course)\b[^\n]*:\s*\n", prompt, re.IGNORECASE):
            result.messages.append(
                f"{jsonl.name}, line {rec.line}: the prompt of {arxiv_id} starts with a leftover chat preamble "
                f"({prompt.strip().splitlines()[0]!r}); kept as released"
            )
        task_rows.append({
            "key": arxiv_id,
            "survey": arxiv_id,
            "title": title[:500],
            "cutoff_date": cutoff,
            "excluded_titles": [title],
            "source": SOURCE,
            "extra": {"cutoff_phrase": phrase, "last_version_date": last.isoformat() if last else None},
        })
        prompts[arxiv_id] = (prompt_level(prompt), prompt)

    disciplines = disciplines_ensure("reportbench", domains, result=result)
    for row in survey_rows:
        code = row.pop("discipline_code")
        row["discipline_id"] = disciplines[code].pk if code else None
    tasks = tasks_with_surveys_upsert(survey_rows, task_rows, source=SOURCE, protocol=Protocol.REPORTBENCH,
                                      result=result)
    task_prompts_sync([TaskPrompt(task=tasks[k], level=level, text=text) for k, (level, text) in prompts.items()],
                      label=SOURCE, result=result)
    bibliographies_store(
        bibliographies=[(tasks[k], _gold_bibliography(gt_dir, k, result=result)) for k in tasks],
        label=SOURCE,
        result=result,
    )
