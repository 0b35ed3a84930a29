"""A survey's text (abstract, outline, sections) for the proposal stages, with its revision row.

The construction stages (``scoring.services.proposals``) read a task's survey: the question and
ReportBench prompts need its abstract, topic groups and constraint pairs its outline or content,
rubric criteria its outline, nuggets its text. Releases often lack them (DeepSynth-Eval ships
only arXiv ids), so a curator uploads the text as markdown on the task page, and the demo fills
what its release implies (``benchmark.services.demo``).
"""

import re
from dataclasses import dataclass, field

from django.db import transaction

from core.audit import audit_log_record
from core.audit_actions import AuditAction

from ..importers.base import ImportFailed
from ..models import Survey

TEXT_FIELDS = ("abstract", "outline", "content", "full_text")
_HEADING = re.compile(r"^(#{1,6})(?:\s+(.*?))?\s*#*\s*$")
_ABSTRACT = re.compile(r"^abstract[.:]?$", re.IGNORECASE)


@dataclass
class SurveyText:
    abstract: str = ""
    outline: list = field(default_factory=list)  # [[level, title], ...]
    content: list = field(default_factory=list)  # [{heading, level, text}, ...]
    full_text: str = ""


def survey_text_parse(data: bytes, *, file: str) -> SurveyText:
    """Markdown → the survey's text: each ``#`` heading is an outline entry and a section; the text
    before the first heading, or under a heading "Abstract", is the abstract. ``ImportFailed`` names
    the file, line and field of what cannot be read."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ImportFailed("is not UTF-8 text (upload the survey as a markdown or plain-text file)",
                           file=file, line=line) from None
    if "\x00" in text:
        raise ImportFailed("contains a NUL character: binary data, not markdown", file=file,
                           line=text[:text.index("\x00")].count("\n") + 1)
    parsed = SurveyText(full_text=text.strip())
    preamble: list[str] = []
    section: dict | None = None
    lines: list[str] = []

    def close() -> None:
        if section is None:
            return
        body = "\n".join(lines).strip()
        if _ABSTRACT.match(section["heading"]):
            parsed.abstract = body
        else:
            parsed.content.append({**section, "text": body})

    fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fence = not fence
        match = None if fence else _HEADING.match(line)
        if match is None:
            (lines if section is not None else preamble).append(line)
            continue
        title = (match.group(2) or "").strip()
        if not title:
            raise ImportFailed("a heading without a title", file=file, line=number, field="heading")
        close()
        section, lines = {"heading": title, "level": len(match.group(1))}, []
        if not _ABSTRACT.match(title):
            parsed.outline.append([len(match.group(1)), title])
    close()
    if not parsed.abstract:
        parsed.abstract = "\n".join(preamble).strip()
    if not parsed.outline:
        raise ImportFailed("no section heading (a line such as '# Introduction'); the proposal stages need "
                           "the survey's sections", file=file, line=1, field="outline")
    return parsed


def _text_of(survey: Survey) -> dict:
    return {name: getattr(survey, name) for name in TEXT_FIELDS}


@transaction.atomic
def survey_text_set(*, survey: Survey, text: SurveyText, actor=None, actor_label: str = "", note: str = "",
                    keep_abstract: bool = False) -> bool:
    """Replace the survey's text with ``text`` (the abstract too, unless ``keep_abstract`` or the text
    has none), with a ``survey_text`` revision holding before and after. False when nothing changed."""
    locked = Survey.objects.select_for_update().get(pk=survey.pk)
    before = _text_of(locked)
    after = dict(before, outline=text.outline, content=text.content, full_text=text.full_text)
    if text.abstract and not keep_abstract:
        after["abstract"] = text.abstract
    if after == before:
        return False
    for name, value in after.items():
        setattr(locked, name, value)
        setattr(survey, name, value)
    locked.save(update_fields=[*TEXT_FIELDS, "updated_at"])
    audit_log_record(target=locked, action=AuditAction.SURVEY_TEXT, actor=actor if getattr(actor, "is_authenticated", False)
                     else None, actor_label=actor_label, before=before, after=after, note=note)
    return True
