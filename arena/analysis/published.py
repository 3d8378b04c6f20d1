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
from typing import Any

from flask import current_app
from sqlalchemy import and_, delete, or_, select
from sqlalchemy.dialects import postgresql, sqlite

from arena import criteria
from arena.extensions import db
from arena.infra.database import retry_on_lock, write_transaction
from arena.models import GenModel, PublishedFigures, utcnow

EPOCH = datetime(2000, 1, 1)
ALL = 0  # the key of figures that are not one campaign's or one model's
# The cut-off is this long before the period began, so that everything stamped before it has
# committed by the time a page counts it: a vote is stamped once its locks are held, and
# commits milliseconds later (arena.voting.votes._record); a skip or a report is stamped
# before its write waits for SQLite's writer (its busy timeout is 15 s, a locked write is
# tried up to five times), and counts from one period on if it commits later (they are
# counted afresh each period; the online Elo alone carries on from the last period's).
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
    that count, stamped before the period's cut-off, in the order they were stored (within
    each period since the last figures: see :func:`_elo_before`)."""
    published = figures("elo", ALL, _elo_before, load=_elo_ratings)
    return EloFigures(published.as_of, published.payload)


def _elo_ratings(payload: dict) -> dict[str, list[tuple[str, float, int, int]]]:
    return {criterion: [(str(name), float(rating), int(votes), int(wins))
                        for name, rating, votes, wins in payload[criterion]]
            for criterion in criteria.names()}


def _elo_before(before: datetime) -> dict[str, list]:
    """Every model's Elo over the votes before ``before``: the last figures stored (an
    earlier period's) carried on over the votes since their cut-off, or, without any, the
    whole log replayed (2M votes on SQLite: 2.2 s, against 0.23 s for an hour of 20,000;
    benchmarks/rank_db.py)."""
    from arena.voting.votes import elo_params, replayed

    names = dict(db.session.execute(select(GenModel.id, GenModel.name)).all())
    since, last = _last_elo(before)
    ratings: dict[str, list] = {}
    for criterion in criteria.names():
        start = {m: last[criterion][name][1:] for m, name in names.items()
                 if name in last.get(criterion, {})}
        state = replayed(criterion, list(names), elo_params(), before=before, since=since,
                         start=start, public=True)
        rows = [[names[m], rating, votes, wins] for m, (rating, votes, wins) in state.items()]
        ratings[criterion] = sorted(rows, key=lambda row: (-row[1], row[0]))
    return ratings


def _last_elo(before: datetime) -> tuple[datetime | None, dict[str, dict[str, tuple]]]:
    """The latest Elo figures stored with a cut-off not after ``before``: (their cut-off,
    {criterion: {model: row}}), or (None, {}) when there are none (or none readable)."""
    row = db.session.execute(
        select(PublishedFigures.as_of, PublishedFigures.payload)
        .where(PublishedFigures.kind == "elo", PublishedFigures.key == ALL,
               PublishedFigures.as_of <= before)
        .order_by(PublishedFigures.as_of.desc()).limit(1)).first()
    last = _UNREADABLE if row is None else _loaded(row, _elo_ratings)
    if last is _UNREADABLE:
        return None, {}
    return last.as_of, {criterion: {r[0]: r for r in rows}
                        for criterion, rows in last.payload.items()}
