"""Outside ``annotation/kinds/`` (and the kinds' template folders) at most a handful of lines
compare a project's kind (issue #40): everything else asks ``kind_of(project)``.

The pattern is the issue's count; the comparisons it also finds of other kinds (export and
import jobs', targets', report blocks', review-queue filters', imported preference groups')
are left out by ``NOT_A_PROJECT_KIND``."""

import re
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)
MAX_LINES = 10
PATTERN = re.compile(
    r"kind ?(==|!=) ?['\"](pairwise|agreement|verify|rating)|Kind\.(PAIRWISE|AGREEMENT|VERIFY|RATING)"
    r"|\.kind (==|!=|in) ")
NOT_A_PROJECT_KIND = re.compile(
    r"\w*Job\.Kind\."  # export and import jobs
    r"|target\.kind (==|!=) "  # the target rows of items
    r"|(first|group\[0\])\.kind (==|in) "  # citation marker groups of a report (views.display)
    r"|filters\.kind == "  # the review queue's filter by proposal kind
    r"|g\.kind == \"source\""  # a preference group's origin (dashboards)
)


def _scanned() -> list[Path]:
    python = [path for path in (ROOT / "annotation").rglob("*.py")
              if not {"kinds", "migrations"} & set(path.relative_to(ROOT / "annotation").parts[:-1])]
    templates = [path for path in (ROOT / "templates").rglob("*.html")
                 if "kinds" not in path.relative_to(ROOT / "templates").parts[:-1]]
    return python + templates


def project_kind_comparisons() -> list[str]:
    found = []
    for path in _scanned():
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if PATTERN.search(line) and not NOT_A_PROJECT_KIND.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_at_most_a_handful_of_lines_compare_a_project_kind():
    found = project_kind_comparisons()
    assert len(found) <= MAX_LINES, f"{len(found)} lines compare a project's kind:\n" + "\n".join(found)


def test_the_scan_finds_a_comparison():
    """The pattern holds what it counts: a template or a module that branches on a kind is found."""
    for text in ('{% if project.kind == "rating" %}', "if project.kind != AnnotationProject.Kind.VERIFY:",
                 "VIEWS = {Kind.PAIRWISE: pairwise_view}", "if project.kind in REPORT_KINDS:"):
        assert PATTERN.search(text) and not NOT_A_PROJECT_KIND.search(text), text
    for text in ("if job.kind == ExportJob.Kind.TASK_SET:", "{% if target.kind == 'prompt' %}"):
        assert not (PATTERN.search(text) and not NOT_A_PROJECT_KIND.search(text)), text
