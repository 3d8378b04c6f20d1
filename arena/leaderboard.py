"""The online Elo leaderboard (the batch Bradley-Terry ranking lives in its own module)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from .config import CRITERIA
from .extensions import db
from .models import EloRating, GenModel


@dataclass(frozen=True)
class EloRow:
    rank: int
    model: str
    rating: float
    votes: int
    wins: int

    @property
    def win_rate(self) -> float | None:
        return self.wins / self.votes if self.votes else None


def elo_leaderboard(criterion: str) -> list[EloRow]:
    """Models by online Elo for ``criterion``, best first. Raises ValueError on an unknown
    criterion."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}")
    rows = db.session.execute(
        select(GenModel.name, EloRating.rating, EloRating.votes, EloRating.wins)
        .join(GenModel, GenModel.id == EloRating.model_id)
        .where(EloRating.criterion == criterion)
        .order_by(EloRating.rating.desc(), GenModel.name)
    ).all()
    return [
        EloRow(rank=i, model=name, rating=rating, votes=votes, wins=wins)
        for i, (name, rating, votes, wins) in enumerate(rows, start=1)
    ]
