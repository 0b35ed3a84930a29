"""SurveyLens human pairwise annotations, in every shape the release publishes.

``path`` is one label file or a folder of them (other files of the folder are named in the
messages). Two shapes:

* ``*_outline_labels.json`` — an object: ``annotator_id``, ``discipline``, ``part_b`` (the
  qualification answers) and ``part_c`` (the preference records), streamed member by member
  (``iter_json_object``) so the limit applies per record here too;
* ``*_content_labels.json`` / ``*_reference_labels.json`` — a JSON list of preference
  records. They run to ~17 MB, so they are streamed record by record (``iter_json_array``;
  the ``IMPORT_MAX_LINE_BYTES`` limit applies per record). The annotator is each record's
  ``annotator_id``; the discipline is read from the file name
  (``Annotator_<Discipline>_<nn>_...``).

A record: ``id``, ``prompt`` (``Topic: <topic> — outline`` or ``主题：<topic>的reference``),
``response_a``, ``response_b``, ``mapping`` (``{response_a_model, response_b_model}``, also as
a Python-dict-like string, parsed with ``ast.literal_eval``, never evaluated),
``annotator_id``, ``dataset_type`` (the component), ``choice`` (``A_better``, ``B_better`` or
``Tie``, any case) and ``labeled_at``.

Stored: each annotator a user without a usable password and an ``AnnotatorProfile``; each
topic one SurveyLens ``Task`` — the existing one when a system-output import or an earlier
label file introduced the topic (``topic_tasks``), else a new one on a topic-only survey;
each (topic, system) one ``Report`` (created from the components shown when the system has
no report on the topic yet; an existing report keeps its text); each record a
``PairwisePreference`` (left = ``response_a``) with ``external_id`` = record id and the texts
the annotator saw in ``shown_left``/``shown_right`` — the labels judge those, which need not
be the whole report (a full survey imported from the system outputs, say). A response may be
empty (``Annotator_CS_07_reference_labels.json``: SurveyX produced no references for 7 topics and
the annotator still judged the pair): the record is stored with the empty text as shown, a report
made of nothing but empty responses is stored empty with ``stats.empty``, and both are counted
(``preference: N with an empty response``, ``report: N empty``) and named in the messages. System
names are read through the alias table. Outlines whose title shares no content word with
their topic are reported as possibly off-topic.
"""

import ast
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.utils import timezone

from benchmark.importers.base import (
    ImportFailed,
    ImportResult,
    Record,
    iter_json_array,
    iter_json_object,
    json_top_level,
    read_json,
)
from benchmark.importers.common import (
    disciplines_ensure,
    reports_store,
    rows_upsert,
    slugify_key,
    task_prompts_sync,
    tasks_with_surveys_upsert,
)
from benchmark.importers.surveylens import (
    DISCIPLINES,
    SOURCE,
    _system_spec,
    discipline_code,
    shares_topic_word,
    topic_tasks,
)
from benchmark.importers.systems import system_names_read, systems_ensure
from benchmark.models import Protocol, Report, Survey, TaskPrompt
from benchmark.services.reports import ReportInput
from core.models import AnnotatorProfile, Role

from ..models import PairwisePreference

_CHOICES = {"a_better": PairwisePreference.Choice.LEFT, "b_better": PairwisePreference.Choice.RIGHT,
            "tie": PairwisePreference.Choice.TIE}
_TOPIC = re.compile(r"^\s*(?:topic\s*:\s*)?(?P<topic>.+?)(?:\s*[—–-]+\s*outline)?\s*$", re.IGNORECASE | re.DOTALL)
# The content and reference label files ask in Chinese: "主题：<topic>的reference" ("topic: <topic>'s reference").
_TOPIC_ZH = re.compile(r"^\s*主题\s*[：:]\s*(?P<topic>.*?)\s*的\s*(?P<component>[A-Za-z]+|参考文献|内容|大纲)?\s*$", re.DOTALL)
_FILE_DISCIPLINE = re.compile(r"^Annotator_(?P<discipline>[A-Za-z]+)_\d+", re.IGNORECASE)
# The order components are joined in when a report is made from what the annotators saw.
_COMPONENT_ORDER = {"outline": 0, "content": 1, "reference": 2}
def outline_title(outline: str) -> str:
    first = next((line for line in outline.splitlines() if line.strip()), "")
    title = re.sub(r"^\s*#+\s*", "", first).strip()
    return re.sub(r"^(literature review|survey|paper)\s*:\s*", "", title, flags=re.IGNORECASE)


def topic_of(prompt: str) -> str:
    match = (_TOPIC_ZH if prompt.lstrip().startswith("主题") else _TOPIC).match(prompt)
    return " ".join(match["topic"].split()) if match else ""


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


def _response(item: Record, name: str) -> str:
    if name not in item.data or item.data[name] is None:
        raise item.fail("required field is missing", name)
    return item.text(name)


def _record(item: Record, where: str, *, annotator: str | None) -> dict:
    record_id = str(item.get("id", (str, int), required=True)).strip()
    by = item.text("annotator_id", required=annotator is None).strip() or annotator
    if annotator is not None and item.data.get("annotator_id") not in (None, annotator):
        raise item.fail(f"record by {item.data['annotator_id']!r} in the file of {annotator!r}", "annotator_id")
    choice = item.text("choice", required=True).strip().lower()
    if choice not in _CHOICES:
        raise item.fail(f"expected A_better, B_better or Tie, got {choice[:20]!r}", "choice")
    topic = topic_of(item.text("prompt", required=True))
    if not slugify_key(topic):
        raise item.fail("the prompt names no topic", "prompt")
    left, right = _mapping(item)
    return {
        "where": where,
        "id": record_id,
        "annotator": by,
        "topic": topic,
        # An empty response is real: the system produced nothing for that component (SurveyX's
        # references in Annotator_CS_07), and the annotator still judged the pair.
        "outlines": {left: _response(item, "response_a"), right: _response(item, "response_b")},
        "shown": (item.text("response_a"), item.text("response_b")),
        "left": left,
        "right": right,
        "choice": _CHOICES[choice],
        "component": (item.text("dataset_type").strip() or "outline")[:30],
        "labeled_at": _labeled_at(item),
    }


def _object_file(path: Path, name: str) -> dict:
    """The outline-label object, streamed member by member (``iter_json_object``): the byte
    limit applies to each ``part_b``/``part_c`` record, not to the file."""
    members: dict[str, object] = {}
    qualification, records = [], []
    for key, index, value in iter_json_object(path, name=name):
        if index is None:
            members[key] = value
            continue
        members.setdefault(key, [])  # an array, whose items are not kept here
        if key == "part_b":
            qualification.append(value)
        elif key == "part_c":
            records.append((index, value))
    rec = Record(members, file=name, line=None)
    rec.get("part_c", list, required=True)  # missing, or not a list: named as such
    rec.get("part_b", list)
    annotator = rec.text("annotator_id", required=True).strip()
    discipline = rec.text("discipline", required=True).strip()
    code = discipline_code(discipline)
    if code is None:
        known = ", ".join(n for n, _ in DISCIPLINES.values())
        raise rec.fail(f"unknown SurveyLens discipline {discipline!r} (known: {known})", "discipline")
    for i, answer in enumerate(qualification):
        rec.child(answer, f"part_b[{i}]")
    records = [_record(rec.child(value, f"part_c[{i}]"), f"{name}, part_c[{i}]", annotator=annotator)
               for i, value in records]
    return {"file": name, "discipline": code, "qualification": {annotator: qualification}, "records": records}


def _list_file(path: Path, name: str) -> dict:
    match = _FILE_DISCIPLINE.match(path.name)
    code = discipline_code(match["discipline"]) if match else None
    if code is None:
        raise ImportFailed("a list of label records names its discipline in the file name "
                           "(Annotator_<Discipline>_<nn>_..._labels.json); none is recognisable here", file=name)
    top = Record({}, file=name, line=None)
    records = [_record(top.child(value, f"[{i}]"), f"{name}, [{i}]", annotator=None)
               for i, value in iter_json_array(path, name=name)]
    return {"file": name, "discipline": code, "qualification": {}, "records": records}


def _label_files(path: Path, *, result: ImportResult) -> Iterator[tuple[Path, str]]:
    if not path.is_dir():
        yield path, path.name
        return
    found = False
    for file in sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")):
        if file.suffix.lower() != ".json":
            result.messages.append(f"{path.name}/{file.name}: ignored (not a .json label file)")
            continue
        found = True
        yield file, f"{path.name}/{file.name}"
    if not found:
        raise ImportFailed("no annotation .json files in the folder", file=path.name)


def _read(path: Path, name: str) -> dict:
    shape = json_top_level(path)
    if shape == "[":
        return _list_file(path, name)
    if shape == "{":
        return _object_file(path, name)
    read_json(path, name=name)  # names the syntax error (or binary content) at its line
    raise ImportFailed(f"expected a JSON object or list of label records, got {shape!r}", file=name)


def _annotators_ensure(files: list[dict], disciplines: dict, *, result: ImportResult) -> dict[str, object]:
    User = get_user_model()
    wanted: dict[str, tuple[str, str, list]] = {}  # username → (file, discipline, qualification)
    for f in files:
        for r in f["records"]:
            wanted.setdefault(r["annotator"], (f["file"], f["discipline"], []))
        for username, qualification in f["qualification"].items():
            wanted[username] = (f["file"], f["discipline"], qualification)
    users = {u.username: u for u in User.objects.filter(username__in=list(wanted))}
    for username in wanted.keys() - users.keys():
        user = User(username=username)
        user.set_unusable_password()
        user.save()
        users[username] = user
        result.add("annotator", "created")
    profiles = {p.user_id: p for p in AnnotatorProfile.objects.filter(user__in=users.values())}
    for username, (file, code, qualification) in wanted.items():
        user = users[username]
        profile = profiles.get(user.pk)
        if profile is None:
            profile = AnnotatorProfile.objects.create(
                user=user, role=Role.ANNOTATOR, external_id=username, qualification=qualification
            )
        elif profile.external_id not in ("", username):
            raise ImportFailed(f"user {username!r} already belongs to annotator {profile.external_id!r}", file=file,
                               field="annotator_id")
        elif profile.external_id != username or (qualification and profile.qualification != qualification):
            profile.external_id = username
            profile.qualification = qualification or profile.qualification
            profile.save(update_fields=["external_id", "qualification", "updated_at"])
            result.add("annotator", "updated")
        profile.disciplines.add(disciplines[code])
    return users


def _collect(files: list[dict], *, result: ImportResult) -> tuple[dict, dict]:
    """Topics (slug → (topic, discipline)) and shown texts ((slug, system, component) → (text, where)),
    with system names read through the alias table."""
    names = system_names_read({s for f in files for r in f["records"] for s in (r["left"], r["right"])},
                              result=result)
    seen: dict[tuple[str, str], str] = {}
    shown: dict[tuple[str, str, str], tuple[str, str]] = {}
    topics: dict[str, tuple[str, str]] = {}
    for f in files:
        for r in f["records"]:
            if (r["annotator"], r["id"]) in seen:
                raise ImportFailed(f"duplicate record id {r['id']!r}, first in {seen[(r['annotator'], r['id'])]}",
                                   file=r["where"], field="id")
            seen[(r["annotator"], r["id"])] = r["where"]
            r["slug"] = slugify_key(r["topic"])
            topics.setdefault(r["slug"], (r["topic"], f["discipline"]))
            sides = {"response_a": r["left"], "response_b": r["right"]}
            r["left"], r["right"] = names[r["left"]], names[r["right"]]
            if r["left"] == r["right"]:
                raise ImportFailed(f"both responses are by {r['left']} (after the system alias table)",
                                   file=r["where"], field="mapping")
            for side, released in sides.items():
                system, text = names[released], r["outlines"][released]
                stored = shown.setdefault((r["slug"], system, r["component"]), (text, r["where"]))
                if stored[0] != text:
                    raise ImportFailed(f"{system}'s {r['component']} for {r['topic']!r} differs from the one in "
                                       f"{stored[1]}", file=r["where"], field=side)
    for (slug, system, component), (text, where) in shown.items():
        title = outline_title(text)
        if component == "outline" and not shares_topic_word(topics[slug][0], title):
            result.messages.append(
                f"{where}: {system}'s outline {title[:80]!r} shares no content word with its topic "
                f"{topics[slug][0]!r} (possibly off-topic)"
            )
    return topics, shown


def import_surveylens_annotations(path: Path, *, result: ImportResult) -> None:
    path = Path(path)
    files = [_read(file, name) for file, name in _label_files(path, result=result)]
    topics, shown = _collect(files, result=result)

    codes = {code for _, code in topics.values()} | {f["discipline"] for f in files}
    disciplines = disciplines_ensure(SOURCE, {c: DISCIPLINES[c][0] for c in codes}, result=result)
    users = _annotators_ensure(files, disciplines, result=result)
    tasks = topic_tasks(topics)  # topics a system-output import or an earlier label file introduced
    # A task a label file made before counts as unchanged; one a system-output import made, as linked.
    linked = sum(1 for slug, task in tasks.items() if task.survey.external_id != f"topic:{slug}")
    for outcome, n in (("linked to an existing topic", linked), ("unchanged", len(tasks) - linked)):
        if n:
            result.add("task", outcome, n)
    new = {slug: value for slug, value in topics.items() if slug not in tasks}
    if new:
        tasks |= tasks_with_surveys_upsert(
            [{"external_id": f"topic:{slug}", "kind": Survey.Kind.TOPIC, "title": topic,
              "discipline_id": disciplines[code].pk} for slug, (topic, code) in new.items()],
            [{"key": slug, "survey": f"topic:{slug}", "title": topic[:500], "source": SOURCE,
              "extra": {"topic": topic}} for slug, (topic, _) in new.items()],
            source=SOURCE,
            protocol=Protocol.SURVEYLENS,
            result=result,
        )
    task_prompts_sync([TaskPrompt(task=tasks[slug], level=TaskPrompt.Level.GENERAL, text=topics[slug][0])
                       for slug in new], label=SOURCE, result=result)
    systems = systems_ensure([_system_spec(name) for name in sorted({s for _, s, _ in shown})], result=result)
    existing = {
        (r.task_id, r.system_id): r
        for r in Report.objects.filter(task__in=tasks.values(), system__in=systems.values()).only(
            "task_id", "system_id", "text", "source_path")
    }
    parts: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for (slug, system, component), (text, where) in shown.items():
        parts.setdefault((slug, system), []).append((component, text, where))
    items = []
    for (slug, system), shown_parts in parts.items():
        shown_parts.sort(key=lambda p: (_COMPONENT_ORDER.get(p[0], 9), p[0]))
        body = "\n\n".join(part.strip() for _, part, _ in shown_parts if part.strip())
        text = body + "\n" if body else ""  # nothing but empty responses: an empty report
        stored = existing.get((tasks[slug].pk, systems[system].pk))
        if stored is None:
            items.append(ReportInput(task=tasks[slug], system=systems[system], text=text,
                                     source_path=shown_parts[0][2][:500]))
        elif stored.text != text and not all(part.strip() in stored.text for _, part, _ in shown_parts):
            # The system's report (its full survey, or what an earlier label file showed) stays the
            # report; each preference keeps what its annotator saw (shown_left/shown_right).
            result.messages.append(
                f"{shown_parts[0][2]}: {system}'s {', '.join(c for c, _, _ in shown_parts)} on "
                f"{topics[slug][0]!r} as shown to annotators is not part of its report from "
                f"{stored.source_path or 'an earlier import'}; the labels point at that report and keep the "
                "shown text with each preference"
            )
    reports_store(items, result=result)
    _empty_reports_flag(items, result=result)
    _empty_responses_count(files, result=result)
    reports = {
        (r.task_id, r.system_id): r
        for r in Report.objects.filter(task__in=tasks.values(), system__in=systems.values()).only("id", "task_id",
                                                                                                  "system_id")
    }
    rows = []
    for f in files:
        for r in f["records"]:
            task = tasks[r["slug"]]
            rows.append({
                "source": SOURCE,
                "annotator_id": users[r["annotator"]].pk,
                "external_id": r["id"],
                "task_id": task.pk,
                "report_left_id": reports[(task.pk, systems[r["left"]].pk)].pk,
                "report_right_id": reports[(task.pk, systems[r["right"]].pk)].pk,
                "component": r["component"],
                "choice": r["choice"],
                "labeled_at": r["labeled_at"],
                "shown_left": r["shown"][0],
                "shown_right": r["shown"][1],
            })
    rows_upsert(PairwisePreference, rows, key=("source", "annotator_id", "external_id"), result=result,
                kind="preference")


def _empty_reports_flag(items: list[ReportInput], *, result: ImportResult) -> None:
    """A report made only from empty responses is stored empty and says so (``stats.empty``), so
    a page or metric tells "the system produced nothing" from a text that failed to load."""
    empty = [(i.task.pk, i.system.pk) for i in items if not i.text.strip()]
    if not empty:
        return
    for report in Report.objects.filter(task_id__in={t for t, _ in empty}, system_id__in={s for _, s in empty}):
        if (report.task_id, report.system_id) in empty and not report.text.strip() and not report.stats.get("empty"):
            report.stats = {**report.stats, "empty": True}
            report.save(update_fields=["stats"])
    result.add("report", "empty (the system produced nothing)", len(empty))


def _empty_responses_count(files: list[dict], *, result: ImportResult) -> None:
    """Records where one side's response is empty: stored like the rest, and counted by file and system."""
    for f in files:
        systems: dict[str, int] = {}
        for r in f["records"]:
            for side, text in zip((r["left"], r["right"]), r["shown"]):
                if not text.strip():
                    systems[side] = systems.get(side, 0) + 1
        n = sum(systems.values())
        if n:
            result.add("preference", "with an empty response", n)
            by = ", ".join(f"{name} {count}" for name, count in sorted(systems.items()))
            result.messages.append(f"{f['file']}: {n} records with an empty response ({by}); stored with the empty "
                                   "text as shown (a report made of nothing else is empty, flagged stats.empty)")
