"""The leaderboard's interval chart labels its axis with at most six ticks, however wide the
intervals (a handful of voters can make them thousands of Elo points wide)."""

from __future__ import annotations

import pytest

from arena.analysis.leaderboard import RankedModel, Ranking
from arena.web.charts import interval_chart


def _ranking(half_width: float) -> Ranking:
    models = [RankedModel(rank=k + 1, model=f"m{k}", score=None, rating=1000.0 - 40 * k,
                          ci_low=1000.0 - 40 * k - half_width,
                          ci_high=1000.0 - 40 * k + half_width, score_low=None,
                          score_high=None, rank_best=1, rank_worst=3, tier=1,
                          online_elo=None, votes=10, wins=5.0, win_rate=0.5)
              for k in range(3)]
    return Ranking("preference", "bt", models, total_votes=30, bootstrap_rounds=0)


@pytest.mark.parametrize("half_width", [3.0, 60.0, 900.0, 40_000.0, 3e9])
def test_ticks_fit_any_interval(half_width):
    chart = interval_chart(_ranking(half_width))
    assert 1 <= len(chart["ticks"]) <= 6
    xs = [tick["x"] for tick in chart["ticks"]]
    assert xs == sorted(xs) and all(100 <= x <= 420 - 16 for x in xs)
    assert all(100 <= row["x_low"] <= row["x"] <= row["x_high"] <= 404 for row in chart["rows"])
