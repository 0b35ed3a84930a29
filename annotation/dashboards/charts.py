"""Server-rendered, accessible inline SVG charts (no JavaScript).

Each function takes already computed numbers and returns SVG markup (a ``SafeString``):
``role="img"`` with ``<title>``/``<desc>``, axis labels, and a ``<title>`` tooltip on every
mark giving its exact value. Colours are Okabe–Ito (distinguishable with colour-vision
deficiencies) and every stacked segment also carries its percentage as text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence
from html import escape

from django.utils.safestring import SafeString, mark_safe

# Okabe–Ito palette; verdict labels get fixed, meaningful colours.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
LABEL_COLOURS = {"correct": "#009E73", "omitted": "#BBBBBB", "incorrect": "#D55E00", "(failed)": "#555555"}
DARK_TEXT_ON = {"#BBBBBB", "#E69F00", "#F0E442", "#56B4E9"}
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"'


def _e(text) -> str:
    return escape(str(text), quote=True)


def _fmt(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def _svg(width: int, height: int, title: str, desc: str, body: list[str], chart_id: str) -> SafeString:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{_e(chart_id)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-labelledby="{_e(chart_id)}-title {_e(chart_id)}-desc" {FONT}>'
        f'<title id="{_e(chart_id)}-title">{_e(title)}</title><desc id="{_e(chart_id)}-desc">{_e(desc)}</desc>'
    )
    return mark_safe(head + "".join(body) + "</svg>")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(1, count)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(f * magnitude for f in (1, 2, 2.5, 5, 10) if f * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks, value = [], start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def stacked_bars(rows: Sequence[dict], labels: Sequence[str], *, title: str, chart_id: str = "chart-verdicts") -> SafeString:
    """Horizontal 100 % stacked bars: ``rows`` = [{"system", "total", "counts": [{"label", "n", "share"}]}]."""
    left, bar_w, row_h, top = 190, 560, 34, 64
    width, height = left + bar_w + 30, top + row_h * max(1, len(rows)) + 40
    body = [f'<text x="{left}" y="22" font-size="15" font-weight="600" fill="#1d2430">{_e(title)}</text>']
    x = left
    for i, label in enumerate(labels):  # legend
        colour = LABEL_COLOURS.get(label, PALETTE[i % len(PALETTE)])
        body.append(f'<rect x="{x}" y="34" width="14" height="14" fill="{colour}" rx="2"/>'
                    f'<text x="{x + 19}" y="46" font-size="13" fill="#1d2430">{_e(label)}</text>')
        x += 30 + 8 * len(label)
    for r, row in enumerate(rows):
        y = top + r * row_h
        body.append(f'<text x="{left - 10}" y="{y + row_h / 2 + 4:.1f}" font-size="13" text-anchor="end" fill="#1d2430">'
                    f'{_e(row["system"])}</text>')
        x = float(left)
        for i, part in enumerate(row["counts"]):
            w = bar_w * part["share"]
            if w <= 0:
                continue
            colour = LABEL_COLOURS.get(part["label"], PALETTE[i % len(PALETTE)])
            tip = f'{row["system"]} — {part["label"]}: {part["n"]} of {row["total"]} ({100 * part["share"]:.1f} %)'
            body.append(f'<rect x="{x:.1f}" y="{y + 5}" width="{w:.1f}" height="{row_h - 10}" fill="{colour}" '
                        f'stroke="#fff" stroke-width="1"><title>{_e(tip)}</title></rect>')
            if w >= 38:
                ink = "#1d2430" if colour in DARK_TEXT_ON else "#fff"
                body.append(f'<text x="{x + w / 2:.1f}" y="{y + row_h / 2 + 4:.1f}" font-size="12" text-anchor="middle" '
                            f'fill="{ink}" pointer-events="none">{100 * part["share"]:.0f}%</text>')
            x += w
        body.append(f'<text x="{left + bar_w + 6}" y="{y + row_h / 2 + 4:.1f}" font-size="11" fill="#667085">'
                    f'{row["total"]}</text>')
    axis_y = top + row_h * max(1, len(rows)) + 4
    for pct in (0, 25, 50, 75, 100):
        x = left + bar_w * pct / 100
        body.append(f'<text x="{x:.1f}" y="{axis_y + 14}" font-size="11" text-anchor="middle" fill="#667085">{pct}%</text>')
    desc = "; ".join(
        f'{row["system"]}: ' + ", ".join(f'{p["label"]} {p["n"]}' for p in row["counts"]) for row in rows
    ) or "no data"
    return _svg(width, height, title, desc, body, chart_id)


def _y_scale(low: float, high: float, top: int, bottom: int):
    ticks = nice_ticks(low, high)
    lo, hi = ticks[0], ticks[-1]

    def y(value: float) -> float:
        return bottom - (value - lo) / (hi - lo) * (bottom - top)

    return ticks, y


def strip_plot(groups: Sequence[dict], *, title: str, y_label: str, digits: int = 1,
               chart_id: str = "chart-scores") -> SafeString:
    """One column of points per system (one point per task) with the mean and its 95 % interval.

    ``groups`` = [{"system", "points": [{"task", "value"}], "interval": {"estimate", "low", "high"} | None}]."""
    left, top, col_w, plot_h = 70, 46, 120, 300
    width = left + col_w * max(1, len(groups)) + 20
    bottom = top + plot_h
    height = bottom + 70
    values = [p["value"] for g in groups for p in g["points"]]
    ticks, y = _y_scale(min(values, default=0.0), max(values, default=1.0), top, bottom)
    body = [f'<text x="{left}" y="22" font-size="15" font-weight="600" fill="#1d2430">{_e(title)}</text>']
    for t in ticks:
        body.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e3e6ea"/>'
                    f'<text x="{left - 8}" y="{y(t) + 4:.1f}" font-size="11" text-anchor="end" fill="#667085">{t:g}</text>')
    body.append(f'<text transform="translate(16 {(top + bottom) / 2:.0f}) rotate(-90)" font-size="12" text-anchor="middle" '
                f'fill="#3b4452">{_e(y_label)}</text>')
    for g_index, group in enumerate(groups):
        cx = left + col_w * g_index + col_w / 2
        colour = PALETTE[g_index % len(PALETTE)]
        n = len(group["points"])
        for p_index, point in enumerate(group["points"]):
            jitter = ((p_index * 37) % 23 - 11) * 1.8 if n > 1 else 0.0  # deterministic spread
            tip = f'{group["system"]} · {point["task"]}: {_fmt(point["value"], digits)}'
            body.append(f'<circle cx="{cx + jitter:.1f}" cy="{y(point["value"]):.1f}" r="4" fill="{colour}" '
                        f'fill-opacity="0.55" stroke="{colour}"><title>{_e(tip)}</title></circle>')
        interval = group.get("interval")
        if interval:
            lo, hi, est = y(interval["low"]), y(interval["high"]), y(interval["estimate"])
            tip = (f'{group["system"]}: mean {_fmt(interval["estimate"], digits)} '
                   f'(95 % CI {_fmt(interval["low"], digits)}–{_fmt(interval["high"], digits)}, {n} tasks)')
            body.append(f'<g><title>{_e(tip)}</title>'
                        f'<line x1="{cx + 30:.1f}" x2="{cx + 30:.1f}" y1="{lo:.1f}" y2="{hi:.1f}" stroke="#1d2430" stroke-width="2"/>'
                        f'<line x1="{cx + 24:.1f}" x2="{cx + 36:.1f}" y1="{lo:.1f}" y2="{lo:.1f}" stroke="#1d2430" stroke-width="2"/>'
                        f'<line x1="{cx + 24:.1f}" x2="{cx + 36:.1f}" y1="{hi:.1f}" y2="{hi:.1f}" stroke="#1d2430" stroke-width="2"/>'
                        f'<rect x="{cx + 25:.1f}" y="{est - 4:.1f}" width="10" height="8" fill="#1d2430"/></g>')
        body.append(f'<text x="{cx:.1f}" y="{bottom + 20}" font-size="12" text-anchor="middle" fill="#1d2430">'
                    f'{_e(group["system"][:18])}</text>'
                    f'<text x="{cx:.1f}" y="{bottom + 36}" font-size="11" text-anchor="middle" fill="#667085">n = {n}</text>')
    body.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{bottom}" stroke="#98a2b3"/>')
    desc = "; ".join(
        f'{g["system"]}: {len(g["points"])} tasks' + (f', mean {_fmt(g["interval"]["estimate"], digits)}' if g.get("interval") else "")
        for g in groups
    ) or "no data"
    return _svg(width, height, title, desc, body, chart_id)


# Label placement for the scatter: a 12 px label's estimated extent (system-ui averages ~0.6 em
# per character; a wider guess only leaves more room) and the point's radius plus a margin.
LABEL_CHAR_W, LABEL_H, POINT_R = 7.2, 15.0, 8.0


@dataclass(frozen=True)
class LabelPlace:
    x: float
    y: float  # the text's baseline
    anchor: str  # "start" or "end"
    leader: bool = False  # drawn away from its point, joined to it by a line
    line_x: float = 0.0

    def box(self, text: str) -> tuple[float, float, float, float]:
        w = LABEL_CHAR_W * len(text)
        x0 = self.x if self.anchor == "start" else self.x - w
        return (x0, self.y - LABEL_H + 3, x0 + w, self.y + 3)


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(centres: Sequence[tuple[float, float]], labels: Sequence[str], *,
                 area: tuple[float, float, float, float]) -> list[LabelPlace]:
    """Where each point's label goes so that no label covers another label or any point, inside
    ``area`` (x0, y0, x1, y1): the first free spot of a few around its point (right, left, above,
    below, then further up or down), else a free row at the right edge of the area joined to its
    point by a leader line. Greedy, points taken top to bottom: deterministic for a given chart."""
    points = [(cx - POINT_R, cy - POINT_R, cx + POINT_R, cy + POINT_R) for cx, cy in centres]
    taken: list[tuple[float, float, float, float]] = []
    places: list[LabelPlace | None] = [None] * len(labels)

    def free(box) -> bool:
        inside = box[0] >= area[0] and box[2] <= area[2] and box[1] >= area[1] and box[3] <= area[3]
        return inside and not any(_overlaps(box, other) for other in taken + points)

    order = sorted(range(len(labels)), key=lambda i: (centres[i][1], centres[i][0]))
    for i in order:
        cx, cy = centres[i]
        candidates = [LabelPlace(cx + 10, cy + 4, "start"), LabelPlace(cx - 10, cy + 4, "end")]
        for dy in (-14, 18, -28, 32, -42, 46):
            candidates += [LabelPlace(cx + 10, cy + dy, "start"), LabelPlace(cx - 10, cy + dy, "end")]
        chosen = next((c for c in candidates if free(c.box(labels[i]))), None)
        if chosen is None:  # a row at the area's right edge, the nearest free one to the point
            width = LABEL_CHAR_W * len(labels[i])
            rows = sorted((area[1] + LABEL_H + k * LABEL_H for k in range(int((area[3] - area[1]) // LABEL_H))),
                          key=lambda row: abs(row - cy))
            row = next((r for r in rows if free(LabelPlace(area[2] - width, r, "start").box(labels[i]))), rows[0])
            chosen = LabelPlace(area[2] - width, row, "start", leader=True, line_x=area[2] - width - 3)
        taken.append(chosen.box(labels[i]))
        places[i] = chosen
    return places


def scatter(points: Sequence[dict], *, title: str, x_label: str, y_label: str, digits: int = 2,
            chart_id: str = "chart-scatter") -> SafeString:
    """Labelled scatter: ``points`` = [{"label", "x", "y"}]."""
    left, top, plot_w, plot_h = 80, 46, 520, 320
    right, bottom = left + plot_w, top + plot_h
    width, height = right + 150, bottom + 60
    xs = [p["x"] for p in points] or [0.0, 1.0]
    ys = [p["y"] for p in points] or [0.0, 1.0]
    x_ticks = nice_ticks(min(xs), max(xs))
    y_ticks, y = _y_scale(min(ys), max(ys), top, bottom)

    def x(value: float) -> float:
        return left + (value - x_ticks[0]) / (x_ticks[-1] - x_ticks[0]) * plot_w

    body = [f'<text x="{left}" y="22" font-size="15" font-weight="600" fill="#1d2430">{_e(title)}</text>']
    for t in y_ticks:
        body.append(f'<line x1="{left}" x2="{right}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e3e6ea"/>'
                    f'<text x="{left - 8}" y="{y(t) + 4:.1f}" font-size="11" text-anchor="end" fill="#667085">{t:g}</text>')
    for t in x_ticks:
        body.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{bottom}" stroke="#eef0f3"/>'
                    f'<text x="{x(t):.1f}" y="{bottom + 16}" font-size="11" text-anchor="middle" fill="#667085">{t:g}</text>')
    body.append(f'<text x="{(left + right) / 2:.0f}" y="{bottom + 40}" font-size="12" text-anchor="middle" fill="#3b4452">'
                f'{_e(x_label)}</text>'
                f'<text transform="translate(18 {(top + bottom) / 2:.0f}) rotate(-90)" font-size="12" text-anchor="middle" '
                f'fill="#3b4452">{_e(y_label)}</text>'
                f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#98a2b3"/>')
    centres = [(x(p["x"]), y(p["y"])) for p in points]
    places = place_labels(centres, [str(p["label"]) for p in points], area=(0, top - 12, width, height - 46))
    for i, (p, (cx, cy), place) in enumerate(zip(points, centres, places)):
        colour = PALETTE[i % len(PALETTE)]
        tip = f'{p["label"]}: {x_label} {_fmt(p["x"], digits)}, {y_label} {_fmt(p["y"], digits)}'
        leader = (f'<line x1="{cx:.1f}" y1="{cy:.1f}" x2="{place.line_x:.1f}" y2="{place.y - 4:.1f}" stroke="#98a2b3"/>'
                  if place.leader else "")
        body.append(f'<g><title>{_e(tip)}</title>{leader}<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{colour}"/>'
                    f'<text x="{place.x:.1f}" y="{place.y:.1f}" font-size="12" text-anchor="{place.anchor}" '
                    f'fill="#1d2430">{_e(p["label"])}</text></g>')
    desc = "; ".join(f'{p["label"]}: ({_fmt(p["x"], digits)}, {_fmt(p["y"], digits)})' for p in points) or "no data"
    return _svg(width, height, title, desc, body, chart_id)


def interval_plot(rows: Sequence[dict], *, title: str, x_label: str, digits: int = 0,
                  chart_id: str = "chart-intervals") -> SafeString:
    """Forest plot: one horizontal 95 % interval per row, ``rows`` = [{"label", "estimate", "low", "high"}]."""
    left, top, plot_w, row_h = 150, 40, 520, 28
    bottom = top + row_h * max(1, len(rows))
    width, height = left + plot_w + 40, bottom + 46
    lows = [r["low"] for r in rows] or [0.0]
    highs = [r["high"] for r in rows] or [1.0]
    ticks = nice_ticks(min(lows), max(highs))

    def x(value: float) -> float:
        return left + (value - ticks[0]) / (ticks[-1] - ticks[0]) * plot_w

    body = [f'<text x="10" y="22" font-size="15" font-weight="600" fill="#1d2430">{_e(title)}</text>']
    for t in ticks:
        body.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{bottom}" stroke="#eef0f3"/>'
                    f'<text x="{x(t):.1f}" y="{bottom + 16}" font-size="11" text-anchor="middle" fill="#667085">{t:g}</text>')
    for i, r in enumerate(rows):
        cy = top + i * row_h + row_h / 2
        tip = f'{r["label"]}: {_fmt(r["estimate"], digits)} (95 % CI {_fmt(r["low"], digits)}–{_fmt(r["high"], digits)})'
        body.append(f'<text x="{left - 10}" y="{cy + 4:.1f}" font-size="13" text-anchor="end" fill="#1d2430">{_e(r["label"])}</text>'
                    f'<g><title>{_e(tip)}</title>'
                    f'<line x1="{x(r["low"]):.1f}" x2="{x(r["high"]):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="#0072B2" stroke-width="3"/>'
                    f'<circle cx="{x(r["estimate"]):.1f}" cy="{cy:.1f}" r="5" fill="#0072B2"/></g>')
    body.append(f'<text x="{left + plot_w / 2:.0f}" y="{bottom + 38}" font-size="12" text-anchor="middle" fill="#3b4452">'
                f'{_e(x_label)}</text>')
    desc = "; ".join(f'{r["label"]}: {_fmt(r["estimate"], digits)}' for r in rows) or "no data"
    return _svg(width, height, title, desc, body, chart_id)


def line_chart(series: Sequence[dict], x_labels: Sequence[str], *, title: str, x_label: str, y_label: str,
               digits: int = 3, chart_id: str = "chart-lines") -> SafeString:
    """One line per system over categorical x positions, with optional 95 % interval whiskers.

    ``series`` = [{"system", "points": [{"x": index into x_labels, "value", "low"?, "high"?, "n"?}]}].
    Each line also gets its own marker shape, so lines stay distinguishable without colour."""
    left, top, plot_w, plot_h = 70, 46, max(320, 90 * len(x_labels)), 300
    right, bottom = left + plot_w, top + plot_h
    legend_x = right + 20
    width, height = legend_x + 190, bottom + 60
    values = [v for s in series for p in s["points"] for v in (p["value"], p.get("low", p["value"]), p.get("high", p["value"]))]
    ticks, y = _y_scale(min(values, default=0.0), max(values, default=1.0), top, bottom)
    step = plot_w / max(1, len(x_labels))

    def x(index: int) -> float:
        return left + step * index + step / 2

    body = [f'<text x="{left}" y="22" font-size="15" font-weight="600" fill="#1d2430">{_e(title)}</text>']
    for t in ticks:
        body.append(f'<line x1="{left}" x2="{right}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e3e6ea"/>'
                    f'<text x="{left - 8}" y="{y(t) + 4:.1f}" font-size="11" text-anchor="end" fill="#667085">{t:g}</text>')
    for i, label in enumerate(x_labels):
        body.append(f'<text x="{x(i):.1f}" y="{bottom + 18}" font-size="12" text-anchor="middle" fill="#1d2430">{_e(label)}</text>')
    body.append(f'<text x="{(left + right) / 2:.0f}" y="{bottom + 42}" font-size="12" text-anchor="middle" fill="#3b4452">'
                f'{_e(x_label)}</text>'
                f'<text transform="translate(16 {(top + bottom) / 2:.0f}) rotate(-90)" font-size="12" text-anchor="middle" '
                f'fill="#3b4452">{_e(y_label)}</text>'
                f'<line x1="{left}" x2="{left}" y1="{top}" y2="{bottom}" stroke="#98a2b3"/>'
                f'<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#98a2b3"/>')
    for s_index, s in enumerate(series):
        colour = PALETTE[s_index % len(PALETTE)]
        offset = (s_index - (len(series) - 1) / 2) * 4  # keeps overlapping whiskers apart
        points = sorted(s["points"], key=lambda p: p["x"])
        path = " ".join(f'{"M" if k == 0 else "L"}{x(p["x"]) + offset:.1f},{y(p["value"]):.1f}' for k, p in enumerate(points))
        body.append(f'<g class="series" data-system="{_e(s["system"])}">')
        if len(points) > 1:
            body.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for p in points:
            cx, cy = x(p["x"]) + offset, y(p["value"])
            tip = f'{s["system"]} · {x_labels[p["x"]]}: {_fmt(p["value"], digits)}'
            if p.get("low") is not None and p.get("high") is not None:
                tip += f' (95 % CI {_fmt(p["low"], digits)}–{_fmt(p["high"], digits)})'
                body.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(p["low"]):.1f}" y2="{y(p["high"]):.1f}" '
                            f'stroke="{colour}" stroke-width="1.5" stroke-opacity="0.7"/>')
            if p.get("n") is not None:
                tip += f', n = {p["n"]}'
            body.append(f'<g><title>{_e(tip)}</title>{_marker(s_index, cx, cy, colour)}</g>')
        body.append("</g>")
        ly = top + 8 + 22 * s_index
        body.append(f'{_marker(s_index, legend_x + 7, ly, colour)}'
                    f'<text x="{legend_x + 18}" y="{ly + 4}" font-size="12" fill="#1d2430">{_e(s["system"][:24])}</text>')
    desc = "; ".join(
        f'{s["system"]}: ' + ", ".join(f'{x_labels[p["x"]]} {_fmt(p["value"], digits)}' for p in s["points"]) for s in series
    ) or "no data"
    return _svg(width, height, title, desc, body, chart_id)


def _marker(index: int, cx: float, cy: float, colour: str) -> str:
    shape = index % 4
    if shape == 0:
        return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{colour}"/>'
    if shape == 1:
        return f'<rect x="{cx - 4.5:.1f}" y="{cy - 4.5:.1f}" width="9" height="9" fill="{colour}"/>'
    if shape == 2:
        return f'<path d="M{cx:.1f},{cy - 6:.1f} L{cx + 5.5:.1f},{cy + 4:.1f} L{cx - 5.5:.1f},{cy + 4:.1f} Z" fill="{colour}"/>'
    return f'<path d="M{cx:.1f},{cy - 6:.1f} L{cx + 6:.1f},{cy:.1f} L{cx:.1f},{cy + 6:.1f} L{cx - 6:.1f},{cy:.1f} Z" fill="{colour}"/>'


# ColorBrewer "Blues" (single hue, readable with colour-vision deficiencies and in greyscale).
SEQUENTIAL = ("#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def sequential_colour(fraction: float) -> str:
    """Colour for a value at ``fraction`` (0–1) of the scale, interpolated along ``SEQUENTIAL``."""
    fraction = min(1.0, max(0.0, fraction))
    position = fraction * (len(SEQUENTIAL) - 1)
    low = int(math.floor(position))
    high = min(low + 1, len(SEQUENTIAL) - 1)
    t = position - low
    a, b = _hex(SEQUENTIAL[low]), _hex(SEQUENTIAL[high])
    return "#" + "".join(f"{round(u + (v - u) * t):02x}" for u, v in zip(a, b, strict=True))


def _luminance(colour: str) -> float:
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in _hex(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def ink_for(background: str) -> str:
    """Black or white text, whichever contrasts more with ``background`` (WCAG contrast ratio).
    Pure black, not the page's dark grey: only black and white together guarantee ≥ 4.5:1 on
    every background (mid blues fall short with grey)."""
    lum = _luminance(background)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def heatmap(rows: Sequence[dict], columns: Sequence[str], *, title: str, low: float, high: float, digits: int = 2,
            chart_id: str = "chart-heatmap") -> SafeString:
    """Rows × columns of coloured cells with the value and the count printed in each cell.

    ``rows`` = [{"discipline", "cells": [{"mean" | None, "n"}]}] with one cell per column."""
    left, top, cell_w, cell_h = 210, 110, 104, 44
    width = left + cell_w * max(1, len(columns)) + 30
    height = top + cell_h * max(1, len(rows)) + 80
    span = (high - low) if high > low else 1.0
    body = [f'<text x="10" y="22" font-size="15" font-weight="600" fill="#1d2430">{_e(title)}</text>']
    for c, column in enumerate(columns):
        cx = left + cell_w * c + cell_w / 2
        body.append(f'<text x="{cx:.1f}" y="{top - 10}" font-size="12" text-anchor="start" fill="#1d2430" '
                    f'transform="rotate(-30 {cx:.1f} {top - 10})">{_e(column[:22])}</text>')
    for r, row in enumerate(rows):
        y = top + cell_h * r
        body.append(f'<text x="{left - 10}" y="{y + cell_h / 2 + 4:.1f}" font-size="12" text-anchor="end" fill="#1d2430">'
                    f'{_e(row["discipline"][:30])}</text>')
        for c, cell in enumerate(row["cells"]):
            x = left + cell_w * c
            if cell["mean"] is None:
                body.append(f'<rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" fill="#ffffff" stroke="#d0d5dd"/>'
                            f'<text x="{x + cell_w / 2:.1f}" y="{y + cell_h / 2 + 4:.1f}" font-size="12" text-anchor="middle" '
                            f'fill="#667085">—<title>{_e(row["discipline"])} × {_e(columns[c])}: no score</title></text>')
                continue
            fill = sequential_colour((cell["mean"] - low) / span)
            ink = ink_for(fill)
            tip = f'{row["discipline"]} × {columns[c]}: mean {_fmt(cell["mean"], digits)} over {cell["n"]} report{"s" if cell["n"] != 1 else ""}'
            body.append(f'<g class="cell"><title>{_e(tip)}</title>'
                        f'<rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" fill="{fill}" stroke="#ffffff" stroke-width="2"/>'
                        f'<text x="{x + cell_w / 2:.1f}" y="{y + cell_h / 2 + 1:.1f}" font-size="14" font-weight="600" '
                        f'text-anchor="middle" fill="{ink}">{_fmt(cell["mean"], digits)}</text>'
                        f'<text x="{x + cell_w / 2:.1f}" y="{y + cell_h / 2 + 15:.1f}" font-size="10" text-anchor="middle" '
                        f'fill="{ink}">n = {cell["n"]}</text></g>')
    # legend: the colour ramp from the lowest to the highest cell mean
    ly = top + cell_h * max(1, len(rows)) + 24
    steps = 40
    for i in range(steps):
        body.append(f'<rect x="{left + i * 6}" y="{ly}" width="6" height="12" fill="{sequential_colour(i / (steps - 1))}"/>')
    body.append(f'<text x="{left - 6}" y="{ly + 10}" font-size="11" text-anchor="end" fill="#3b4452">{_fmt(low, digits)}</text>'
                f'<text x="{left + steps * 6 + 6}" y="{ly + 10}" font-size="11" fill="#3b4452">{_fmt(high, digits)}</text>')
    desc = "; ".join(
        f'{row["discipline"]}: ' + ", ".join(
            f'{columns[c]} {_fmt(cell["mean"], digits)} (n={cell["n"]})' for c, cell in enumerate(row["cells"]) if cell["mean"] is not None)
        for row in rows
    ) or "no data"
    return _svg(width, height, title, desc, body, chart_id)
