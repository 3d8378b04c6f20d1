"""Pure numeric core: no Flask, no SQLAlchemy. Functions over integer-indexed arrays."""

from .elo import EloParams, elo_update, replay_elo

__all__ = ["EloParams", "elo_update", "replay_elo"]
