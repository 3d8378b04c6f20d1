"""Agreement per criterion (:mod:`arena.ranking.agreement`) over the votes a ranking counts:
per comparison its votes for either image and per voter the sums its intervals need, summed
by the database from the log (the intervals count the voters, so the comparisons' totals
alone do not do). That reads every counted vote, so public pages show figures counted once
a period: the whole criterion's taken by the rollup timer (:func:`take_agreement`), a
rolled-up slice's by the period's first page that shows it."""

from __future__ import annotations

import zlib
from dataclasses import asdict, replace

import numpy as np
from flask import current_app
from sqlalchemy import Float, case, cast, func, select

from arena.analysis import published, slices
from arena.analysis.tallies import Slice, vote_filter
from arena.extensions import db
from arena.models import Comparison, Vote
from arena.ranking.agreement import Agreement, agreement_of_voters

KIND = "agreement"  # (published figures: one a criterion and rolled-up slice, by figures_key)


def criterion_agreement(criterion: str, slice_: Slice | None = None) -> Agreement | None:
    """Krippendorff's alpha and the majority share of ``criterion``'s votes in ``slice_``,
    with 95% intervals over pairs and voters (None with too few repeated comparisons)."""
    counts, voters = sums_of(criterion, slice_ or Slice())
    return agreement_of_voters(counts, voters, min_voters=current_app.config["MIN_CLUSTERS"])


def sums_of(criterion: str, slice_: Slice) -> tuple[np.ndarray, np.ndarray]:
    """The counted ordinary votes of ``criterion`` in ``slice_`` as the agreement reads them,
    summed by the database: per comparison, its votes for its first and its second image;
    per voter, their votes on pairs voted twice or more and the sum over those of the pair's
    parts less the parts of the pair without the vote
    (:func:`arena.ranking.agreement.agreement_of_voters`)."""
    first = case((Vote.winner_image_id == Comparison.image_a_id, 1), else_=0)
    votes = (vote_filter(criterion, slice_, join_prompt=True)
             .with_only_columns(Vote.comparison_id.label("comparison"),
                                Vote.voter_id.label("voter"), first.label("first"))
             .subquery())
    pairs = (select(votes.c.comparison, func.sum(votes.c.first).label("a"),
                    func.count().label("n")).group_by(votes.c.comparison).subquery())
    counts = np.array([(a, n - a) for _, a, n in db.session.execute(select(pairs))],
                      dtype=float).reshape(-1, 2)
    a, n, f = (cast(pairs.c.a, Float), cast(pairs.c.n, Float), cast(votes.c.first, Float))
    b = n - a
    rest_a, rest_b, rest_n = a - f, b - (1 - f), n - 1

    def parts(x, y, total):  # (arena.ranking.agreement._parts, where ``total`` >= 2)
        return (x, y, x * y / (total - 1), case((x >= y, x), else_=y))

    def less(whole, part):  # a pair's part less its part without the vote
        return whole - case((rest_n >= 2, part), else_=0.0)

    columns = [func.sum(less(w, p)) for w, p in zip(parts(a, b, n),
                                                   parts(rest_a, rest_b, rest_n), strict=True)]
    rows = db.session.execute(
        select(votes.c.voter, func.count(), *columns)
        .join(pairs, pairs.c.comparison == votes.c.comparison)
        .where(pairs.c.n >= 2).group_by(votes.c.voter)).all()
    voters = np.array([tuple(row)[1:] for row in rows], dtype=float).reshape(-1, 5)
    return counts, voters


def take_agreement(criterion: str) -> dict | None:
    """This period's agreement over every vote before the cut-off, worked out now if not
    yet: for the rollup timer (``arena votes rollup``) to pay, never a page."""
    return _published(criterion, Slice()).payload


def shown_agreement(criterion: str, slice_: Slice, public: bool) -> Agreement | None:
    """The agreement beside a ranking of ``slice_``: the period's figures where it counts
    what the public pages count (the whole criterion's only once the timer took them, on a
    public page; a rolled-up slice's worked out by the period's first reading), else
    counted now."""
    period = slice_.as_of is not None and slice_.as_of == published.shown_cutoff()
    if period and not slice_.active():
        found = (published.stored(KIND, figures_key(criterion, Slice())) if public
                 else _published(criterion, Slice()))
    elif period and slices.field_of(slice_) is not None:
        found = _published(criterion, replace(slice_, as_of=None))
    else:
        return criterion_agreement(criterion, slice_)
    if found is None or found.payload is None or found.as_of != slice_.as_of:
        return None
    return Agreement(**found.payload)


def _published(criterion: str, slice_: Slice) -> published.Published:
    def compute(before):
        found = criterion_agreement(criterion, replace(slice_, as_of=before))
        return asdict(found) if found is not None else None

    return published.figures(KIND, figures_key(criterion, slice_), compute)


def figures_key(criterion: str, slice_: Slice) -> int:
    """The figures' number: of the criterion and the field and value the slice keeps."""
    return zlib.crc32(repr((criterion, sorted(slice_.active().items()))).encode()) & 0x7FFFFFFF
