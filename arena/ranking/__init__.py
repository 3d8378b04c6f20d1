"""Pure numeric core: no Flask, no SQLAlchemy. Functions over integer-indexed arrays."""

from .bootstrap import BootstrapResult, bootstrap, rank_upper_bounds
from .bradley_terry import BTResult, aggregate, bradley_terry, is_strongly_connected
from .elo import EloParams, elo, elo_update, replay_elo
from .fisher import FisherResult, fisher_intervals

__all__ = [
    "BTResult",
    "BootstrapResult",
    "EloParams",
    "FisherResult",
    "aggregate",
    "bootstrap",
    "bradley_terry",
    "elo",
    "elo_update",
    "fisher_intervals",
    "is_strongly_connected",
    "rank_upper_bounds",
    "replay_elo",
]
