"""Server-rendered SVG geometry for the leaderboard: no chart library, no inline styles
(colours are SVG presentation attributes, allowed by the Content-Security-Policy)."""

from __future__ import annotations

from arena.analysis.leaderboard import Ranking
from arena.voting.voters import CONTINENTS


def _mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> str:
    r, g, bl = (round(x + (y - x) * t) for x, y in zip(a, b, strict=True))
    return f"#{r:02x}{g:02x}{bl:02x}"


def heat_colour(rate: float | None) -> str:
    """Blue (0) through near-white (0.5) to red (1); grey when there is no data."""
    if rate is None:
        return "#d9d9de"
    low, mid, high = (52, 101, 200), (246, 246, 248), (206, 62, 50)
    return _mix(low, mid, rate * 2) if rate < 0.5 else _mix(mid, high, rate * 2 - 1)


def interval_chart(ranking: Ranking, width: int = 420, row: int = 26, label: int = 100) -> dict:
    """Rows of (model, x of rating, x of low/high) on a shared Elo-scale axis."""
    rated = [m for m in ranking.models if m.rating is not None]
    if not rated:
        return {"rows": [], "width": width, "height": 0, "ticks": []}
    lows = [m.ci_low if m.ci_low is not None else m.rating for m in rated]
    highs = [m.ci_high if m.ci_high is not None else m.rating for m in rated]
    lo, hi = min(lows), max(highs)
    pad = max(10.0, (hi - lo) * 0.08)
    lo, hi = lo - pad, hi + pad
    plot = width - label - 16

    def x(value: float) -> float:
        return round(label + (value - lo) / (hi - lo) * plot, 1)

    step = _tick_step(hi - lo)
    first = int(lo // step + 1) * step
    ticks = [{"x": x(v), "label": f"{v:g}"} for v in range(first, int(hi) + 1, step)]
    rows = [{"model": m.model, "y": 20 + i * row, "x": x(m.rating), "x_low": x(low),
             "x_high": x(high), "rating": m.rating, "votes": m.votes}
            for i, (m, low, high) in enumerate(zip(rated, lows, highs, strict=True))]
    return {"rows": rows, "width": width, "height": 30 + len(rows) * row, "ticks": ticks,
            "label_width": label}


def _tick_step(span: float) -> int:
    """The first of 5, 10, 20, 25, 50 times a power of ten that cuts ``span`` (Elo points)
    into at most six: the intervals of a few voters can span thousands."""
    scale = 1
    while True:
        for step in (5, 10, 20, 25, 50):
            if span / (step * scale) <= 6 or scale >= 10 ** 12:
                return step * scale
        scale *= 10


def heatmap(ranking: Ranking, cell: int = 44) -> dict:
    """Win rate of the row model against the column model, in ranking order. Rows are named
    "1 Aurora-XL", columns by the same numbers: a name is never cut, and the row labels take
    no more width than the longest name needs (a phone's narrow card)."""
    if not ranking.wins:
        return {"cells": [], "labels": [], "size": 0}
    names = [m.model for m in ranking.models if m.rating is not None][: len(ranking.wins)]
    label = min(170, 36 + 7 * max(len(n) for n in names))  # (12 px type: ~7 px a letter)
    cells = []
    for i, row in enumerate(ranking.wins):
        for j, won in enumerate(row):
            if i == j:
                continue
            total = won + ranking.wins[j][i]
            rate = won / total if total else None
            cells.append({"x": label + j * cell, "y": 24 + i * cell, "fill": heat_colour(rate),
                          "text": "–" if rate is None else f"{100 * rate:.0f}",
                          "title": f"{names[i]} beat {names[j]} in {won:g} of {total:g}",
                          "dark": rate is not None and abs(rate - 0.5) > 0.3})
    labels = [{"name": f"{i + 1} {n}", "y": 24 + i * cell + cell / 2,
               "x": label + i * cell + cell / 2, "short": str(i + 1)}
              for i, n in enumerate(names)]
    return {"cells": cells, "labels": labels, "size": len(names), "cell": cell,
            "label_width": label, "width": label + len(names) * cell + 4,
            "height": 24 + len(names) * cell + 4}


PALETTE = ("#3548e0", "#ce3e32", "#1c7c3c", "#b8860b", "#7b3fa0", "#0f8b8d")


def psychometric_chart(curves: dict, width: int = 420, height: int = 220) -> dict:
    """Lines of accuracy (50-100%) against exposure (100-1000 ms), one per model."""
    left, right, top, bottom = 40, 10, 10, 28
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(ms):
        return round(left + (min(max(ms, 100), 1000) - 100) / 900 * plot_w, 1)

    def y(acc):
        return round(top + (1 - (max(acc, 0.5) - 0.5) / 0.5) * plot_h, 1)

    lines = []
    for k, (model, points) in enumerate(curves.items()):
        coords = [(x(ms), y(acc), n) for ms, acc, n in points]
        lines.append({"model": model, "colour": PALETTE[k % len(PALETTE)],
                      "points": " ".join(f"{a},{b}" for a, b, _ in coords),
                      "dots": coords, "legend_y": top + 14 * k + 10})
    return {"width": width, "height": height, "lines": lines,
            "x_ticks": [{"x": x(v), "label": v} for v in (100, 300, 500, 700, 1000)],
            "y_ticks": [{"y": y(v / 100), "label": f"{v}%"} for v in (50, 75, 100)],
            "left": left, "bottom": height - bottom}


def bar_rows(counts: list[tuple[str, int]], width: int = 300, row: int = 24,
             label: int = 120) -> dict:
    """Horizontal bar geometry for an SVG chart (no inline styles under the CSP)."""
    top = max((n for _, n in counts), default=0) or 1
    bars = [{"label": CONTINENTS.get(name, name), "n": n, "y": i * row,
             "w": round((width - label - 40) * n / top, 1)} for i, (name, n) in enumerate(counts)]
    return {"bars": bars, "width": width, "height": max(len(bars) * row, row),
            "label_width": label}
