"""SurveyLens (TechnicolorGUO): Structured Survey Representations and human outline preferences.

``import_surveylens`` — ``path`` is one topic folder (``surveylens/luciferase/``) holding
``<System>.json`` files in the Structured Survey Representation (SSR: ``outline``,
``content``, ``references``, ``metadata``):

* ``Human.json`` → the gold ``Survey`` (source ``surveylens``, external id = folder
  name) with the SSR in ``outline``/``content``/``references`` (content entries as
  ``{heading, level, text, stats}``), summary ``stats``, and its discipline (read from the
  ``metadata.source_file`` path, taxonomy ``surveylens``); its reference list is empty in
  the release, which is reported;
* a ``Task`` (protocol surveylens, key = folder name) whose general ``TaskPrompt`` is the
  topic the systems were given (recovered from their ``source_file`` names when at least
  two agree, else the human survey's title);
* every other file → a ``System`` (named after the file) and its ``Report``: markdown
  rebuilt from the SSR (outline headings, each section's content, a numbered reference
  list); the SSR itself is kept as ``Report.sources == [{"kind": "ssr", "outline",
  "content", "references", "metadata"}]`` so component metrics can use it directly.

Human pairwise label files are read by ``annotation.importers.surveylens_annotations``; both link a topic to the
same ``Task`` (``topic_tasks``), whichever file introduced it.
"""

import re
from collections import Counter
from dataclasses import replace
from collections.abc import Iterable
from pathlib import Path

from ..models import Protocol, Survey, System, Task, TaskPrompt, system_key
from ..services.reports import ReportInput
from .base import ImportFailed, ImportResult, Record, read_json
from .common import (
    disciplines_ensure,
    reports_store,
    slugify_key,
    task_prompts_sync,
    tasks_with_surveys_upsert,
)
from .systems import SystemSpec, systems_ensure

SOURCE = "surveylens"
HUMAN_FILE = "Human.json"

# The ten disciplines of SurveyLens-1k (paper, Appendix D), with the short names the
# release and its tables use.
DISCIPLINES = {
    "biology": ("Biology", ("bio",)),
    "business": ("Business", ("bus",)),
    "computer-science": ("Computer Science", ("cs",)),
    "education": ("Education", ("edu",)),
    "engineering": ("Engineering", ("eng",)),
    "environmental-science": ("Environmental Science", ("env", "envsci")),
    "medicine": ("Medicine", ("med",)),
    "physics": ("Physics", ("phy",)),
    "psychology": ("Psychology", ("psy",)),
    "sociology": ("Sociology", ("soc",)),
}
_DISCIPLINE_ALIASES = {
    alias: code
    for code, (name, short) in DISCIPLINES.items()
    for alias in (code, slugify_key(name), *short)
}

_PIPELINE = "Automatic survey-generation system evaluated in SurveyLens."
SYSTEMS = {
    name: SystemSpec(name, System.Workflow.SURVEY_PIPELINE, description=_PIPELINE)
    for name in ("Autosurvey", "AutoSurvey2", "InteractiveSurvey", "SciSage", "SurveyForge", "SurveyX", "LLMxMapReduce-V2")
}
_KNOWN = {system_key(name): spec for name, spec in SYSTEMS.items()}
_UNCLEAR = (
    "SurveyLens output released as {name}.json; the release does not say whether it is the vanilla model or "
    "its Deep Research agent."
)


# Words that say nothing about a topic: an outline title sharing only these is off-topic.
_GENERIC = set(
    "a an the of in on for and to with from by at as its their into between via toward towards about "
    "survey surveys comprehensive review reviews literature paper overview systematic research study studies "
    "advances recent current state perspective perspectives approach approaches science sciences".split()
) | {word for _, (name, _) in DISCIPLINES.items() for word in name.lower().split()}


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _GENERIC and len(w) > 1}


def shares_topic_word(topic: str, title: str) -> bool:
    """Whether an outline title shares a content word with its topic (prefix match of 4+ letters,
    so ``nano`` meets ``nanotechnology`` and ``organoid`` meets ``organoids``)."""
    title_words = _content_words(title)
    for t in _content_words(topic):
        for w in title_words:
            if t == w or (min(len(t), len(w)) >= 4 and (t.startswith(w) or w.startswith(t))):
                return True
    return False


def _system_spec(name: str) -> SystemSpec:
    known = _KNOWN.get(system_key(name))
    return replace(known, name=name) if known else SystemSpec(name, description=_UNCLEAR.format(name=name))


def topic_tasks(topics: Iterable[str]) -> dict[str, Task]:
    """``{topic slug: Task}`` for the SurveyLens tasks that already exist for these topics, whichever
    import introduced them: matched on the task key or on the slug of the topic it records."""
    wanted = set(topics)
    found: dict[str, Task] = {}
    # Only what matching needs: a task's survey holds a whole human-written survey, and this runs
    # once per topic of a 100-topic tree.
    tasks = (Task.objects.filter(protocol=Protocol.SURVEYLENS).select_related("survey")
             .only("id", "key", "extra", "protocol", "survey_id", "survey__external_id").order_by("pk"))
    for task in tasks.iterator(chunk_size=500):
        for slug in (task.key, slugify_key(str((task.extra or {}).get("topic") or ""))):
            if slug in wanted:
                found.setdefault(slug, task)
    return found


def discipline_code(value: str) -> str | None:
    return _DISCIPLINE_ALIASES.get(slugify_key(value)) or _DISCIPLINE_ALIASES.get(slugify_key(value).replace("-", ""))


# --- SSR ----------------------------------------------------------------------------------


def _ssr(path: Path, folder_name: str, *, name: str | None = None) -> tuple[Record, dict]:
    name = name or f"{folder_name}/{path.name}"
    data = read_json(path, name=name)
    rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
    if not isinstance(data, dict):
        raise rec.fail(f"expected a JSON object, got {type(data).__name__}")
    outline = []
    for i, entry in enumerate(rec.get("outline", list, required=True)):
        if (not isinstance(entry, list) or len(entry) != 2 or isinstance(entry[0], bool)
                or not isinstance(entry[0], int) or not isinstance(entry[1], str)):
            raise rec.fail("expected [level, title]", f"outline[{i}]")
        outline.append([entry[0], entry[1]])
    content = []
    for i, entry in enumerate(rec.get("content", list, required=True)):
        section = rec.child(entry, f"content[{i}]")
        content.append({
            "heading": section.get("heading", str, required=True),
            "level": section.get("level", int, required=True),
            "content": section.get("content", str, default=""),
            "stats": section.get("stats", dict, default={}),
        })
    references = []
    for i, entry in enumerate(rec.get("references", list, default=[])):
        ref = rec.child(entry, f"references[{i}]")
        references.append({
            "number": ref.get("number", (int, str)),
            "title": ref.get("title", str),
            "text": ref.get("text", str, default=""),
        })
    metadata = rec.get("metadata", dict, default={})
    return rec, {"outline": outline, "content": content, "references": references, "metadata": metadata}


def ssr_markdown(ssr: dict) -> str:
    """Markdown of a survey in SSR: its outline's headings, each section's content, its references."""
    parts, pending = [], list(ssr["content"])
    for level, title in ssr["outline"]:
        parts.append(f"{'#' * max(1, min(level, 6))} {title.strip()}")
        if pending and pending[0]["heading"] == title:
            text = pending.pop(0)["content"].strip()
            if text:
                parts.append(text)
    for section in pending:  # content whose heading is not in the outline
        parts.append(f"{'#' * max(1, min(section['level'], 6))} {section['heading'].strip()}")
        if section["content"].strip():
            parts.append(section["content"].strip())
    if ssr["references"]:
        lines = [f"[{ref['number'] if ref['number'] not in (None, '') else i}] {' '.join(ref['text'].split())}"
                 for i, ref in enumerate(ssr["references"], start=1)]
        parts.append("# References\n\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n"


def ssr_stats(ssr: dict) -> dict:
    words = sum(int(s["stats"].get("word_count") or 0) for s in ssr["content"])
    return {
        "outline_entries": len(ssr["outline"]),
        "max_depth": max((level for level, _ in ssr["outline"]), default=0),
        "sections": len(ssr["content"]),
        "sections_with_text": sum(1 for s in ssr["content"] if s["content"].strip()),
        "words": words,
        "characters": sum(int(s["stats"].get("char_count") or 0) for s in ssr["content"]),
        "sentences": sum(int(s["stats"].get("sentence_count") or 0) for s in ssr["content"]),
        "references": len(ssr["references"]),
    }


def _source_parts(ssr: dict) -> list[str]:
    return [p for p in re.split(r"[\\/]", str(ssr["metadata"].get("source_file") or "")) if p]


def _topic_from_sources(ssrs: dict[str, dict]) -> str | None:
    """The topic the systems were given, as several of them name their output file after it."""
    names = []
    for ssr in ssrs.values():
        parts = _source_parts(ssr)
        if not parts:
            continue
        stem = re.sub(r"(_split)?\.json$", "", parts[-1])
        stem = re.sub(r"^survey_|_paper$", "", stem).replace("_", " ")
        names.append(" ".join(stem.split()))
    (topic, votes), = Counter(names).most_common(1) or [(None, 0)]
    return topic if votes >= 2 else None


def human_survey_row(key: str, human: dict | None, markdown: str, *, title: str, discipline_id: int | None) -> dict:
    """The gold ``Survey`` of a topic: the human-written survey in SSR, as markdown, or (without
    either) a topic-only survey."""
    row = {"external_id": key, "title": title, "discipline_id": discipline_id}
    if human is not None:
        return row | {
            "kind": Survey.Kind.SURVEY,
            "outline": human["outline"],
            "content": [{"heading": s["heading"], "level": s["level"], "text": s["content"], "stats": s["stats"]}
                        for s in human["content"]],
            "references": human["references"],
            "stats": ssr_stats(human),
            "full_text": ssr_markdown(human),
            "extra": {"metadata": human["metadata"]},
        }
    if markdown:
        outline = [[len(m[1]), m[2].strip()] for m in re.finditer(r"^(#{1,6})[ \t]+(.+)$", markdown, re.MULTILINE)]
        return row | {"kind": Survey.Kind.SURVEY, "outline": outline, "full_text": markdown}
    return row | {"kind": Survey.Kind.TOPIC}


def topic_store(
    *, key: str, topic: str, survey_row: dict, ssrs: dict[str, tuple[dict, str]], result: ImportResult
) -> None:
    """One topic: its task (and gold survey), its prompt, and each system's report from its SSR
    (``ssrs``: released system name → (SSR, file it was read from))."""
    task = topic_task_store(key=key, topic=topic, survey_row=survey_row, result=result)
    systems = systems_ensure([_system_spec(name) for name in ssrs], result=result)
    reports_store([_report_input(task, systems[name], ssr, where) for name, (ssr, where) in ssrs.items()],
                  result=result)


def topic_task_store(*, key: str, topic: str, survey_row: dict, result: ImportResult) -> Task:
    """A topic's task on its gold survey, with the topic as its general prompt."""
    task_row = {"key": key, "survey": key, "title": survey_row["title"][:500], "source": SOURCE,
                "extra": {"topic": topic}}
    task = tasks_with_surveys_upsert([survey_row], [task_row], source=SOURCE, protocol=Protocol.SURVEYLENS,
                                     result=result)[key]
    task_prompts_sync([TaskPrompt(task=task, level=TaskPrompt.Level.GENERAL, text=topic)], label=SOURCE, result=result)
    return task


def topic_report_store(*, task: Task, system: str, ssr: dict, where: str, result: ImportResult) -> None:
    """One system's report on a topic: stored on its own, so a long tree holds one report in memory."""
    found = systems_ensure([_system_spec(system)], result=result)[system]
    reports_store([_report_input(task, found, ssr, where)], result=result)


def _report_input(task: Task, system: System, ssr: dict, where: str) -> ReportInput:
    return ReportInput(task=task, system=system, text=ssr_markdown(ssr), sources=[{"kind": "ssr", **ssr}],
                       source_path=where[:500])


def topic_key(topic: str, default: str) -> str:
    """The task key of a topic: the existing task's when a label file or another release introduced
    the topic first, else ``default``."""
    found = topic_tasks([slugify_key(topic)])
    return next(iter(found.values())).key if found else default


def import_surveylens(path: Path, *, result: ImportResult) -> None:
    """A topic folder of ``<System>.json`` files, or upstream's ``results/processed/`` tree."""
    from .surveylens_processed import import_processed, processed_root

    folder = Path(path)
    if not folder.is_dir():
        raise ImportFailed("expected a SurveyLens topic folder of <System>.json files or a results/processed/ folder",
                           file=folder.name)
    root = processed_root(folder)
    if root is not None:
        import_processed(root, base=folder, result=result)
        return
    if not (folder / HUMAN_FILE).is_file():
        raise ImportFailed(f"the human-written survey {HUMAN_FILE} is missing (and no results/processed/ folder "
                           "is in it)", file=folder.name)
    ssrs = {}
    for file in sorted(folder.glob("*.json")):
        _, ssrs[file.stem] = _ssr(file, folder.name)
    for other in sorted(p for p in folder.iterdir() if p.suffix.lower() != ".json" and not p.name.startswith(".")):
        result.messages.append(f"{folder.name}/{other.name}: ignored (not a <System>.json file)")
    human = ssrs.pop(Path(HUMAN_FILE).stem)
    title = next((t.strip() for _, t in human["outline"] if t.strip()), "") or folder.name
    topic = _topic_from_sources(ssrs) or title
    key = topic_key(topic, folder.name)
    code = next((c for part in _source_parts(human) if (c := discipline_code(part))), None)
    if code is None:
        result.messages.append(f"{folder.name}/{HUMAN_FILE}: no SurveyLens discipline in metadata.source_file")
    if not human["references"]:
        result.messages.append(f"{folder.name}/{HUMAN_FILE}: the human-written survey has an empty reference list")
    discipline = disciplines_ensure(SOURCE, {code: DISCIPLINES[code][0]}, result=result)[code] if code else None
    topic_store(
        key=key, topic=topic,
        survey_row=human_survey_row(key, human, "", title=title, discipline_id=discipline.pk if discipline else None),
        ssrs={name: (ssr, f"{folder.name}/{name}.json") for name, ssr in ssrs.items()},
        result=result,
    )
