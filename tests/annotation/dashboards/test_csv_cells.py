"""Every dashboard CSV download defuses formula-like text (system names here) and keeps numbers."""

import csv
import io

import pytest
from django.urls import URLPattern, get_resolver, reverse

from benchmark.models import Protocol
from tests.annotation.dashboards.builders import agreement_setup, deepscholar_run, deepsynth_run, preferences, reportbench_run
from tests.factories import SystemFactory

pytestmark = pytest.mark.django_db

EVIL = ("=HYPERLINK(\"http://x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)")


def _dashboard_names() -> list[str]:
    resolver = next(r for r in get_resolver().url_patterns if getattr(r, "namespace", "") == "dashboards")
    return [entry.name for entry in resolver.url_patterns if isinstance(entry, URLPattern)]


def test_no_cell_of_any_dashboard_csv_starts_a_formula(curator_client):
    systems = [SystemFactory(name=name) for name in EVIL]
    deepsynth_run(n_tasks=2, systems=systems)
    reportbench_run(n_tasks=2, systems=systems)
    deepscholar_run(n_tasks=2, systems=systems)
    preferences(systems=systems, n_tasks=2)
    agreement_setup(n_verdicts=3)
    served, names_seen = [], set()
    for name in _dashboard_names():
        for protocol in Protocol.values:
            response = curator_client.get(reverse(f"dashboards:{name}"), {"format": "csv", "protocol": protocol})
            if not response.get("Content-Type", "").startswith("text/csv"):
                continue
            served.append(name)
            rows = list(csv.reader(io.StringIO(response.content.decode())))
            for row in rows[1:]:
                for cell in row:
                    if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                        float(cell)  # only a number may start so
                names_seen |= {cell for row in rows for cell in row if cell.lstrip("'") in EVIL}
    assert {"leaderboard", "human", "chart_verdicts", "chart_scores"} <= set(served)
    assert names_seen == {"'" + name for name in EVIL}  # shown, as text
