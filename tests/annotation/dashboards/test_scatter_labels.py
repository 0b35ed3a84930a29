"""The human-vs-automated scatter places its labels so none covers another label or a point
(issue 30: "overprints labels"), on the rendered SVG, with clustered and coincident points."""

import re

import pytest

from annotation.dashboards import charts

TEXT = re.compile(r'<text x="([\d.-]+)" y="([\d.-]+)" font-size="12" text-anchor="(start|end)" fill="#1d2430">([^<]*)</text>')
CIRCLE = re.compile(r'<circle cx="([\d.-]+)" cy="([\d.-]+)" r="6"')


def _boxes(svg: str):
    labels = [charts.LabelPlace(float(x), float(y), anchor).box(text) for x, y, anchor, text in TEXT.findall(svg)]
    points = [(float(cx) - 6, float(cy) - 6, float(cx) + 6, float(cy) + 6) for cx, cy in CIRCLE.findall(svg)]
    return labels, points


@pytest.mark.parametrize("points", [
    # seven systems whose human strength and metric are close: the crowded case
    [{"label": name, "x": 0.1 + 0.01 * i, "y": 50 + 0.4 * i} for i, name in enumerate(
        ["Autosurvey", "Gemini Deep Research", "InteractiveSurvey", "Qwen", "SciSage", "SurveyForge", "SurveyX"])],
    # two systems on the same spot, one far away
    [{"label": "A-system", "x": 0.5, "y": 0.5}, {"label": "B-system", "x": 0.5, "y": 0.5},
     {"label": "C", "x": 2.0, "y": 0.9}],
    # a long name at the right edge
    [{"label": "a system with a very long descriptive name", "x": 1.0, "y": 1.0}, {"label": "b", "x": 0.0, "y": 0.0}],
])
def test_no_label_covers_another_or_a_point_and_all_stay_in_the_chart(points):
    svg = str(charts.scatter(points, title="t", x_label="x", y_label="y"))
    width, height = (float(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
    labels, circles = _boxes(svg)
    assert len(labels) == len(points) and len(circles) == len(points)
    for i, box in enumerate(labels):
        assert 0 <= box[0] and box[2] <= width and 0 <= box[1] and box[3] <= height, box
        assert not any(charts._overlaps(box, other) for other in labels[i + 1:]), (i, box)
        assert not any(charts._overlaps(box, c) for c in circles), (i, box)


def test_the_crowded_chart_before_this_change_overprinted():
    """The old rule (every label 9 px right of its point) on the crowded case overlaps: the check above means something."""
    names = ["Autosurvey", "Gemini Deep Research", "InteractiveSurvey", "Qwen", "SciSage", "SurveyForge", "SurveyX"]
    old = [charts.LabelPlace(100 + 5 * i + 9, 200 - 3 * i + 4, "start").box(n) for i, n in enumerate(names)]
    assert any(charts._overlaps(a, b) for i, a in enumerate(old) for b in old[i + 1:])
