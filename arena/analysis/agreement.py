"""Agreement per criterion (:mod:`arena.ranking.agreement`) over the votes a ranking counts:
each ordinary comparison's votes for either image, from the rollup when the ranking takes
every vote (flat in the log), from the log for a slice."""

from __future__ import annotations

import numpy as np
from sqlalchemy import case, func

from arena.analysis import rollups
from arena.analysis.tallies import Slice, vote_filter
from arena.extensions import db
from arena.models import Comparison, Vote
from arena.ranking.agreement import Agreement, agreement

ROUNDS = 2000


def criterion_agreement(criterion: str, slice_: Slice | None = None,
                        rng: np.random.Generator | None = None) -> Agreement | None:
    """Krippendorff's alpha and the majority share of ``criterion``'s votes in ``slice_``,
    with 95% intervals resampling comparisons (None with too few repeated comparisons).
    Seeded (0) unless ``rng`` is given: a page shows the same interval on every load."""
    slice_ = slice_ or Slice()
    found = None if slice_.active() else rollups.comparison_sides(criterion, slice_.as_of)
    counts = found if found is not None else sides(criterion, slice_)
    return agreement(counts, rounds=ROUNDS,
                     rng=rng if rng is not None else np.random.default_rng(0))


def sides(criterion: str, slice_: Slice) -> np.ndarray:
    """Per ordinary comparison, the counted votes in ``slice_`` for its first and its second
    image, read from the log."""
    first = func.sum(case((Vote.winner_image_id == Comparison.image_a_id, 1), else_=0))
    query = (vote_filter(criterion, slice_, join_prompt=True)
             .with_only_columns(first, func.count()).group_by(Vote.comparison_id))
    rows = np.array([tuple(r) for r in db.session.execute(query)],
                    dtype=np.int64).reshape(-1, 2)
    return np.column_stack([rows[:, 0], rows[:, 1] - rows[:, 0]])
