"""Presentation helpers for the workspace templates: no database writes, no decisions.

Everything written by users or systems that is shown as HTML goes through
``markdown_to_safe_html``; plain strings are left to the templates' auto-escaping.
"""

import re
from dataclasses import dataclass, field

from django.utils.module_loading import import_string
from django.utils.safestring import SafeString, mark_safe

from benchmark.parsing import parse_report
from benchmark.rendering import markdown_to_safe_html

from ..kinds import kind_of
from ..label_help import label_help
from ..models import VERIFY_TARGETS, TargetKind

_LINKED_KINDS = ("numeric", "footnote", "author_year", "latex", "source_chip")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>])")
_WORD = re.compile(r"[a-z0-9]{3,}")
_STOPWORDS = frozenset(
    "the and for with that this from are was were which their report should mention about into over".split()
)


def safe_markdown(text: str) -> SafeString:
    return mark_safe(markdown_to_safe_html(text))  # sanitized by nh3 in markdown_to_safe_html


_HARD_WRAP = re.compile(r"[ \t]*\n[ \t]*")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")


def reflowed(text: str) -> list[str]:
    """A source's plain text (an abstract, a cited document) as paragraphs: blank lines part
    them, the hard line ends inside one (a PDF's or an API's wrapping) become spaces. Plain
    text for the templates to escape: a source is not markdown (its ``*`` and ``_`` are its own)."""
    return [_HARD_WRAP.sub(" ", para).strip() for para in _PARAGRAPH_BREAK.split((text or "").strip()) if para.strip()]


def _md_escape(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text)


_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
_MD_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")


def _md_plain(text: str) -> str:
    """A bibliography entry written in markdown (``\\[[Author 2021](https://…)\\] Title``) as
    the text a reader sees; the entry's link is shown as its own anchor."""
    return _MD_ESCAPED.sub(r"\1", _MD_LINK.sub(r"\1", text))


# --- Reports with their citations linked to their bibliography --------------------------------


@dataclass
class ReportView:
    html: SafeString
    references: list[dict] = field(default_factory=list)
    sentences: list = field(default_factory=list)
    citations: list = field(default_factory=list)


def _reference_href(reference) -> str:
    if reference.url:
        return reference.url
    if reference.arxiv_id:
        return f"https://arxiv.org/abs/{reference.arxiv_id}"
    if reference.doi:
        return f"https://doi.org/{reference.doi}"
    return ""


def _marker_markdown(group: list, anchor: str) -> str:
    """A citation marker as markdown links to the report's bibliography entries."""
    first = group[0]
    resolved = [c for c in group if c.reference_index is not None]
    if first.kind == "numeric" and len(group) > 1 and first.raw.startswith("["):
        parts = [
            f"[{_md_escape(c.target)}](#{anchor}-{c.reference_index})" if c.reference_index is not None else c.target
            for c in group
        ]
        return "\\[" + ", ".join(parts) + "\\]"
    return f"[{_md_escape(first.raw)}](#{anchor}-{resolved[0].reference_index})"


def report_view(text: str, *, anchor: str) -> ReportView:
    """The report as safe HTML with citation markers linked to ``#<anchor>-<n>``, and its own
    bibliography (cut from the body) as entries carrying those anchors."""
    parsed = parse_report(text or "")
    groups: dict[int, list] = {}
    for citation in parsed.citations:
        groups.setdefault(citation.group, []).append(citation)
    cuts = [(s.start, s.end, "") for s in parsed.sections if s.is_references and parsed.references]
    for group in groups.values():
        if group[0].kind in _LINKED_KINDS and any(c.reference_index is not None for c in group):
            cuts.append((group[0].start, group[0].end, _marker_markdown(group, anchor)))
    body = text or ""
    for start, end, replacement in sorted(cuts, reverse=True):
        body = body[:start] + replacement + body[end:]
    references = [
        {"anchor": f"{anchor}-{ref.index}", "text": _md_plain(ref.raw), "title": ref.title,
         "href": _reference_href(ref)}
        for ref in parsed.references
    ]
    return ReportView(
        html=safe_markdown(body), references=references, sentences=list(parsed.sentences),
        citations=list(parsed.citations),
    )


def statement_in_report(view: ReportView, statement: str) -> dict | None:
    """The report sentence that carries a judged statement, with the entries it cites."""
    needle = " ".join(statement.split()).lower()
    if not needle:
        return None
    for sentence in view.sentences:
        text = " ".join(sentence.text.split()).lower()
        if needle in text or (len(text) > 20 and text in needle):
            cited = sorted({c.reference_index for c in view.citations if c.sentence_index == sentence.index} - {None})
            return {"sentence": sentence.text, "references": [view.references[i] for i in cited]}
    return None


def judged_text(target: dict) -> str:
    """What a judge verdict was about, in words (the judged row's text when it has one)."""
    return (
        target.get("judged_text") or target.get("judged_key")
        or f"{target.get('judged_kind', 'item')} #{target.get('judged_id', '?')}"
    )


# --- Label values in words ---------------------------------------------------------------------


def sides_of(kind: str, target: dict) -> dict | None:
    """Pairwise: which report this page shows on the left (as A), for ``value_summary``; None
    while the item hides its reports (the labels then name sides only)."""
    left = (target.get("left") or {}).get("report_id")
    return {"left": left} if left is not None else None


def value_summary(kind: str, value: dict, *, sides: dict | None = None) -> str:
    """One line describing a label value, for the adjudication queue and the reveal."""
    return kind_of(kind).summary(value, sides=sides)


# --- The proposal under review (verify) --------------------------------------------------------


def _display(model, name: str, raw) -> str:
    model_field = model._meta.get_field(name)
    if model_field.choices:
        return str(dict(model_field.flatchoices).get(raw, raw))
    if raw is None or raw == "":
        return "—"
    if isinstance(raw, bool):
        return "yes" if raw else "no"
    return str(raw)


def proposal_fields(target: dict) -> list[dict]:
    """(label, value) rows of the proposal's tracked fields, review status excluded."""
    model = VERIFY_TARGETS[target["kind"]][0]
    return [
        {"name": name, "label": model._meta.get_field(name).verbose_name.capitalize(),
         "value": _display(model, name, target["fields"].get(name)), "long": name in ("text", "description")}
        for name in model.tracked_fields
        if name != "review_status"
    ]


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall((text or "").lower()) if word not in _STOPWORDS}


def relevant_sections(survey, query: str, *, limit: int = 3) -> list[dict]:
    """The survey sections that share most words with the proposal (its likely source)."""
    wanted = _words(query)
    scored = []
    for index, section in enumerate(survey.content or []):
        if not isinstance(section, dict) or not section.get("text"):
            continue
        overlap = len(wanted & _words(f"{section.get('heading', '')} {section['text']}"))
        if overlap >= 2:
            scored.append((overlap, -index, section))
    scored.sort(reverse=True)
    return [
        {"heading": section.get("heading") or "(untitled)", "level": section.get("level"),
         "html": safe_markdown(section["text"]), "overlap": overlap}
        for overlap, _, section in scored[:limit]
    ]


def _truncated(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _by_pk(rows, pk: int):
    return next((row for row in rows if row.pk == pk), None)


def verify_view(context: dict, task) -> dict:
    """What the verify panel shows beside the proposal: its task's survey and other proposals."""
    target = context["target"]
    out = {"fields": [] if target.get("missing") else proposal_fields(target), "task": task}
    if task is None:
        return out
    kind, target_id = target["kind"], target["id"]
    # Only the proposal's own kind is read here (``item_context_for`` prefetched it).
    if kind == TargetKind.CHECKLIST_ITEM:
        groups = task.checklist_groups.all()
        out["group"] = next((g for g in groups if any(i.pk == target_id for i in g.items.all())), None)
    elif kind == TargetKind.CHECKLIST_GROUP:
        out["group"] = _by_pk(task.checklist_groups.all(), target_id)
    elif kind == TargetKind.GOLD_REFERENCE:
        out["reference"] = _by_pk(task.gold_references.all(), target_id)
    query = target.get("text", "")
    if out.get("group") is not None:
        query += " " + out["group"].name
    # A prompt asks for the whole survey: its abstract and outline say more than any one section.
    out["sections"] = [] if kind == TargetKind.PROMPT else relevant_sections(task.survey, query)
    out["relevant_headings"] = {section["heading"] for section in out["sections"]}
    out["abstract"] = reflowed(_truncated(task.survey.abstract or "", 2400))
    out["bibliography"] = [
        {"number": ref.get("number"), "title": ref.get("title") or ref.get("text") or ""}
        for ref in (task.survey.references or [])[:500]
        if isinstance(ref, dict)
    ]
    return out


# --- The item panel ----------------------------------------------------------------------------

# The parts of what a judge was shown that are a source's text (an abstract, a cited document):
# reflowed as plain paragraphs. Every other part was written in markdown by a system or a person
# (a report's sentence, a checklist item, a survey's section) and is rendered as such.
SOURCE_PARTS = frozenset({"passage", "source", "document"})


def _judged_part(part: dict) -> dict:
    if part.get("is_report"):
        return part
    if part["name"] in SOURCE_PARTS:
        return {**part, "paragraphs": reflowed(part["text"])}
    return {**part, "html": safe_markdown(part["text"])}


def pairwise_view(context: dict, task) -> dict:
    target = context["target"]
    sides = (("left", "A"), ("right", "B"))
    return {"sides": [
        {"key": side, "name": name, **target[side], "view": report_view(target[side]["text"], anchor=f"ref-{side}")}
        for side, name in sides
    ]}


def agreement_view(context: dict, task) -> dict:
    target = context["target"]
    report = report_view(target["report_text"], anchor="ref-report")
    parts = [_judged_part(part) for part in (target.get("judged_input") or {}).get("parts", [])]
    # Where a judged statement sits in the report, with what it cites (its sentence, found by text).
    said = next((part["text"] for part in parts if part["name"] == "statement"), "")
    statement = statement_in_report(report, said) if said else None
    if statement is not None:
        statement["html"] = safe_markdown(statement["sentence"])
    judge = context["judge"]  # None until item_context_for reveals it
    rationale = safe_markdown(judge["rationale"]) if judge and judge["rationale"] else ""
    labels = target.get("labels") or context["project"]["label_set"].get("label", [])
    return {
        "label_help": label_help(labels=labels, step=target.get("step", ""),
                                 own=context["project"].get("label_help")),
        "report": report, "statement": statement, "rationale": rationale,
        "judged_label": (target["judged_kind"] or "item").replace("_", " ").capitalize(),
        "judged_text": judged_text(target), "parts": parts,
    }


def rating_view(context: dict, task) -> dict:
    return {"report": report_view(context["target"]["text"], anchor="ref-report")}


def kind_view(context: dict, *, task=None) -> dict:
    """What the item panel shows, by the view the project's kind names (``AnnotationKind.panel_view``;
    ``task``: the verify proposal's task)."""
    if context["target"].get("missing"):
        return {}
    return import_string(kind_of(context["project"]).panel_view)(context, task)


def labels_view(context: dict) -> dict:
    """The labels the user may see (``item_context_for`` decides), each described in words."""
    kind = context["project"]["kind"]
    sides = sides_of(kind, context["target"])
    own = context["own_label"]
    out = {
        "own": {**own, "summary": value_summary(kind, own["value"], sides=sides)} if own else None,
        "others": [
            {**label, "summary": value_summary(kind, label["value"], sides=sides)}
            for label in context["other_labels"] or ()
        ],
        "agrees_with_judge": None,
        "gold": value_summary(kind, context["gold"]["value"], sides=sides) if context["gold"] else "",
    }
    judge = context["judge"]
    if own and judge:  # a verdict's item (``item_context_for`` shows the judge of no other)
        out["agrees_with_judge"] = own["value"].get("label") == judge["label"]
    return out
