"""The catalogue of judge steps: what each step asks, the variables it takes and the answer it must return.

A *step* is one question a pipeline puts to a judge (``deepsynth.checklist_group``,
``reportbench.consistency``, ...). Its name is the contract between pipelines and
backends: the variables (``Step.inputs``) and the answer (``Step.schema``, a JSON
Schema) are fixed per name. The wording is a versioned prompt file
``scoring/prompts/<version>/<template>``; a new wording is a new version directory,
so stored verdicts always say which wording produced them.

Rendering is deliberately dumb: ``{{name}}`` placeholders replaced in one pass (a
report that contains ``{{items}}`` is not expanded again), strings verbatim, lists of
strings as numbered lines, anything else as JSON (lists of objects one per line).

Validation is strict: the answer must satisfy the schema (required keys, types,
enums, ranges), and for steps that judge a list of items every requested id must be
answered exactly once (``check_item_ids``, reusable by pipelines).
"""

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
DEFAULT_PROMPT_VERSION = "v1"
SYSTEM_TEMPLATE = "_system.md"
REPAIR_TEMPLATE = "_repair.md"

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")


class StepError(ValueError):
    """A step that does not exist, a template that cannot be rendered, or variables of the wrong shape."""


@dataclass(frozen=True)
class Step:
    name: str
    protocol: str
    description: str
    schema: dict
    template: str
    inputs: dict
    items: tuple[str, str] | None = None  # (variable holding the requested items, answer key holding one entry per id)
    kind: str = "judge"  # "judge" scores a report; "propose" helps build a benchmark task

    def prompt(self, variables: dict, version: str = DEFAULT_PROMPT_VERSION) -> str:
        return render(load_template(version, self.template), variables)


# --- schema building blocks -------------------------------------------------------------------------------------

STR = {"type": "string"}
ID = {"type": ["integer", "string"]}


def obj(properties: dict, *, optional: tuple[str, ...] = ()) -> dict:
    """An object schema whose properties are all required except ``optional``; extra keys are allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": [key for key in properties if key not in optional],
    }


def array(items: dict, *, min_items: int = 0) -> dict:
    schema = {"type": "array", "items": items}
    if min_items:
        schema["minItems"] = min_items
    return schema


def enum(*values) -> dict:
    return {"enum": list(values)}


def score(low: int, high: int) -> dict:
    return {"type": "integer", "minimum": low, "maximum": high}


def _scored(low: int, high: int) -> dict:
    return obj({"scores": array(obj({"id": ID, "score": score(low, high), "rationale": STR}))})


_WINNER = obj({"winner": enum("A", "B", "tie"), "rationale": STR})
_REPORT = obj({"report": STR})
_CRITERIA = array(obj({"id": ID, "name": STR, "description": STR}), min_items=1)
_SURVEY_PARTS = obj({"survey_title": STR, "outline": STR, "content": STR})


def _step(name: str, protocol: str, description: str, inputs: dict, schema: dict, **extra) -> Step:
    return Step(name=name, protocol=protocol, description=description, schema=schema, template=f"{name}.md",
                inputs=inputs, **extra)


_ALL = [
    # DeepSynth-Eval §3.4: one call verifies every item of one checklist group.
    _step(
        "deepsynth.checklist_group", "deepsynth",
        "Verify each checklist item of one group against the report: correct, omitted or incorrect.",
        obj({"report": STR, "group_name": STR, "constraint_question": STR,
             "items": array(obj({"id": {"type": "integer"}, "text": STR}), min_items=1)}),
        obj({"verdicts": array(obj({"id": {"type": "integer"}, "label": enum("correct", "omitted", "incorrect"),
                                    "evidence": STR, "rationale": STR}))}),
        items=("items", "verdicts"),
    ),
    # ReportBench §2.2 and appendix A.4.
    _step(
        "reportbench.cited_statements", "reportbench",
        "Extract every statement of the report that carries a citation, with the cited URLs or markers.",
        _REPORT, obj({"statements": array(obj({"text": STR, "citations": array(STR)}))}),
    ),
    _step(
        "reportbench.support_passage", "reportbench",
        "Find the passage of a cited source that best supports a statement.",
        obj({"statement": STR, "source_title": STR, "source_text": STR}),
        obj({"passage": STR, "found": {"type": "boolean"}}),
    ),
    _step(
        "reportbench.consistency", "reportbench",
        "Decide whether a source passage faithfully supports a statement.",
        obj({"statement": STR, "passage": STR}),
        obj({"label": enum("consistent", "inconsistent"), "rationale": STR}),
    ),
    _step(
        "reportbench.uncited_statements", "reportbench",
        "Extract the verifiable factual statements of the report that carry no citation.",
        _REPORT, obj({"statements": array(obj({"text": STR}))}),
    ),
    _step(
        "reportbench.factuality", "reportbench",
        "Decide whether a non-cited factual statement is correct.",
        obj({"statement": STR}), obj({"label": enum("correct", "incorrect"), "rationale": STR}),
    ),
    _step(
        "reportbench.reference_titles", "reportbench",
        "List the academic works the report cites, with their titles and URLs.",
        _REPORT, obj({"references": array(obj({"title": STR, "url": STR}))}),
    ),
    # ReportBench's released related_work_evaluator.py (analyze_papers): its reference filter, for the
    # reportbench_upstream variant.
    _step(
        "reportbench.academic_reference", "reportbench",
        "Decide whether a reference of the report is an academic paper (the released code's filter).",
        obj({"title": STR, "url": STR, "content": STR}),
        obj({"is_academic_paper": {"type": "boolean"}, "reason": STR}),
    ),
    # DeepScholar-bench §8.3 and boxes 1–3.
    _step(
        "deepscholar.nuggetize", "deepscholar",
        "Break a text into atomic information nuggets, each vital or okay for answering the query.",
        obj({"query": STR, "text": STR}),
        obj({"nuggets": array(obj({"text": STR, "importance": enum("vital", "okay")}))}),
    ),
    _step(
        "deepscholar.nugget_support", "deepscholar",
        "Decide for each nugget whether the report supports it, partially supports it or not.",
        obj({"report": STR, "nuggets": array(obj({"id": ID, "text": STR}), min_items=1)}),
        obj({"labels": array(obj({"id": ID, "label": enum("support", "partial_support", "not_support")}))}),
        items=("nuggets", "labels"),
    ),
    _step(
        "deepscholar.relevance", "deepscholar",
        "Grade how relevant a retrieved document is to the query: 0, 1 or 2.",
        obj({"query": STR, "document": STR}), obj({"grade": enum(0, 1, 2), "rationale": STR}),
    ),
    _step(
        "deepscholar.reference_importance", "deepscholar",
        "Decide whether a reference of the exemplar is important (could not be omitted or substituted).",
        obj({"query": STR, "document": STR}), obj({"important": {"type": "boolean"}}),
    ),
    _step(
        "deepscholar.citation_support", "deepscholar",
        "Decide whether a cited source supports the claims of the sentence that cites it.",
        obj({"sentence": STR, "source": STR}), obj({"label": enum("support", "not_support")}),
    ),
    _step(
        "deepscholar.organization", "deepscholar",
        "Decide which of two reports is better organized and more coherent.",
        obj({"query": STR, "report_a": STR, "report_b": STR}), _WINNER,
    ),
    # SurveyLens §3.3.1, SciSage/SurveyScope appendix A.4–A.6.
    _step(
        "surveylens.rubric", "surveylens",
        "Score one survey component against discipline-aware rubric criteria, 1 to 5 each.",
        obj({"component": enum("outline", "content", "reference"), "survey": STR, "criteria": _CRITERIA}),
        _scored(1, 5), items=("criteria", "scores"),
    ),
    _step(
        "scisage.quality", "surveyscope",
        "Score a survey on quality dimensions, 1 to 10 each.",
        obj({"survey": STR, "dimensions": _CRITERIA}), _scored(1, 10), items=("dimensions", "scores"),
    ),
    _step(  # SciSage §5.1.2 "Section-Level Structure", Table 3's rubric (from AutoSurvey)
        "scisage.section_structure", "surveyscope",
        "Score the section-level structure of a survey (coherence, logical flow, transitions), 1 to 5.",
        obj({"survey": STR, "dimensions": _CRITERIA}), _scored(1, 5), items=("dimensions", "scores"),
    ),
    _step(
        "survey.pairwise", "surveylens",
        "Decide which of two surveys on the same topic is better overall.",
        obj({"topic": STR, "survey_a": STR, "survey_b": STR}), _WINNER,
    ),
    # Building tasks from a reference survey (DeepSynth §3.1, ReportBench §2.1.2, SurveyLens §3.3.1).
    _step(
        "propose.general_question", "deepsynth",
        "Reconstruct the research request that the survey answers, as one general question.",
        obj({"title": STR, "abstract": STR}), obj({"question": STR}), kind="propose",
    ),
    _step(
        "propose.topic_groups", "deepsynth",
        "Propose topic-anchored checklist groups of atomic items from a reference survey.",
        _SURVEY_PARTS, obj({"groups": array(obj({"name": STR, "items": array(STR, min_items=1)}))}), kind="propose",
    ),
    _step(
        "propose.constraint_pairs", "deepsynth",
        "Propose structural constraint questions, each with the checklist items its anchor implies.",
        _SURVEY_PARTS,
        obj({"pairs": array(obj({"anchor": STR, "question": STR, "items": array(STR, min_items=1)}))}),
        kind="propose",
    ),
    _step(
        "propose.reportbench_prompts", "reportbench",
        "Reverse-engineer sentence-level, paragraph-level and detail-rich research prompts for a survey.",
        obj({"title": STR, "abstract": STR, "cutoff_date": STR}),
        obj({"sentence": STR, "paragraph": STR, "detail": STR}), kind="propose",
    ),
    _step(
        "propose.rubric_criteria", "surveylens",
        "Propose discipline-aware rubric criteria for the outline, content and references of surveys.",
        obj({"discipline": STR, "survey_title": STR, "outline": STR}),
        obj({"criteria": array(obj({"component": enum("outline", "content", "reference"), "aspect": STR,
                                    "name": STR, "description": STR, "example": STR}), min_items=1)}),
        kind="propose",
    ),
]

STEPS: dict[str, Step] = {step.name: step for step in _ALL}


# How a step key's prefix reads to people (the protocol or family of the step).
STEP_FAMILIES = {
    "deepsynth": "DeepSynth-Eval", "reportbench": "ReportBench", "deepscholar": "DeepScholar-bench",
    "surveylens": "SurveyLens", "scisage": "SciSage", "survey": "Survey", "propose": "Proposal",
}


def step_label(name: str) -> str:
    """A step key in words: ``deepscholar.citation_support`` → "DeepScholar-bench: citation support"."""
    family, _, rest = (name or "").partition(".")
    if not rest:
        return (name or "").replace("_", " ")
    return f"{STEP_FAMILIES.get(family, family)}: {rest.replace('_', ' ')}"


def get_step(name: str) -> Step:
    try:
        return STEPS[name]
    except KeyError:
        raise StepError(f"unknown step {name!r}; known steps: {', '.join(sorted(STEPS))}") from None


# --- templates ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def load_template(version: str, filename: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", version) or version.startswith("."):
        raise StepError(f"invalid prompt version {version!r}")
    path = PROMPTS_DIR / version / filename
    if not path.is_file():
        raise StepError(f"prompt template {path} is missing (prompt version {version!r})")
    return path.read_text(encoding="utf-8")


def format_value(value: Any) -> str:
    """How a variable appears in a prompt: strings verbatim, string lists numbered, the rest as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            return "\n".join(f"{i}. {v}" for i, v in enumerate(value, 1))
        return "\n".join(json.dumps(v, ensure_ascii=False) for v in value)
    return json.dumps(value, ensure_ascii=False)


def render(template: str, variables: dict) -> str:
    """Replace every ``{{name}}`` in one pass; a placeholder without a variable is an error."""
    missing = sorted({m.group(1) for m in _PLACEHOLDER.finditer(template)} - set(variables))
    if missing:
        raise StepError(f"template needs variables it was not given: {', '.join(missing)}")
    return _PLACEHOLDER.sub(lambda m: format_value(variables[m.group(1)]), template)


def render_messages(step_name: str, variables: dict, version: str = DEFAULT_PROMPT_VERSION) -> list[dict]:
    """The chat messages for one call: the shared system prompt (with the answer schema) and the step's prompt."""
    step = get_step(step_name)
    system = render(load_template(version, SYSTEM_TEMPLATE),
                    {"schema": json.dumps(step.schema, ensure_ascii=False), "step": step.name})
    return [{"role": "system", "content": system}, {"role": "user", "content": step.prompt(variables, version)}]


def repair_message(errors: list[str], version: str = DEFAULT_PROMPT_VERSION) -> dict:
    return {"role": "user", "content": render(load_template(version, REPAIR_TEMPLATE), {"errors": errors})}


# --- validation -----------------------------------------------------------------------------------------------


@lru_cache(maxsize=128)
def _validator(step_name: str, which: str) -> Draft202012Validator:
    step = get_step(step_name)
    return Draft202012Validator(step.schema if which == "answer" else step.inputs)


def _schema_errors(validator: Draft202012Validator, data: Any, what: str) -> list[str]:
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{what} at {'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}" for e in errors]


def validate_variables(step_name: str, variables: Any) -> list[str]:
    """Problems with the variables a pipeline passes (empty when they fit the step)."""
    errors = _schema_errors(_validator(step_name, "inputs"), variables, "variables")
    step = get_step(step_name)
    if not errors and step.items:
        ids = [item["id"] for item in variables[step.items[0]]]
        if len(set(map(_id_key, ids))) != len(ids):
            errors.append(f"variables at {step.items[0]}: item ids are not unique")
    return errors


def check_item_ids(requested: list, answered: list[dict], *, key: str = "id") -> list[str]:
    """Every requested id answered exactly once, nothing else: the problems, or an empty list.

    Ids compare exactly (``3`` and ``"3"`` differ): an answer that changes an id's type
    is as wrong as one that invents an id.
    """
    wanted = {_id_key(i): i for i in requested}
    counts: dict = {}
    for entry in answered:
        counts[_id_key(entry.get(key))] = counts.get(_id_key(entry.get(key)), 0) + 1
    problems = []
    missing = [wanted[k] for k in wanted if k not in counts]
    if missing:
        problems.append(f"ids not answered: {_show(missing)}")
    repeated = [k[1] for k, n in counts.items() if n > 1 and k in wanted]
    if repeated:
        problems.append(f"ids answered more than once: {_show(repeated)}")
    unknown = [k[1] for k in counts if k not in wanted]
    if unknown:
        problems.append(f"ids that were not asked for: {_show(unknown)}")
    return problems


def _id_key(value) -> tuple:
    # 3 and 3.0 are the same JSON number; True is not the number 1.
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    return (type(value).__name__, value)


def _show(values: list) -> str:
    return ", ".join(json.dumps(v) for v in values[:20]) + (" …" if len(values) > 20 else "")


def validate_answer(step_name: str, data: Any, variables: dict | None = None) -> list[str]:
    """Problems with a judge's answer (empty when it is valid): schema first, then the item ids."""
    errors = _schema_errors(_validator(step_name, "answer"), data, "answer")
    step = get_step(step_name)
    if not errors and step.items and variables is not None:
        source, target = step.items
        errors = check_item_ids([item["id"] for item in variables[source]], data[target])
    return errors


def request_hash(*, model: str, prompt_version: str, step: str, variables: dict, repeat: int = 0) -> str:
    """A stable fingerprint of one request, stored on ``LLMCall.request_hash``."""
    canonical = json.dumps({"model": model, "prompt_version": prompt_version, "step": step, "repeat": repeat,
                            "variables": variables}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
