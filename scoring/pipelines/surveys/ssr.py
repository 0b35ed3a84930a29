"""The Structured Survey Representation (SSR, SurveyLens §3.2) of a report and of the human survey.

The report's from its stored parse (outline, sections that are not a reference list, reference
entries); the human survey's from its stored SSR (``Survey.outline``/``content``/``references``;
a survey without one is parsed from ``full_text``; without SSR references, its ``SurveyCitation``
bibliography).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmark.models import ReviewStatus, SurveyCitation, TaskPrompt
from benchmark.parsing import parse_report

from ..report_sources import parsed_report

_SECTION_NUMBER = re.compile(r"^\s*(?:(?:chapter|section)\s+)?(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Z])[.):]?\s+(?=\S)",
                             re.IGNORECASE)
_REFERENCE_MARKER = re.compile(r"^\s*(?:\[[^\]]{1,12}\]|\d{1,4}[.)])\s*")


@dataclass(frozen=True)
class SurveySSR:
    """One side of the comparison: outline [(level, title)], sections [(heading, text)], references, full text."""

    outline: tuple[tuple[int, str], ...]
    sections: tuple[tuple[str, str], ...]
    references: tuple[dict, ...]  # title, text, url, arxiv_id, doi
    text: str

    def entries(self, component: str) -> list[str]:
        """Canonical alignment entries of one component (SurveyLens Table 3)."""
        if component == "outline":
            return [t for t in (_SECTION_NUMBER.sub("", title).strip() for _, title in self.outline) if t]
        if component == "content":
            return [f"{heading}\n{body}".strip() for heading, body in self.sections if body.strip()]
        return [t for t in ((r["title"] or r["text"]).strip() for r in self.references) if t]

    def component_text(self, component: str) -> str:
        """What the rubric judge reads for one component."""
        if component == "outline":
            return "\n".join(f"{'#' * max(1, min(level, 6))} {title}" for level, title in self.outline)
        if component == "content":
            return "\n\n".join(f"## {heading}\n\n{body}".strip() if heading else body
                               for heading, body in self.sections if body.strip() or heading)
        if not self.references:
            return "(the survey has no reference list)"
        return "\n".join(f"[{i}] {r['text'] or r['title']}" for i, r in enumerate(self.references, 1))


def _reference(title="", text="", url="", arxiv_id="", doi="") -> dict:
    return {"title": title or "", "text": text or "", "url": url or "", "arxiv_id": arxiv_id or "", "doi": doi or ""}


def _from_parse(parsed, text: str) -> SurveySSR:
    return SurveySSR(
        outline=tuple((e.level, e.title) for e in parsed.outline),
        sections=tuple((s.heading, s.text) for s in parsed.sections if not s.is_references and s.text.strip()),
        references=tuple(
            _reference(r.title, _REFERENCE_MARKER.sub("", r.raw).strip(), r.url, r.arxiv_id, r.doi)
            for r in parsed.references
        ),
        text=text,
    )


def report_ssr(report) -> SurveySSR:
    return _from_parse(parsed_report(report), report.text)


def survey_ssr(survey) -> SurveySSR:
    """The human survey's SSR as stored; a survey stored without one is parsed from its full text."""
    if not (survey.outline or survey.content):
        return _from_parse(parse_report(survey.full_text or "", format="markdown"), survey.full_text or "")
    outline = tuple((int(level), str(title)) for level, title in survey.outline)
    sections = tuple(
        (str(c.get("heading") or ""), str(c.get("text") or c.get("content") or ""))
        for c in survey.content if isinstance(c, dict)
    )
    refs = tuple(
        _reference(str(r.get("title") or ""), str(r.get("text") or ""))
        for r in survey.references if isinstance(r, dict) and (r.get("title") or r.get("text"))
    )
    if not refs:
        refs = tuple(
            _reference(c.bib_entry.title, c.bib_entry.title, c.bib_entry.url, c.bib_entry.arxiv_id, c.bib_entry.doi)
            for c in SurveyCitation.objects.filter(survey=survey).select_related("bib_entry").order_by("position")
        )
    text = survey.full_text or "\n\n".join(
        [f"{'#' * max(1, min(level, 6))} {title}" for level, title in outline[:1]]
        + [f"## {h}\n\n{b}".strip() for h, b in sections]
    )
    return SurveySSR(outline=outline, sections=sections, references=refs, text=text)


def survey_topic(task) -> str:
    prompt = TaskPrompt.objects.filter(task=task, level=TaskPrompt.Level.GENERAL).exclude(
        review_status=ReviewStatus.REJECTED).values_list("text", flat=True).first()
    return (prompt or task.title or task.survey.title or task.key).strip()
