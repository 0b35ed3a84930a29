"""Wide tables never overflow the page: every data grid of the run and dashboard pages sits in a
``.table-scroll`` region, focusable and named for screen readers. The tables are laid out to fit
their box at 1366 px (tests/browser/test_curator_screen.py measures it); the region scrolls only
as a last resort on a narrower window."""

import re
from pathlib import Path

import pytest

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
WIDE_PAGES = ["dashboards", "scoring"]  # leaderboards, agreement, figures, runs: many columns per system or metric
REGION = re.compile(r'<div class="table-scroll" tabindex="0" role="region" aria-(label|labelledby)="[^"]+">\s*$')


def grid_tables():
    for folder in WIDE_PAGES:
        for path in sorted((TEMPLATES / folder).rglob("*.html")):
            text = path.read_text(encoding="utf-8")
            for match in re.finditer(r'<table class="grid', text):
                yield path.relative_to(TEMPLATES), text, match.start()


@pytest.mark.parametrize(("name", "text", "start"), [
    pytest.param(name, text, start, id=f"{name}@{start}") for name, text, start in grid_tables()])
def test_every_grid_scrolls_inside_a_focusable_named_region(name, text, start):
    before = text[:start]
    # the table opens its region, or is included by a template line that does (``_score_table.html``)
    included_in_region = any(
        REGION.search(line.split("{% include")[0])
        for path in TEMPLATES.rglob("*.html")
        for line in path.read_text(encoding="utf-8").splitlines()
        if f'include "{name.as_posix()}"' in line
    )
    previous_line = before.rstrip().splitlines()[-1] if before.strip() else ""
    assert REGION.search(previous_line) or included_in_region, (
        f"{name}: a table.grid outside a .table-scroll region")
