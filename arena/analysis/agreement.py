"""Agreement per criterion (:mod:`arena.ranking.agreement`) over the votes a ranking counts:
each ordinary comparison's votes for either image, from the rollup when the ranking takes
every vote or one rolled-up slice (:mod:`arena.analysis.slices`), from the log for other
slices. Its cost grows with the comparisons, so the public board shows the figures the
rollup timer took for the period (:func:`take_agreement`)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

import numpy as np
from sqlalchemy import func

from arena.analysis import published, rollups, slices
from arena.analysis.tallies import Slice, vote_filter
from arena.models import Vote
from arena.ranking.agreement import Agreement, agreement


def criterion_agreement(criterion: str, slice_: Slice | None = None) -> Agreement | None:
    """Krippendorff's alpha and the majority share of ``criterion``'s votes in ``slice_``,
    with 95% intervals over comparisons (None with too few repeated comparisons)."""
    slice_ = slice_ or Slice()
    if slice_.active():
        rolled = slices.read(criterion, slice_)
        found = rolled.sides() if rolled is not None else None
    else:
        found = rollups.comparison_sides(criterion, slice_.as_of)
    return agreement(found if found is not None else sides(criterion, slice_))


def sides(criterion: str, slice_: Slice) -> np.ndarray:
    """Per ordinary comparison, the counted votes in ``slice_`` for its first and its second
    image, read from the log."""
    return rollups.sides_of(vote_filter(criterion, slice_, join_prompt=True)
                            .with_only_columns(rollups.first_votes(), func.count())
                            .group_by(Vote.comparison_id))


def take_agreement(criterion: str) -> dict | None:
    """This period's agreement over every vote before the cut-off, worked out now if not
    yet: for the rollup timer (``arena votes rollup``) to pay, never a page."""
    def compute(before):
        found = criterion_agreement(criterion, Slice(as_of=before))
        return asdict(found) if found is not None else None

    return published.figures(f"agreement:{criterion}", published.ALL, compute).payload


def published_agreement(criterion: str, as_of: datetime | None) -> Agreement | None:
    """The period's stored agreement (:func:`take_agreement`) when it counts the votes
    before ``as_of``, else None (the timer has not taken it)."""
    stored = published.stored(f"agreement:{criterion}", published.ALL)
    if stored is None or stored.as_of != as_of or stored.payload is None:
        return None
    return Agreement(**stored.payload)
