"""DeepSynth-Eval (Kwai-Klear): tasks JSONL with checklists, e.g. ``example_gen_result.jsonl``,
or the repository as cloned (every ``data/*.jsonl``).

Each line becomes a ``Task`` (protocol deepsynth, key = ``task_id``) on a ``Survey``
(source ``deepsynth``, external id and arXiv id = ``survey_id``; the release gives no
title, so the survey is titled by its arXiv id until a curator fills it in), with:

* ``general_prompt`` → the general ``TaskPrompt``;
* each ``checklist`` group → a ``ChecklistGroup`` in file order, keeping ``clip_factor``
  and ``weight``: ``strict: true`` groups are constraint groups anchored on a structural
  element, their ``detailed_prompt`` a ``ConstraintQuestion`` (titled by the group name);
  the others are general groups anchored on a topic;
* each requirement → a ``ChecklistItem`` (``content`` → text, ``reward``), its
  sub-group's name in ``subgroup``, positions running through the whole group.

``survey_result`` (the generated survey shipped with the example file) becomes a plain
text ``Report`` of the system ``deepsynth-example``: the release does not say which
model or workflow wrote it, so the system is named after the file, not a model.
``eval_result`` values are judge outputs for that report; they are not imported (a
message says so when one is present).
"""

import re
from pathlib import Path

from ..models import ChecklistGroup, ChecklistItem, ConstraintQuestion, Origin, Protocol, Report, Survey, TaskPrompt
from ..services.bibliography import clean_arxiv_id
from ..services.reports import ReportInput
from .base import ImportFailed, ImportResult, Record, read_jsonl
from .common import (
    proposables_remove,
    proposables_sync,
    reports_store,
    require_unique,
    task_prompts_sync,
    tasks_with_surveys_upsert,
)
from .systems import SystemSpec, systems_ensure

SOURCE = "deepsynth"
EXAMPLE_SYSTEM = SystemSpec(
    "deepsynth-example",
    description="The generated surveys shipped in DeepSynth-Eval's example_gen_result.jsonl (survey_result); "
    "the release does not name the model or workflow that wrote them.",
)
_TOPIC = re.compile(r"\bsurvey(?: paper)? on (?P<topic>.+?)(?: based on the provided papers)?\.?$", re.IGNORECASE)


def _number(rec: Record, name: str, *, default: float, positive: bool = False) -> float:
    value = float(rec.get(name, float, default=default))
    if value < 0 or (positive and value == 0):
        raise rec.fail(f"must be {'positive' if positive else 'non-negative'}, got {value}", name)
    return value


def _task_id(rec: Record) -> str:
    value = rec.get("task_id", (str, int), required=True)
    key = str(value).strip()
    if not key:
        raise rec.fail("must not be empty", "task_id")
    return key


def _checklist(rec: Record, *, result: ImportResult) -> list[dict]:
    groups = []
    for g, value in enumerate(rec.get("checklist", list, required=True)):
        group = rec.child(value, f"checklist[{g}]")
        strict = group.get("strict", bool, required=True)
        items = []
        for s, sub_value in enumerate(group.get("sub_groups", list, required=True)):
            sub = group.child(sub_value, f"sub_groups[{s}]")
            sub_name = " ".join(sub.text("sub_group_name").split())[:500]
            if sub.data.get("eval_result") is not None:
                result.messages.append(
                    f"{rec.file}, line {rec.line}: checklist[{g}].sub_groups[{s}].eval_result is a judge output "
                    "for the shipped report and was not imported"
                )
            for r, req_value in enumerate(sub.get("requirements", list, required=True)):
                req = sub.child(req_value, f"requirements[{r}]")
                items.append({
                    "subgroup": sub_name,
                    "text": req.text("content", required=True).strip(),
                    "reward": float(req.get("reward", float, default=1.0)),
                })
        groups.append({
            "name": " ".join(group.text("group_name", required=True).split())[:500],
            "strict": strict,
            "question": group.text("detailed_prompt", required=strict).strip() if strict else "",
            "clip_factor": _number(group, "clip_factor", default=1.0, positive=True),
            "weight": _number(group, "weight", default=1.0),
            "items": items,
        })
    return groups


def import_deepsynth(path: Path, *, result: ImportResult) -> None:
    """A tasks ``.jsonl`` file, or the repository as cloned (its ``data/*.jsonl``, in name order:
    ``DeepSynth-Eval_tasks.jsonl`` then ``example_gen_result.jsonl``, whose tasks are the same
    and which adds the example reports)."""
    path = Path(path)
    if path.is_dir():
        folder = path / "data" if (path / "data").is_dir() else path
        files = sorted(p for p in folder.glob("*.jsonl") if p.is_file())
        if not files:
            raise ImportFailed("expected DeepSynth-Eval .jsonl files in the folder or its data/", file=path.name)
        for other in sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".jsonl"):
            result.messages.append(f"{other.relative_to(path).as_posix()}: ignored (not a .jsonl task file)")
        for file in files:
            _import_file(file, result=result)
            result.add("file", "read")
        return
    if not path.is_file():
        raise ImportFailed("expected a DeepSynth-Eval .jsonl file", file=path.name)
    _import_file(path, result=result)


def _import_file(path: Path, *, result: ImportResult) -> None:
    parsed, seen = [], {}
    for line, data in read_jsonl(path):
        rec = Record(data, file=path.name, line=line)
        key = _task_id(rec)
        require_unique(seen, key, rec, "task_id", "task id")
        survey_id = rec.text("survey_id", required=True).strip()
        prompt = rec.text("general_prompt", required=True).strip()
        if rec.data.get("eval_result") is not None:
            result.messages.append(f"{path.name}, line {line}: eval_result was not imported (judge output)")
        parsed.append({
            "key": key,
            "survey_id": survey_id,
            "arxiv_id": clean_arxiv_id(survey_id),
            "prompt": prompt,
            "groups": _checklist(rec, result=result),
            "report": rec.text("survey_result").strip(),
        })

    survey_rows = [
        {"external_id": p["survey_id"], "kind": Survey.Kind.SURVEY, "title": f"arXiv:{p['survey_id']}",
         "arxiv_id": p["arxiv_id"], "url": f"https://arxiv.org/abs/{p['arxiv_id']}" if p["arxiv_id"] else ""}
        for p in {p["survey_id"]: p for p in parsed}.values()
    ]
    task_rows = []
    for p in parsed:
        topic = _TOPIC.search(p["prompt"])
        task_rows.append({"key": p["key"], "survey": p["survey_id"], "source": SOURCE,
                          "title": (topic["topic"] if topic else p["prompt"])[:500]})
    # The release has no survey titles: the arXiv id stands in until a curator writes the title.
    tasks = tasks_with_surveys_upsert(survey_rows, task_rows, source=SOURCE, protocol=Protocol.DEEPSYNTH,
                                      result=result, survey_create_only=("title",))
    task_ids = [t.pk for t in tasks.values()]
    task_prompts_sync([TaskPrompt(task=tasks[p["key"]], level=TaskPrompt.Level.GENERAL, text=p["prompt"])
                       for p in parsed], label=SOURCE, result=result)
    strict_groups = [g for p in parsed for g in p["groups"] if g["strict"]]
    stale_questions: list[ConstraintQuestion] = []
    questions = proposables_sync(
        existing=ConstraintQuestion.objects.filter(task_id__in=task_ids, origin=Origin.IMPORT),
        incoming=[
            ConstraintQuestion(task=tasks[p["key"]], position=i, title=g["name"], text=g["question"])
            for p in parsed
            for i, g in enumerate(g for g in p["groups"] if g["strict"])
        ],
        key=lambda o: (o.task_id, o.position),
        fields=("title", "text"),
        label=SOURCE,
        result=result,
        kind="constraint question",
        stale_out=stale_questions,
    )
    question_of = {id(g): q for g, q in zip(strict_groups, questions)}
    groups = proposables_sync(
        existing=ChecklistGroup.objects.filter(task_id__in=task_ids, origin=Origin.IMPORT),
        incoming=[
            ChecklistGroup(
                task=tasks[p["key"]],
                kind=ChecklistGroup.Kind.CONSTRAINT if g["strict"] else ChecklistGroup.Kind.GENERAL,
                anchor=ChecklistGroup.Anchor.STRUCTURE if g["strict"] else ChecklistGroup.Anchor.TOPIC,
                name=g["name"],
                constraint_question=question_of.get(id(g)),
                clip_factor=g["clip_factor"],
                weight=g["weight"],
                position=i,
            )
            for p in parsed
            for i, g in enumerate(p["groups"])
        ],
        key=lambda o: (o.task_id, o.position),
        fields=("kind", "anchor", "name", "constraint_question", "clip_factor", "weight"),
        label=SOURCE,
        result=result,
        kind="checklist group",
    )
    all_groups = [g for p in parsed for g in p["groups"]]
    proposables_sync(
        existing=ChecklistItem.objects.filter(group__in=groups, origin=Origin.IMPORT),
        incoming=[
            ChecklistItem(group=stored, subgroup=item["subgroup"], text=item["text"], reward=item["reward"], position=i)
            for stored, g in zip(groups, all_groups)
            for i, item in enumerate(g["items"])
        ],
        key=lambda o: (o.group_id, o.position),
        fields=("subgroup", "text", "reward"),
        label=SOURCE,
        result=result,
        kind="checklist item",
    )
    # Removed only now: deleting a question cascades to the groups still pointing at it.
    still_used = set(ChecklistGroup.objects.filter(constraint_question__in=stale_questions)
                     .values_list("constraint_question_id", flat=True))
    if still_used:
        result.add("constraint question", "kept (reviewed or not imported)", len(still_used))
    proposables_remove([q for q in stale_questions if q.pk not in still_used], label=SOURCE, result=result,
                       kind="constraint question")

    reports = [p for p in parsed if p["report"]]
    if reports:
        system = systems_ensure([EXAMPLE_SYSTEM], result=result)[EXAMPLE_SYSTEM.name]
        reports_store([
            ReportInput(task=tasks[p["key"]], system=system, text=p["report"], format=Report.Format.TEXT,
                        source_path=f"{path.name}#task_id={p['key']}")
            for p in reports
        ], result=result)
