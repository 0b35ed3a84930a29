"""Accessibility checks: axe-core (npm, installed by `make test` from package-lock.json) run in the
page under test, WCAG 2 A and AA rules only.

The script is evaluated through the DevTools protocol rather than added as a <script> tag, so a
Content-Security-Policy that forbids inline scripts does not stop it (and is not loosened for it).
"""

from pathlib import Path

import pytest

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WCAG2 = ["wcag2a", "wcag2aa"]


def axe_violations(page) -> list[dict]:
    """axe's WCAG 2 A/AA violations on the page as it is now: ``[{id, impact, help, nodes: [html]}]``."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm ci` (make test does)")
    page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate(
        "async (tags) => await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
        WCAG2,
    )
    return [
        {"id": v["id"], "impact": v["impact"], "help": v["help"], "nodes": [n["html"][:200] for n in v["nodes"]]}
        for v in result["violations"]
    ]


def assert_accessible(page, where: str) -> None:
    violations = axe_violations(page)
    assert not violations, f"{where}: " + "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} — {v['nodes'][:3]}" for v in violations)
