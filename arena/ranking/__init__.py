"""Pure numeric core: no Flask, no SQLAlchemy. Functions over integer-indexed arrays."""

from arena.ranking.bootstrap import BootstrapResult, bootstrap
from arena.ranking.bradley_terry import BTResult, aggregate, bradley_terry, is_strongly_connected
from arena.ranking.elo import EloParams, elo, elo_update, replay_elo
from arena.ranking.moments import PairMoments
from arena.ranking.pairs import PairCounts
from arena.ranking.sandwich import InstantResult, instant_intervals
from arena.ranking.strata import Calibration, effective_size, post_strata

__all__ = [
    "BTResult",
    "BootstrapResult",
    "Calibration",
    "EloParams",
    "InstantResult",
    "PairCounts",
    "PairMoments",
    "aggregate",
    "bootstrap",
    "bradley_terry",
    "effective_size",
    "elo",
    "elo_update",
    "instant_intervals",
    "is_strongly_connected",
    "post_strata",
    "replay_elo",
]
