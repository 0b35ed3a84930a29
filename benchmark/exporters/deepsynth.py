"""DeepSynth-Eval tasks JSONL: the layout ``benchmark.importers.deepsynth`` reads, one task per line.

The input is native-format task lines (``benchmark.exporters.native``, as dicts), so a frozen
task set is written from its snapshot. Only curated content is written: rejected items are
left out, edited items appear as edited (a row holds its edited form). Per task:

* ``task_id`` = the task key, ``survey_id`` = the survey's external id (else its arXiv id);
* ``general_prompt`` = the general prompt (required: a task without one that is not rejected
  cannot be written, and the export fails naming it);
* ``checklist`` = the checklist groups in order: constraint groups are ``strict`` with their
  constraint question as ``detailed_prompt`` (a constraint group whose question was rejected
  is left out: DeepSynth cannot state it), each with ``clip_factor`` and ``weight``; items
  are regrouped into ``sub_groups`` by runs of equal ``subgroup``, in position order.

Generated surveys (``survey_result``) and judge outputs (``eval_result``) are reports and
verdicts, not task content, and are not written. Keys keep the upstream field order.
"""

import json
from collections.abc import Callable, Iterable
from itertools import groupby

from ..models import ChecklistGroup, Protocol, ReviewStatus, TaskPrompt

FILENAME = "deepsynth_tasks.jsonl"


def _kept(items: Iterable[dict]) -> list[dict]:
    return [item for item in items if item.get("review_status") != ReviewStatus.REJECTED]


def _general_prompt(task: dict) -> str:
    prompts = [p for p in _kept(task["prompts"]) if p["level"] == TaskPrompt.Level.GENERAL]
    if not prompts:
        raise ValueError(
            f"deepsynth task {task['key']} has no general prompt that is not rejected; "
            "DeepSynth-Eval needs one (general_prompt): add or accept one, or leave the task out of the set"
        )
    return prompts[0]["text"]


def task_record(task: dict, counts: dict[str, int]) -> dict:
    """One DeepSynth-Eval line for one native task line; ``counts`` gains what was written and left out."""
    questions = task["constraint_questions"]
    checklist = []
    for group in task["checklist_groups"]:
        if group["review_status"] == ReviewStatus.REJECTED:
            counts["left out: rejected checklist groups"] += 1
            continue
        strict = group["kind"] == ChecklistGroup.Kind.CONSTRAINT
        record = {"group_name": group["name"], "strict": strict}
        if strict:
            index = group["constraint_question"]
            question = questions[index] if index is not None else None
            if question is None or question["review_status"] == ReviewStatus.REJECTED:
                counts["left out: constraint groups without a question"] += 1
                continue
            record["detailed_prompt"] = question["text"]
            counts["constraint questions"] += 1
        items = _kept(group["items"])
        counts["left out: rejected checklist items"] += len(group["items"]) - len(items)
        counts["checklist items"] += len(items)
        counts["checklist groups"] += 1
        record["sub_groups"] = [
            {"sub_group_name": name, "requirements": [{"content": i["text"], "reward": i["reward"]} for i in run]}
            for name, run in groupby(items, key=lambda item: item["subgroup"])
        ]
        # The importer's default for a missing clip factor is 1.0, as in the released data.
        record["clip_factor"] = group["clip_factor"] if group["clip_factor"] is not None else 1.0
        record["weight"] = group["weight"]
        checklist.append(record)
    survey = task["survey"]
    return {
        "task_id": task["key"],
        "survey_id": survey["external_id"] or survey["arxiv_id"],
        "general_prompt": _general_prompt(task),
        "checklist": checklist,
    }


def write_deepsynth(lines: Iterable[dict], sink: Callable[[str, bytes], None], counts: dict[str, int]) -> None:
    """Write the deepsynth tasks of ``lines`` as one JSONL file through ``sink(path, bytes)``."""
    out = []
    for task in lines:
        if task["protocol"] != Protocol.DEEPSYNTH:
            counts["left out: tasks of other protocols"] += 1
            continue
        out.append(json.dumps(task_record(task, counts), ensure_ascii=False) + "\n")
        counts["tasks"] += 1
    if not out:
        raise ValueError("the task set has no deepsynth tasks to write in the DeepSynth-Eval format")
    sink(FILENAME, "".join(out).encode("utf-8"))
