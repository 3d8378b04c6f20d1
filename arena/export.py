"""Ranked tables out: text table, CSV, JSON, Parquet."""

from __future__ import annotations

import io
import json
import math

import pandas as pd

from .rankings import Ranking

FORMATS = ("table", "csv", "json", "parquet")
COLUMNS = ["rank", "model", "score", "score_low", "score_high", "rating", "ci_low", "ci_high",
           "rank_upper_bound", "online_elo", "votes", "wins", "win_rate"]


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def ranking_frame(ranking: Ranking) -> pd.DataFrame:
    return pd.DataFrame(ranking.records(), columns=COLUMNS)


def to_json(ranking: Ranking) -> str:
    return json.dumps([{k: _clean(v) for k, v in r.items()} for r in ranking.records()],
                      indent=2)


def to_csv(ranking: Ranking) -> str:
    return ranking_frame(ranking).to_csv(index=False, float_format="%.6g")


def to_parquet(ranking: Ranking) -> bytes:
    buf = io.BytesIO()
    ranking_frame(ranking).to_parquet(buf, index=False)
    return buf.getvalue()


def to_table(ranking: Ranking) -> str:
    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    header = (f"{'rank':>4}  {'model':24} {'score':>7}  {'rating':>7}  {'95% CI':>15}  "
              f"{'rank≤':>5}  {'online':>7}  {'votes':>8}  {'win%':>6}")
    lines = [header]
    for m in ranking.models:
        ci = "-" if m.ci_low is None else f"{m.ci_low:.0f}–{m.ci_high:.0f}"
        lines.append(
            f"{m.rank:>4}  {m.model[:24]:24} {m.score:7.2f}  {fmt(m.rating, '7.1f')}  "
            f"{ci:>15}  {fmt(m.rank_upper_bound, '>5')}  {fmt(m.online_elo, '7.1f')}  "
            f"{m.votes:>8,d}  {fmt(None if m.win_rate is None else 100 * m.win_rate, '6.1f')}")
    title = f"{ranking.method.upper()} ranking"
    if ranking.criterion:
        title += f" — {ranking.criterion}"
    title += f" — {ranking.total_votes:,d} votes"
    if ranking.bootstrap_rounds:
        title += f", {ranking.bootstrap_rounds} bootstrap rounds"
    head = [title]
    if ranking.slice:
        head.append("slice: " + ", ".join(f"{k}={v}" for k, v in ranking.slice.items()))
    flags = [f"! {f}" for f in ranking.flags]
    return "\n".join(head + lines + flags) + "\n"
