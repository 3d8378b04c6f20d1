"""What the public pages show of the votes: everything as of one moment per period.

A gold pair's vote moves no public figure; an ordinary one moves several (votes collected,
the online Elo, an owner's vote count). Figures read live would let a voter answer, reload a
page and know whether that task was gold; figures taken whenever a page is first asked for
would let them compare two pages taken either side of an answer. So every vote-derived
figure anyone but an analyst or an operator sees counts exactly the votes (and skips, and
gold answers) stamped before one cut-off: the start of the current period
(``PUBLISHED_PERIOD_S``, an hour) less ``SETTLED``, once the rollup timer has screened the
period's votes for farms (until then, the period before's: :func:`_shown`). It is the
same for every page, every
worker and every request of the period, whoever asks first, and it is computed from the
vote log, not from the live counters. Within a period nothing a voter does changes any
page; from one period to the next, the change is everybody's votes of the period together.

Figures that cost more than a query (a campaign's progress, the online Elo replayed to the
cut-off, an owner's counts) are computed by the period's first request and stored, and read
by every worker until the next period; the rankings are fitted per request (their slices are
the visitor's choice) from the votes before the cut-off (``Slice.as_of``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import chain
from typing import Any

import numpy as np
from flask import current_app
from sqlalchemy import and_, delete, or_, select
from sqlalchemy.dialects import postgresql, sqlite

from arena import criteria
from arena.extensions import db
from arena.infra.database import retry_on_lock, write_transaction
from arena.infra.secrets import derived_key
from arena.models import GenModel, PublishedFigures, Vote, utcnow

EPOCH = datetime(2000, 1, 1)
ALL = 0  # the key of figures that are not one campaign's or one model's
# The cut-off is this long before the period began, so that everything stamped before it has
# committed by the time a page counts it: a vote is stamped once its locks are held, and
# commits milliseconds later (arena.voting.votes._record); a skip or a report is stamped
# before its write waits for SQLite's writer (its busy timeout is 15 s, a locked write is
# tried up to five times), and counts from one period on if it commits later (they are
# counted afresh each period).
SETTLED = timedelta(minutes=2)


@dataclass(frozen=True)
class Published:
    as_of: datetime  # the cut-off: the figures count what was stamped before it
    payload: Any  # what ``compute`` returned, through JSON (tuples come back as lists)


def period_start(now: datetime | None = None) -> datetime:
    """The start of the period ``now`` (default: now, UTC) falls in."""
    now = now or utcnow()
    seconds = max(float(current_app.config["PUBLISHED_PERIOD_S"]), 1.0)
    elapsed = (now - EPOCH).total_seconds()
    return EPOCH + timedelta(seconds=elapsed - elapsed % seconds)


def cutoff(now: datetime | None = None) -> datetime:
    """What the public pages count in the current period: what was stamped before this."""
    return period_start(now) - SETTLED


SCREEN = "screen"  # the figures kind the period's screens store (arena.campaigns.period)


def _shown(kind: str, key: int, now: datetime | None, load, screened: bool
           ) -> tuple[datetime, Published | None]:
    """The start of the period whose figures the public pages show, and the figures ``kind``
    of ``key`` stored for it (None if none), in one statement. The period is the current
    one once the rollup timer has screened it for farms, the one before until then (else a
    farm's votes of the last period would show from the period's first request to the
    timer's first run in it); the current one without a timer that screens (``SCREEN_HOLDS``
    off, or no screen stored: a screen drops the one before it), or when not ``screened``."""
    start = period_start(now)
    earlier = period_start(start - timedelta(seconds=1))
    rows = db.session.execute(
        select(PublishedFigures.kind, PublishedFigures.period, PublishedFigures.as_of,
               PublishedFigures.payload).where(or_(
                   and_(PublishedFigures.kind == kind, PublishedFigures.key == key,
                        PublishedFigures.period.in_([start, earlier])),
                   and_(PublishedFigures.kind == SCREEN, PublishedFigures.key == ALL)))).all()
    screens = [r.period for r in rows if r.kind == SCREEN]
    if (screened and current_app.config["SCREEN_HOLDS"] and screens
            and max(screens) < start):
        start = earlier
    found = next((r for r in rows if r.kind == kind and r.period == start), None)
    return start, None if found is None else _loaded(found, load)


def figures(kind: str, key: int, compute: Callable[[datetime], Any],
            now: datetime | None = None, load: Callable[[Any], Any] = lambda p: p,
            screened: bool = True) -> Published:
    """The figures ``kind`` of ``key`` for the period the public pages show
    (:func:`_shown`; the current one when not ``screened``): ``load(compute(cutoff))``,
    worked out by the period's first request and stored as JSON (another worker's, when it
    stored them first: the same numbers, counted to the same cut-off), read by the rest.
    Older periods' figures of the same kind and key are dropped; figures ``load`` cannot
    read (TypeError, KeyError, ValueError: stored by a release that shaped them otherwise)
    are worked out again."""
    start, found = _shown(kind, key, now, load, screened)
    if found is not None and found is not _UNREADABLE:
        return found
    before = start - SETTLED
    payload = json.dumps(compute(before), separators=(",", ":"))

    def store():
        with write_transaction():
            if found is _UNREADABLE:
                db.session.execute(_these(kind, key, PublishedFigures.period == start))
            db.session.execute(_insert_absent(kind, key, start, before, payload))
            db.session.execute(_these(kind, key, PublishedFigures.period < start))

    retry_on_lock(store)
    stored = _stored(kind, key, start, load)
    if stored is None or stored is _UNREADABLE:
        # (the next period began meanwhile and dropped these, or an older release stored its
        # own again: the same cut-off, the same numbers)
        return Published(before, load(json.loads(payload)))
    return stored


def shown_cutoff(now: datetime | None = None) -> datetime:
    """The cut-off of the figures the public pages show now: the current period's once the
    rollup timer has screened it for farms, else the period before's (:func:`_shown`). The
    analysts' default: every vote counted in public figures before it."""
    return _shown("elo", ALL, now, lambda p: p, True)[0] - SETTLED


def stored(kind: str, key: int, now: datetime | None = None) -> Published | None:
    """The figures ``kind`` of ``key`` for the period the public pages show if some request
    (or the timer) has taken them, else None: for figures no page may pay for."""
    found = _shown(kind, key, now, lambda p: p, True)[1]
    return None if found is _UNREADABLE else found


def forget(_sender=None, **_details) -> None:
    """Drop every stored figure: the next request of each page takes them afresh (after a
    replay, an import or a restore that rewrote the votes, and in tests; wired to
    :data:`arena.events.log_replayed`)."""
    with write_transaction():
        db.session.execute(delete(PublishedFigures))


_UNREADABLE = Published(datetime.min, None)


def _stored(kind: str, key: int, start: datetime, load) -> Published | None:
    row = db.session.execute(
        select(PublishedFigures.as_of, PublishedFigures.payload).where(
            PublishedFigures.kind == kind, PublishedFigures.key == key,
            PublishedFigures.period == start)).first()
    return None if row is None else _loaded(row, load)


def _loaded(row, load) -> Published:
    """A stored row's figures through ``load``, or _UNREADABLE (another release's shape)."""
    try:
        return Published(row.as_of, load(json.loads(row.payload)))
    except (TypeError, KeyError, ValueError):
        return _UNREADABLE


def _these(kind: str, key: int, *conditions):
    return delete(PublishedFigures).where(PublishedFigures.kind == kind,
                                          PublishedFigures.key == key, *conditions)


def _insert_absent(kind: str, key: int, start: datetime, before: datetime, payload: str):
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    return (dialect.insert(PublishedFigures)
            .values(kind=kind, key=key, period=start, as_of=before, payload=payload)
            .on_conflict_do_nothing())


# -- the online Elo ---------------------------------------------------------------------------

@dataclass(frozen=True)
class EloFigures:
    """Every model's online Elo per criterion, replayed over the votes before ``as_of``:
    ``ratings[criterion]`` lists (model, rating, votes, wins), best first."""

    as_of: datetime
    ratings: dict[str, list[tuple[str, float, int, int]]]

    def online(self, criterion: str) -> dict[str, float]:
        return {name: rating for name, rating, _, _ in self.ratings.get(criterion, [])}

    def of(self, criterion: str, model: str) -> tuple[float, int, int] | None:
        """(rating, votes, wins) of ``model``, or None when it has no rating."""
        for name, rating, votes, wins in self.ratings.get(criterion, []):
            if name == model:
                return rating, votes, wins
        return None


def elo() -> EloFigures:
    """The online Elo the public pages show: the live path's update replayed over the votes
    counted in public figures before the period's cut-off, in an order keyed by
    ``SECRET_KEY`` (:func:`_elo_before`)."""
    published = figures("elo", ALL, _elo_before, load=_elo_ratings)
    return EloFigures(published.as_of, published.payload)


def _elo_ratings(payload: dict) -> dict[str, list[tuple[str, float, int, int]]]:
    return {criterion: [(str(name), float(rating), int(votes), int(wins))
                        for name, rating, votes, wins in payload[criterion]]
            for criterion in criteria.names()}


def elo_key() -> int:
    """The key of the public Elo's order: 64 bits of one derived from ``SECRET_KEY``."""
    key = derived_key(current_app.config["SECRET_KEY"], b"arena elo order")
    return int.from_bytes(key[:8], "big")


def _elo_before(before: datetime) -> dict[str, list]:
    """Every model's Elo over the votes counted in public figures before ``before``,
    averaged over ``ELO_PUBLIC_ORDERS`` orders that :func:`arena.ranking.elo.keyed_order`
    draws from their ids, not the order they came in: online Elo weighs its latest votes
    most (at ``ELO_K`` 4 a model's rating is mostly its last two hundred games), so in
    arrival order a period's votes that pass the screens move it further than the
    Bradley-Terry fit; keyed, they weigh as any others. One keyed order still leaves each
    rating ~15 points of noise from where the votes fell, enough to swap models the fit
    tells apart (and for a farm to tip them); the mean of 32 leaves ~3. The whole log each
    period, taken by the timer's run (benchmarks/rank_db.py)."""
    from arena.ranking.elo import keyed_mean
    from arena.voting.live_elo import elo_params

    names = dict(db.session.execute(select(GenModel.id, GenModel.name)).all())
    ids = np.array(sorted(names), dtype=np.int64)
    index = np.zeros(int(ids.max(initial=0)) + 1, dtype=np.int64)
    index[ids] = np.arange(ids.size)
    ratings: dict[str, list] = {}
    for criterion in criteria.names():
        found = db.session.execute(
            select(Vote.id, Vote.winner_model_id, Vote.loser_model_id)
            .where(Vote.criterion == criterion, Vote.is_validation.is_(False),
                   Vote.flags == 0, Vote.public_at < before,
                   Vote.winner_model_id != Vote.loser_model_id)).all()
        # (np.array over rows takes each Row for a sequence: 21 s for 2M, against 0.2)
        rows = np.fromiter(chain.from_iterable(found), dtype=np.int64,
                           count=3 * len(found)).reshape(-1, 3)
        winners, losers = index[rows[:, 1]], index[rows[:, 2]]
        rating = keyed_mean(rows[:, 0], winners, losers, ids.size, elo_key(),
                            current_app.config["ELO_PUBLIC_ORDERS"], params=elo_params())
        wins = np.bincount(winners, minlength=ids.size)
        votes = wins + np.bincount(losers, minlength=ids.size)
        table = [[names[int(m)], float(rating[i]), int(votes[i]), int(wins[i])]
                 for i, m in enumerate(ids)]
        ratings[criterion] = sorted(table, key=lambda row: (-row[1], row[0]))
    return ratings
