"""The data sets tests share: real game records shipped in tests/data (see PROVENANCE.md)
as win matrices, and synthetic Bradley-Terry votes from known strengths."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from arena.ranking import aggregate

DATA = Path(__file__).resolve().parent / "data"
IMAGES = DATA / "images"


def chess_games() -> list:
    """7,999 computer chess games: [white, black, "1-0" | "0-1" | "1/2-1/2"]."""
    return json.loads((DATA / "computer_chess.short.json").read_text())


def synthetic(n, votes, seed):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, n)
    a = rng.integers(0, n, votes)
    b = rng.integers(0, n - 1, votes)
    b = b + (b >= a)
    a_wins = rng.random(votes) < 1 / (1 + np.exp(strength[b] - strength[a]))
    return aggregate(np.where(a_wins, a, b), np.where(a_wins, b, a), n), strength


def load_chess():
    games = chess_games()
    names = sorted({name for g in games for name in g[:2]})
    index = {name: i for i, name in enumerate(names)}
    winners = [index[g[1] if g[2] == "0-1" else g[0]] for g in games]
    losers = [index[g[0] if g[2] == "0-1" else g[1]] for g in games]
    ties = [g[2] == "1/2-1/2" for g in games]
    return aggregate(winners, losers, len(names), ties=ties), names


def load_football():
    matches = json.loads((DATA / "football.en.1.json").read_text())["matches"]
    names = sorted({m[k] for m in matches for k in ("team1", "team2")})
    index = {name: i for i, name in enumerate(names)}
    w, lo, t = [], [], []
    for m in matches:
        g1, g2 = m["score"]["ft"]
        a, b = index[m["team1"]], index[m["team2"]]
        w.append(a if g1 >= g2 else b)
        lo.append(b if g1 >= g2 else a)
        t.append(g1 == g2)
    return aggregate(w, lo, len(names), ties=t), names


def clustered_votes(n, votes, voters, spread, seed):
    """Votes from ``voters`` voters with a taste of their own: voter v sees item i with
    strength ``strength[i] + spread * z[v, i]``. Returns winners, losers and voter ids."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(0.6, -0.6, n)
    taste = spread * rng.normal(0, 1, (voters, n))
    voter = rng.integers(0, voters, votes)
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    logit = strength[a] + taste[voter, a] - strength[b] - taste[voter, b]
    a_wins = rng.random(votes) < 1 / (1 + np.exp(-logit))
    return np.where(a_wins, a, b), np.where(a_wins, b, a), voter
