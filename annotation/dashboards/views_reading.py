"""What the dashboards' numbers mean: docs/statistics.md served as a page (its sections have
anchors the one-line readings link to), and the default scope of the "human vs automated" chart
— a protocol whose preferences have systems with automated scores, so the chart opens on data."""

import re
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Exists, OuterRef
from django.shortcuts import render
from django.utils.text import slugify

from benchmark.models import Protocol
from benchmark.rendering import markdown_to_safe_html
from scoring.models import ScoreCard

from ..models import PairwisePreference

STATISTICS_DOC = Path(settings.BASE_DIR) / "docs" / "statistics.md"
_HEADING = re.compile(r"<(h[1-3])>(.*?)</\1>", re.S)


def section_anchor(title: str) -> str:
    """The anchor of a section of docs/statistics.md: its title up to the first parenthesis,
    slugified ("Human ranking (`/dashboards/human/`, …)" → ``human-ranking``)."""
    return slugify(re.sub(r"<[^>]+>", "", title).split(" (")[0])


@lru_cache(maxsize=4)
def _statistics_html(mtime: float) -> str:
    html = markdown_to_safe_html(STATISTICS_DOC.read_text(encoding="utf-8"))
    return _HEADING.sub(lambda m: f'<{m[1]} id="{section_anchor(m[2])}">{m[2]}</{m[1]}>', html)


@login_required
def statistics_doc(request):
    html = _statistics_html(STATISTICS_DOC.stat().st_mtime)
    return render(request, "dashboards/statistics.html", {"html": html})


def human_vs_automated_protocol() -> str:
    """The first protocol (in the protocols' order) whose pairwise preferences compare systems
    that also have score cards of that protocol: where the chart has points. Empty when none."""
    scored = ScoreCard.objects.filter(run__protocol=OuterRef("task__protocol"),
                                      system_id=OuterRef("report_left__system_id"))
    found = set(PairwisePreference.objects.filter(Exists(scored)).order_by().values_list("task__protocol", flat=True)
                .distinct()[:10])
    if not found:  # preferences without any score: the chart says so, on the protocol that has them
        found = set(PairwisePreference.objects.order_by().values_list("task__protocol", flat=True).distinct()[:10])
    return next((p for p in Protocol.values if p in found), "")


def preference_sources_in(scope) -> list[str]:
    """The preference sources a ranking of ``scope`` pools when it pools more than one — labels of
    the app's projects ("projects") and imported files (their source names) — so that the page
    says so; empty when it reads one source."""
    if scope.source or scope.project:
        return []
    prefs = PairwisePreference.objects.order_by()
    if scope.protocol:
        prefs = prefs.filter(task__protocol=scope.protocol)
    if scope.task_set:
        prefs = prefs.filter(task__task_sets=scope.task_set)
    sources = sorted(set(prefs.values_list("source", flat=True).distinct()[:20]))
    return ["projects" if not source else source for source in sources] if len(sources) > 1 else []
