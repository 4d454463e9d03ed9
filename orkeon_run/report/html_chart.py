"""The HTML report's budget section: an inline SVG of what the last attempt had spent
over time, as a share of each limit in force (charged seconds, turns, tokens, cost), and
a table of the totals."""

from __future__ import annotations

from html import escape

from .fmt import count, money, seconds
from .model import BudgetPoint, RunView

W, H = 1000, 220
X0, X1, Y0, Y1 = 50, 990, 12, 196  # the plot area
COLOURS = {"seconds": "#1e88e5", "turns": "#8e24aa", "tokens": "#00897b", "usd": "#f4511e"}


def _value(p: BudgetPoint, key: str) -> float | None:
    return {"seconds": p.seconds, "turns": float(p.turns), "tokens": float(p.tokens), "usd": p.usd}[
        key
    ]


def _fmt(key: str, value: float | None) -> str:
    if key == "seconds":
        return seconds(value)
    if key == "usd":
        return money(value)
    return "—" if value is None else count(int(value))


def budget_chart(v: RunView) -> str:
    points = v.budget_points
    limits = {k: v.limits[k] for k in COLOURS if v.limits.get(k)}
    rows = []
    last = points[-1] if points else None
    for key in COLOURS:
        used = _value(last, key) if last else None
        limit = limits.get(key)
        share = f"{used / limit * 100:.0f} %" if used is not None and limit else ""
        rows.append(
            f"<tr><td>{key}</td><td class=n>{escape(_fmt(key, used))}</td>"
            f"<td class=n>{escape(_fmt(key, limit)) if limit else 'no limit'}</td><td class=n>{share}</td></tr>"
        )
    table = (
        "<table><tr><th>budget</th><th class=n>used</th><th class=n>limit</th><th class=n>share</th></tr>"
        + "".join(rows)
        + "</table>"
    )
    note = (
        f'<p class="muted">The last of {v.attempts} attempts (each has its own budget).</p>'
        if v.attempts > 1
        else ""
    )
    return f'<section id="budget"><h2>Budget</h2>{_svg(points, limits)}{table}{note}</section>'


def _svg(points: list[BudgetPoint], limits: dict[str, float]) -> str:
    if len(points) < 2:
        return ""
    t0, t1 = points[0].ts, points[-1].ts
    span = max(t1 - t0, 1e-6)
    if limits:
        series = {k: (limit, f"{k} (% of {_fmt(k, limit)})") for k, limit in limits.items()}
        top = 100.0
    else:  # no limit known: charged seconds against their own maximum
        series = {"seconds": (max(points[-1].seconds, 1e-9), "charged seconds (no limit)")}
        top = 100.0
    lines, legend = [], []
    for key, (limit, label) in series.items():
        coords, prev = [], None
        for p in points:
            value = _value(p, key)
            if value is None:
                break
            share = min(value / limit * 100, top * 1.1)
            x = X0 + (p.ts - t0) / span * (X1 - X0)
            y = Y1 - share / (top * 1.1) * (Y1 - Y0)
            if prev is not None:
                coords.append(f"{x:.1f},{prev:.1f}")  # spending is a step, not a slope
            coords.append(f"{x:.1f},{y:.1f}")
            prev = y
        colour = COLOURS[key]
        lines.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(coords)}"/>'
        )
        legend.append(f'<span><i style="background:{colour}"></i>{escape(label)}</span>')
    grid = []
    for pct in (50, 80, 100):
        y = Y1 - pct / (top * 1.1) * (Y1 - Y0)
        grid.append(
            f'<line x1="{X0}" x2="{X1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#999" stroke-dasharray="4 4" stroke-width="1"/>'
            f'<text x="4" y="{y + 4:.1f}">{pct} %</text>'
        )
    axis = (
        f'<line x1="{X0}" x2="{X1}" y1="{Y1}" y2="{Y1}" stroke="#999"/>'
        f'<text x="{X0}" y="{H - 6}">0 s</text>'
        f'<text x="{X1}" y="{H - 6}" text-anchor="end">+{escape(seconds(span))}</text>'
    )
    return (
        f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="budget used over time">'
        + "".join(grid)
        + axis
        + "".join(lines)
        + f'</svg><p class="legend">{"".join(legend)}</p>'
    )
