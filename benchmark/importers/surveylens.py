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

``import_surveylens_annotations`` — ``path`` is one ``*_outline_labels.json`` file or a
folder of them. Per file: the annotator becomes a user without a usable password and an
``AnnotatorProfile`` (role annotator for new profiles, ``external_id``, discipline,
``qualification`` = the ``part_b`` answers). Per ``part_c`` record: the topic (``prompt``
minus ``Topic:`` and ``— outline``) is a ``Task`` keyed by its slug on a topic-only
``Survey``; each (topic, system) outline is a ``Report``; the record is a
``PairwisePreference`` (left = ``response_a``; ``A_better`` → left, ``B_better`` →
right, ``tie``) with ``external_id`` = record id. ``mapping`` may be an object or a
Python-dict-like string (parsed with ``ast.literal_eval``, never evaluated). Outlines
whose title shares no content word with their topic are reported as possibly off-topic.
"""

import ast
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import AnnotatorProfile, PairwisePreference, Role

from ..models import Protocol, Report, Survey, System, TaskPrompt
from ..services.reports import ReportInput
from .base import ImportFailed, ImportResult, Record, read_json
from .common import (
    SystemSpec,
    disciplines_ensure,
    reports_store,
    rows_upsert,
    slugify_key,
    systems_ensure,
    task_prompts_sync,
    tasks_with_surveys_upsert,
)

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
_UNCLEAR = (
    "SurveyLens output released as {name}.json; the release does not say whether it is the vanilla model or "
    "its Deep Research agent."
)

_CHOICES = {"a_better": PairwisePreference.Choice.LEFT, "b_better": PairwisePreference.Choice.RIGHT,
            "tie": PairwisePreference.Choice.TIE}
_TOPIC = re.compile(r"^\s*(?:topic\s*:\s*)?(?P<topic>.+?)(?:\s*[—–-]+\s*outline)?\s*$", re.IGNORECASE | re.DOTALL)
_GENERIC = set(
    "a an the of in on for and to with from by at as its their into between via toward towards about "
    "survey surveys comprehensive review reviews literature paper overview systematic research study studies "
    "advances recent current state perspective perspectives approach approaches science sciences".split()
) | {word for _, (name, _) in DISCIPLINES.items() for word in name.lower().split()}


def _system_spec(name: str) -> SystemSpec:
    return SYSTEMS.get(name) or SystemSpec(name, description=_UNCLEAR.format(name=name))


def discipline_code(value: str) -> str | None:
    return _DISCIPLINE_ALIASES.get(slugify_key(value)) or _DISCIPLINE_ALIASES.get(slugify_key(value).replace("-", ""))


# --- SSR ----------------------------------------------------------------------------------


def _ssr(path: Path, folder_name: str) -> tuple[Record, dict]:
    name = f"{folder_name}/{path.name}"
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


def import_surveylens(path: Path, *, result: ImportResult) -> None:
    folder = Path(path)
    if not folder.is_dir():
        raise ImportFailed("expected a SurveyLens topic folder of <System>.json files", file=folder.name)
    if not (folder / HUMAN_FILE).is_file():
        raise ImportFailed(f"the human-written survey {HUMAN_FILE} is missing", file=folder.name)
    ssrs = {}
    for file in sorted(folder.glob("*.json")):
        _, ssrs[file.stem] = _ssr(file, folder.name)
    human = ssrs.pop(Path(HUMAN_FILE).stem)
    key = folder.name
    title = next((t.strip() for _, t in human["outline"] if t.strip()), "") or key
    code = next((c for part in _source_parts(human) if (c := discipline_code(part))), None)
    if code is None:
        result.messages.append(f"{key}/{HUMAN_FILE}: no SurveyLens discipline in metadata.source_file")
    if not human["references"]:
        result.messages.append(f"{key}/{HUMAN_FILE}: the human-written survey has an empty reference list")
    discipline = disciplines_ensure(SOURCE, {code: DISCIPLINES[code][0]}, result=result)[code] if code else None

    topic = _topic_from_sources(ssrs) or title
    survey_row = {
        "external_id": key,
        "kind": Survey.Kind.SURVEY,
        "title": title,
        "discipline_id": discipline.pk if discipline else None,
        "outline": human["outline"],
        "content": [{"heading": s["heading"], "level": s["level"], "text": s["content"], "stats": s["stats"]}
                    for s in human["content"]],
        "references": human["references"],
        "stats": ssr_stats(human),
        "full_text": ssr_markdown(human),
        "extra": {"metadata": human["metadata"]},
    }
    task_row = {"key": key, "survey": key, "title": title[:500], "source": SOURCE, "extra": {"topic": topic}}
    task = tasks_with_surveys_upsert([survey_row], [task_row], source=SOURCE, protocol=Protocol.SURVEYLENS,
                                     result=result)[key]
    task_prompts_sync([TaskPrompt(task=task, level=TaskPrompt.Level.GENERAL, text=topic)], label=SOURCE, result=result)

    systems = systems_ensure([_system_spec(name) for name in ssrs], result=result)
    items = [
        ReportInput(task=task, system=systems[name], text=ssr_markdown(ssr), sources=[{"kind": "ssr", **ssr}],
                    source_path=f"{key}/{name}.json")
        for name, ssr in ssrs.items()
    ]
    reports_store(items, result=result)


# --- human annotations --------------------------------------------------------------------


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


def outline_title(outline: str) -> str:
    first = next((line for line in outline.splitlines() if line.strip()), "")
    title = re.sub(r"^\s*#+\s*", "", first).strip()
    return re.sub(r"^(literature review|survey|paper)\s*:\s*", "", title, flags=re.IGNORECASE)


def _mapping(rec: Record) -> tuple[str, str]:
    raw = rec.get("mapping", (dict, str), required=True)
    if isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise rec.fail("not a dict literal", "mapping") from None
    mapping = rec.child(raw, "mapping")
    left = mapping.text("response_a_model", required=True).strip()
    right = mapping.text("response_b_model", required=True).strip()
    if left == right:
        raise mapping.fail(f"both responses are by {left}", "response_b_model")
    return left, right


def _labeled_at(rec: Record) -> datetime:
    raw = rec.text("labeled_at", required=True).strip()
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise rec.fail(f"not an ISO date-time: {raw[:40]!r}", "labeled_at") from None
    return value if timezone.is_aware(value) else timezone.make_aware(value, timezone.utc)


def _annotation_file(path: Path) -> dict:
    name = path.name
    data = read_json(path)
    rec = Record(data if isinstance(data, dict) else {}, file=name, line=None)
    if not isinstance(data, dict):
        raise rec.fail(f"expected a JSON object, got {type(data).__name__}")
    annotator = rec.text("annotator_id", required=True).strip()
    discipline = rec.text("discipline", required=True).strip()
    code = discipline_code(discipline)
    if code is None:
        known = ", ".join(name for name, _ in DISCIPLINES.values())
        raise rec.fail(f"unknown SurveyLens discipline {discipline!r} (known: {known})", "discipline")
    qualification = rec.get("part_b", list, default=[])
    for i, answer in enumerate(qualification):
        rec.child(answer, f"part_b[{i}]")
    records = []
    for i, value in enumerate(rec.get("part_c", list, required=True)):
        item = rec.child(value, f"part_c[{i}]")
        record_id = str(item.get("id", (str, int), required=True)).strip()
        if item.data.get("annotator_id") not in (None, annotator):
            raise item.fail(f"record by {item.data['annotator_id']!r} in the file of {annotator!r}", "annotator_id")
        choice = item.text("choice", required=True).strip().lower()
        if choice not in _CHOICES:
            raise item.fail(f"expected A_better, B_better or tie, got {choice[:20]!r}", "choice")
        topic_match = _TOPIC.match(item.text("prompt", required=True))
        left, right = _mapping(item)
        records.append({
            "where": f"{name}, part_c[{i}]",
            "id": record_id,
            "topic": " ".join(topic_match["topic"].split()),
            "outlines": {left: item.text("response_a", required=True), right: item.text("response_b", required=True)},
            "left": left,
            "right": right,
            "choice": _CHOICES[choice],
            "component": item.text("dataset_type").strip() or "outline",
            "labeled_at": _labeled_at(item),
        })
    return {"file": name, "annotator": annotator, "discipline": code, "qualification": qualification,
            "records": records}


def _annotators_ensure(files: list[dict], disciplines: dict, *, result: ImportResult) -> dict[str, object]:
    User = get_user_model()
    wanted = {f["annotator"]: f for f in files}
    users = {u.username: u for u in User.objects.filter(username__in=list(wanted))}
    for username in wanted.keys() - users.keys():
        user = User(username=username)
        user.set_unusable_password()
        user.save()
        users[username] = user
        result.add("annotator", "created")
    profiles = {p.user_id: p for p in AnnotatorProfile.objects.filter(user__in=users.values())}
    for username, spec in wanted.items():
        user = users[username]
        profile = profiles.get(user.pk)
        if profile is None:
            profile = AnnotatorProfile.objects.create(
                user=user, role=Role.ANNOTATOR, external_id=username, qualification=spec["qualification"]
            )
        elif profile.external_id not in ("", username):
            raise ImportFailed(
                f"user {username!r} already belongs to annotator {profile.external_id!r}", file=spec["file"],
                field="annotator_id",
            )
        elif (profile.external_id, profile.qualification) != (username, spec["qualification"]):
            profile.external_id, profile.qualification = username, spec["qualification"]
            profile.save(update_fields=["external_id", "qualification", "updated_at"])
            result.add("annotator", "updated")
        profile.disciplines.add(disciplines[spec["discipline"]])
    return users


def import_surveylens_annotations(path: Path, *, result: ImportResult) -> None:
    path = Path(path)
    paths = sorted(p for p in path.glob("*.json") if p.is_file()) if path.is_dir() else [path]
    if not paths:
        raise ImportFailed("no annotation .json files in the folder", file=path.name)
    files = [_annotation_file(p) for p in paths]

    seen: dict[tuple[str, str], str] = {}
    outlines: dict[tuple[str, str], tuple[str, str]] = {}  # (topic, system) → (text, where)
    topics: dict[str, tuple[str, str]] = {}  # slug → (topic, discipline code)
    for f in files:
        for r in f["records"]:
            if (f["annotator"], r["id"]) in seen:
                raise ImportFailed(f"duplicate record id {r['id']!r}, first in {seen[(f['annotator'], r['id'])]}",
                                   file=r["where"], field="id")
            seen[(f["annotator"], r["id"])] = r["where"]
            slug = slugify_key(r["topic"])
            if not slug:
                raise ImportFailed("the prompt names no topic", file=r["where"], field="prompt")
            topics.setdefault(slug, (r["topic"], f["discipline"]))
            r["slug"] = slug
            for system, text in r["outlines"].items():
                stored = outlines.setdefault((slug, system), (text, r["where"]))
                if stored[0] != text:
                    side = "response_a" if system == r["left"] else "response_b"
                    raise ImportFailed(f"{system}'s outline for {r['topic']!r} differs from the one in {stored[1]}",
                                       file=r["where"], field=side)
    for (slug, system), (text, where) in outlines.items():
        title = outline_title(text)
        if not shares_topic_word(topics[slug][0], title):
            result.messages.append(
                f"{where}: {system}'s outline {title[:80]!r} shares no content word with its topic "
                f"{topics[slug][0]!r} (possibly off-topic)"
            )

    codes = {code for _, code in topics.values()} | {f["discipline"] for f in files}
    disciplines = disciplines_ensure(SOURCE, {c: DISCIPLINES[c][0] for c in codes}, result=result)
    users = _annotators_ensure(files, disciplines, result=result)
    tasks = tasks_with_surveys_upsert(
        [{"external_id": f"topic:{slug}", "kind": Survey.Kind.TOPIC, "title": topic,
          "discipline_id": disciplines[code].pk} for slug, (topic, code) in topics.items()],
        [{"key": slug, "survey": f"topic:{slug}", "title": topic[:500], "source": SOURCE, "extra": {"topic": topic}}
         for slug, (topic, _) in topics.items()],
        source=SOURCE,
        protocol=Protocol.SURVEYLENS,
        result=result,
    )
    task_prompts_sync([TaskPrompt(task=task, level=TaskPrompt.Level.GENERAL, text=topics[slug][0])
                       for slug, task in tasks.items()], label=SOURCE, result=result)
    systems = systems_ensure([_system_spec(name) for name in sorted({s for _, s in outlines})], result=result)
    reports_store(
        [ReportInput(task=tasks[slug], system=systems[system], text=text, source_path=where)
         for (slug, system), (text, where) in outlines.items()],
        result=result,
    )
    reports = {
        (r.task_id, r.system_id): r
        for r in Report.objects.filter(
            task__in=tasks.values(), system__in=systems.values()
        ).only("id", "task_id", "system_id")
    }
    rows = []
    for f in files:
        user = users[f["annotator"]]
        for r in f["records"]:
            task = tasks[r["slug"]]
            rows.append({
                "source": SOURCE,
                "annotator_id": user.pk,
                "external_id": r["id"],
                "task_id": task.pk,
                "report_left_id": reports[(task.pk, systems[r["left"]].pk)].pk,
                "report_right_id": reports[(task.pk, systems[r["right"]].pk)].pk,
                "component": r["component"][:30],
                "choice": r["choice"],
                "labeled_at": r["labeled_at"],
            })
    rows_upsert(PairwisePreference, rows, key=("source", "annotator_id", "external_id"), result=result,
                kind="preference")
