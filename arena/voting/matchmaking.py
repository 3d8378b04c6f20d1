"""Matchmaking: which comparisons a voter sees next, grouped into a session of one criterion.

The next comparison is one at the lowest ``level`` (the quarter of its target its votes have
reached), never one already issued to this voter, and within the level the least-served of a
random sample, ties broken at random. Both queries walk the
``ix_comparison_queue`` index from a random ``shuffle_key`` with an anti-join on the voter's
tasks, so a request costs a few index probes however large the campaign grows.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection
from functools import cache, partial
from typing import NamedTuple, TypeVar

import numpy as np
from flask import current_app
from sqlalchemy import (
    Integer,
    bindparam,
    case,
    func,
    insert,
    literal,
    or_,
    select,
    true,
    union,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload

from arena import criteria
from arena.errors import Conflict, Forbidden, NotFound
from arena.extensions import db
from arena.infra.database import param, retry_on_lock, write_transaction
from arena.models import (
    KEYS,
    STOPPED,
    Campaign,
    Comparison,
    Image,
    Task,
    Voter,
    VotingSession,
    utcnow,
)
from arena.voting.shown import ShownSession, shown_from_rows, shown_query
from arena.voting.shown import session as shown_session

# Sent (voter_id=, criterion=, pool=) when a voter has answered a gold pair: the campaigns
# feature checks, after the response has gone (arena.infra.deferred), whether this voter is
# due a new one for their next session (gold_check) and makes it (wired in create_app). Made
# per answered gold vote, never per session issued: sessions opened and left unanswered
# make nothing.
T = TypeVar("T")


class NoTasksAvailable(Conflict):
    """Nothing left to show this voter for the requested criterion (or any criterion)."""


class SessionNotFound(NotFound):
    pass


class NotYourSession(Forbidden):
    pass


# Matchmaking's statements are built once per criterion and kind (functools.cache) and run
# with the voter's values as parameters: building them cost more than running them. Their
# parameters: p_voter, p_pool, and p_floor, p_start, p_start2 for the pick (p_start for the
# gold pick's and the gold check's windows too).
_VOTER, _POOL = param("p_voter", Task.voter_id), param("p_pool", Comparison.pool)
_START = param("p_start", Comparison.shuffle_key)


@cache
def _candidates(criterion: str, validation: bool, walked: bool = True):
    """The comparisons of ``criterion`` (regular, or gold with ``validation``) in pool
    ``p_pool`` that voter ``p_voter`` may get: not paused, not issued to them yet (and not
    stopped, :func:`at_lowest_level` and :func:`_criteria_query`).
    ``walked``: for a query that stops after a few rows of an index walk, each candidate
    checked against the voter's tasks by a probe of their index. (PostgreSQL otherwise
    planned the check as an anti-join, and, for a voter with more tasks than its statistics
    expect, as a scan of all their tasks per candidate: a pick took 8.0 ms instead of 0.6
    for a voter with 3,000 tasks, and a session grew from 3.9 to 11 ms over one voter's
    1,000. OFFSET 0 keeps the subquery from being turned into a join.)"""
    issued = select(Task.id).where(Task.voter_id == _VOTER,
                                   Task.comparison_id == Comparison.id)
    issued = issued.limit(1).offset(0).exists() if walked else issued.exists()
    query = select(Comparison).where(
        Comparison.pool == _POOL,
        Comparison.criterion == criterion,
        Comparison.is_validation == validation,
        Comparison.paused.is_(False),
        ~issued,
    )
    if validation and criteria.get(criterion).caption:  # (its task always shows a caption)
        query = query.where(Comparison.prompt_id.is_not(None))
    return query


# what issuing a comparison needs of it: rows of these, not ORM objects (cheaper to load,
# and still readable once the write transaction has committed)
PICKED = (Comparison.id, Comparison.image_a_id, Comparison.image_b_id, Comparison.prompt_id)
# Within the lowest level, the least-served of a random sample ("the power of d choices"):
# two runs of SAMPLE_RUN comparisons (or as many as wanted, if more), each from a random
# point of the shuffle order. Simulated on 96 comparisons of target 26 picked in sessions
# of 3, the votes' standard deviation across comparisons averages 0.45-0.49 votes with runs
# of 12, against 0.40 for the exact least-served, 0.39-0.40 with runs of 24 and 0.62-0.66
# with runs of 6; one run alone of the same length is worse (a comparison after a wide gap
# in the keys starts many runs). Each candidate costs a probe of the voter's tasks, and
# more of them are read once the voter has met much of the level (_candidates).
SAMPLE_RUN = 12


def window(query, start, size: int):
    """Up to ``size`` rows of ``query`` (which selects ``Comparison.shuffle_key``) in
    ``shuffle_key`` order from ``start`` on, wrapping around to the smallest keys: all of
    ``query`` when it has no more than ``size`` rows. Each half walks the queue index from a
    point and reads at most ``size`` rows."""
    def run_of(condition):
        return (query.where(condition).order_by(Comparison.shuffle_key)
                .limit(size).subquery())

    halves = [select(run_of(condition), literal(part).label("part"))
              for part, condition in enumerate((Comparison.shuffle_key >= start,
                                                Comparison.shuffle_key < start))]
    wrapped = union_all(*halves).subquery()
    return (select(*(column for column in wrapped.c if column.key != "part"))
            .order_by(wrapped.c.part, wrapped.c.shuffle_key).limit(size))


def at_lowest_level(query, name: str, floor=None):
    """``query``'s rows at its lowest ``level`` above ``floor`` (``STOPPED`` if not given,
    never below it: a stopped pair is served to nobody): the level read by a WITH named
    ``name`` that walks the queue index to the first row. (Only the WITH tests it: beside
    the pick's level, SQLite walked twice as many rows.)"""
    above = query.where(Comparison.level > (STOPPED if floor is None else floor))
    lowest = (above.with_only_columns(Comparison.level).order_by(Comparison.level)
              .limit(1).cte(name))
    return query.where(Comparison.level == select(lowest.c.level).scalar_subquery())


def pick_statement(query, limit: int, start, sample: int, second_start):
    """The ``limit`` least-served (fewest votes for their target) among two runs of
    ``sample`` rows of ``query`` in ``shuffle_key`` order, as rows of ``PICKED`` and their
    ``level``: one from ``start`` on, wrapping around to the smallest keys (so it holds all
    of ``query`` when that has no more than ``sample`` rows), one from ``second_start`` on;
    ties go to the first after ``start``. One statement whose parts each walk the queue
    index from a point (a round trip saved whenever the rows after the start run out, which
    they often do once only a few pairs are left at the lowest level)."""
    served = (Comparison.votes_count * 1000 // Comparison.target_votes).label("served")
    query = query.with_only_columns(*PICKED, Comparison.level, Comparison.shuffle_key, served)
    first = window(query, start, sample).subquery()
    second = (query.where(Comparison.shuffle_key >= second_start)
              .order_by(Comparison.shuffle_key).limit(sample).subquery())
    drawn = union(select(first), select(second)).subquery()
    return (select(*(drawn.c[column.key] for column in PICKED), drawn.c.level)
            .order_by(drawn.c.served, drawn.c.shuffle_key < start, drawn.c.shuffle_key)
            .limit(limit))


@cache
def _pick_query(criterion: str, validation: bool, limit: int):
    """Up to ``limit`` candidates at the lowest level above ``p_floor``, the least-served of
    ``max(SAMPLE_RUN, limit)`` drawn from ``shuffle_key`` ``p_start`` on and as many from
    ``p_start2`` on (:func:`pick_statement`). One statement per limit (a session asks for
    two or three: its size, and its size and a run more)."""
    lowest = at_lowest_level(_candidates(criterion, validation), "lowest",
                             param("p_floor", Comparison.level))
    return pick_statement(lowest, limit, _START, max(SAMPLE_RUN, limit),
                          param("p_start2", Comparison.shuffle_key))


def next_comparisons(
    voter_id: int, criterion: str, count: int, rng: np.random.Generator,
    validation: bool = False, pool: int = 0, avoid_prompts: Collection[int | None] = (),
) -> list:
    """The ``count`` least-served comparisons of ``criterion`` (regular, or gold pairs with
    ``validation``) in the voter's ``pool`` not yet issued to them, as rows of ``PICKED``:
    from the lowest level first (a quarter of the target each, ``Comparison.level``), within
    it the least-served of a random sample (two runs of ``SAMPLE_RUN``; all of the level
    when it holds fewer), random among equals. Usually one statement: the lowest level is a
    WITH of the pick (both walk ix_comparison_queue).

    No two of them share a prompt, nor one with ``avoid_prompts`` (the session's gold
    pair): a caption met twice in a session gives its check question away. Only when too
    few prompts are left does one repeat, rather than a short session.
    """
    query = partial(_pick_query, criterion, validation)
    chosen, passed = _draw(query, voter_id, count, rng, pool, [], set(avoid_prompts) - {None})
    if len(chosen) < count:  # too few prompts left: the rows passed over first
        taken = {row.id for row in chosen}
        for row in passed:
            if len(chosen) < count and row.id not in taken:
                chosen.append(row)
                taken.add(row.id)
    if len(chosen) < count:
        chosen, _ = _draw(query, voter_id, count, rng, pool, chosen, None)
    return chosen


def _draw(query, voter_id: int, count: int, rng: np.random.Generator, pool: int,
          chosen: list, prompts: set | None) -> tuple[list, list]:
    """``chosen`` and picks of ``query(limit)`` added up to ``count``, level by level, passing
    over the rows of a prompt in ``prompts`` or already chosen (no such rule with None);
    and the rows passed over for their prompt, in the order they came."""
    chosen, passed = list(chosen), []
    floor = STOPPED
    while len(chosen) < count:
        wanted = count - len(chosen)
        # (as many more as were taken: a vote landing meanwhile, on PostgreSQL, can move
        # one of them up to this level, and it is not taken twice; and a run's worth more,
        # for rows passed over for their prompt)
        limit = wanted + len(chosen) + (SAMPLE_RUN if prompts is not None else 0)
        picked = db.session.execute(query(limit), {
            "p_voter": voter_id, "p_pool": pool, "p_floor": floor,
            "p_start": int(rng.integers(0, KEYS)),
            "p_start2": int(rng.integers(0, KEYS))}).all()
        if not picked:
            break
        taken = {row.id for row in chosen}
        for row in picked:
            if len(chosen) == count:
                break
            if row.id in taken:
                continue
            if prompts is not None and row.prompt_id in prompts:
                passed.append(row)
                continue
            chosen.append(row)
            taken.add(row.id)
            if prompts is not None and row.prompt_id is not None:
                prompts.add(row.prompt_id)
        # short: the level ran out, the next one up (its level as the pick read it: read
        # again, a vote landing in between could have moved it up and skipped a level)
        floor = picked[0].level
    return chosen, passed


def pick_validation(voter_id: int, criterion: str, rng, pool: int = 0):
    """A gold pair of ``criterion`` this voter has not met, picked by the ordinary pairs'
    rule (:func:`pick_statement`: the least-served of two runs of ``SAMPLE_RUN`` at the
    lowest level, from random points of the shuffle order), so that the two kinds are put
    in sessions alike: as often on average, and as evenly (see :data:`GOLD_SLACK`). A row of
    ``PICKED`` and the prompts its images were made for (``image_a_id_prompt``,
    ``image_b_id_prompt``). One statement, one row back; the work is bounded however large
    the supply (swapped pairs come to a fifth of the ordinary ones)."""
    return db.session.execute(_validation_query(criterion), {
        "p_voter": voter_id, "p_pool": pool, "p_start": int(rng.integers(0, KEYS)),
        "p_start2": int(rng.integers(0, KEYS))}).first()


GOLD_SAMPLE = 64  # gold and ordinary pairs the gold check holds against each other


def _gold_window(criterion: str, validation: bool, *columns):
    """``columns`` of the window (:func:`window`) of ``GOLD_SAMPLE`` candidates at the
    lowest level from ``p_start`` on."""
    candidates = at_lowest_level(_candidates(criterion, validation),
                                 "lowest_gold" if validation else "lowest")
    return window(candidates.with_only_columns(*columns, Comparison.shuffle_key), _START,
                  GOLD_SAMPLE)


@cache
def _validation_query(criterion: str):
    """:func:`pick_statement` over the gold pairs at their lowest level, with the prompts of
    the picked pair's images. Picking uniformly among the gold pairs put in the fewest
    sessions instead bunched them: simulated (benchmarks/gold_frequency.py, 32 prompts, a
    supply sized to the rate), the held-out accuracy of telling gold from ordinary by the
    exact count was 0.54-0.58 where chance stays under 0.53-0.54, for the ordinary pairs'
    counts spread wider around the same mean."""
    lowest = at_lowest_level(_candidates(criterion, True), "lowest_gold")
    picked = pick_statement(lowest, 1, _START, SAMPLE_RUN,
                            param("p_start2", Comparison.shuffle_key)).subquery()
    return select(*(picked.c[column.key] for column in PICKED),
                  *(select(Image.prompt_id).where(Image.id == picked.c[side])
                    .scalar_subquery().label(f"{side}_prompt")
                    for side in ("image_a_id", "image_b_id")))


class GoldCheck(NamedTuple):
    campaign_id: int  # of the freshest ordinary pair left to the voter
    ahead: bool  # gold left to them runs more than GOLD_SLACK ahead, or none is left


def gold_check(voter_id: int, criterion: str, pool: int = 0,
               rng: np.random.Generator | None = None) -> GoldCheck | None:
    """Whether the gold pairs left to this voter have been put in more sessions, on
    average, than the ordinary ones by more than ``GOLD_SLACK``, or none is left to them
    (both counted in sessions issued, so opening sessions without answering them inflates
    both alike), and the campaign a new pair would be made in; None when no ordinary pair
    is left to them, or it belongs to no campaign (see arena.campaigns.gold.replenish).
    Both sides are read as the picks read them: the window of ``GOLD_SAMPLE`` at the lowest
    level from one random point (:func:`window`), the whole level when it holds fewer.
    In a campaign that allocates actively or stops early, only "none is left" counts: its
    refresh keeps gold in step with the ordinary pairs (arena.campaigns.allocation) and
    sets their levels apart per model pair, and read by the levels, its supply grew 15% in
    24,000 votes and gold came to be served less (AUC 0.40 after 40,000 in
    benchmarks/allocation.py)."""
    rng = rng if rng is not None else np.random.default_rng()
    row = db.session.execute(_gold_check_query(criterion), {"p_voter": voter_id, "p_pool": pool,
                                            "p_start": int(rng.integers(0, KEYS))}).first()
    if not row.pairs or row.campaign_id is None:  # (none left; or pairs of no campaign)
        return None
    return GoldCheck(row.campaign_id, row.gold_issued is None or (
        not row.allocated and float(row.gold_issued) > float(row.issued) + GOLD_SLACK))


# How far, in sessions, gold pairs may run ahead of the ordinary ones on average before one
# more is made. A supply sized to the rate (arena.campaigns.gold.top_up) keeps the two level,
# and a pair once made is never taken back: with no slack, each window's sampling noise made
# pairs that were never needed, and the supply only grew. Simulated
# (benchmarks/gold_frequency.py: 32 prompts, 6,000 sessions), gold then came to be the
# pairs served least: the AUC of the count for gold against ordinary fell to 0.105 when a
# new pair was due above the freshest ordinary pair of a window (0.015 after 4,000 sessions
# before the windows, above the freshest of all), 0.36 after 4,000 above the ordinary mean
# and 0.44 above it by half a session, against 0.52 (chance: 0.47-0.54) with this slack.
GOLD_SLACK = 1.0


@cache
def _gold_check_query(criterion: str):
    """The ordinary pairs' mean of sessions issued in their window and the campaign of the
    freshest of them, and the gold pairs' mean in their own, in one statement (it runs after
    every gold answer: two statements were two round trips). Reading every pair left to the
    voter instead took 36.5 ms on SQLite with 26,676 ordinary pairs of the criterion
    (benchmarks/voting.py's 81,228 comparisons), 1.6 ms with 2,304."""
    regular = (_gold_window(criterion, False, Comparison.issued, Comparison.campaign_id)
               .cte("regular").prefix_with("MATERIALIZED"))  # (read twice, walked once)
    freshest = (select(regular.c.campaign_id).order_by(regular.c.issued)
                .limit(1).scalar_subquery())
    gold = _gold_window(criterion, True, Comparison.issued).subquery()
    gold_issued = select(func.avg(gold.c.issued)).scalar_subquery()
    allocated = (select(or_(Campaign.allocation != "balanced", Campaign.early_stop))
                 .where(Campaign.id == freshest).scalar_subquery())
    # (a count rather than HAVING without GROUP BY, which SQLite takes only from 3.39)
    return select(func.count().label("pairs"), func.avg(regular.c.issued).label("issued"),
                  freshest.label("campaign_id"), gold_issued.label("gold_issued"),
                  allocated.label("allocated"))


def _criteria_state(voter_id: int, pool: int) -> tuple[list[str], str | None]:
    """The criteria with work left for this voter, and the criterion of their last session,
    in one statement (an EXISTS per criterion walks ix_comparison_queue)."""
    names = criteria.names()
    row = db.session.execute(_criteria_query(names), {"p_voter": voter_id,
                                                      "p_pool": pool}).first()
    return [c for c in names if getattr(row, c)], row.last


@cache
def _criteria_query(names: tuple[str, ...]):
    last = (select(VotingSession.criterion).where(VotingSession.voter_id == _VOTER)
            .order_by(VotingSession.id.desc()).limit(1).scalar_subquery())
    return select(*(_candidates(c, validation=False).where(Comparison.level > STOPPED)
                    .exists().label(c) for c in names),
                  last.label("last"))


def available_criteria(voter_id: int, pool: int = 0) -> list[str]:
    return _criteria_state(voter_id, pool)[0]


def choose_criterion(voter: Voter, rng: np.random.Generator) -> str:
    """A random criterion with work left for this voter, preferring a change from the last."""
    options, last = _criteria_state(voter.id, voter.pool or 0)
    if not options:
        raise NoTasksAvailable("no comparisons left for this voter")
    if len(options) > 1 and last in options:
        options.remove(last)
    return options[int(rng.integers(len(options)))]


ISSUE_ATTEMPTS = 6  # picks per session when the voter's own concurrent sessions took them
RETRY_PAUSE = 0.004  # seconds, at most, before the first pick again (times the attempt)
EVERY = 2**31 - 1  # (of a session's tasks: all of them shown at once)


def start_session(
    voter: Voter, rng: np.random.Generator, criterion: str | None = None, *,
    shown: bool = False,
) -> VotingSession:
    """Issue a session (:func:`_issue_session`) and return it loaded with its tasks, their
    comparisons, captions and images, in one more statement."""
    return _loaded_session(_issue_session(voter, rng, criterion, EVERY if shown else 0)[0])


def issue_session(voter: Voter, rng: np.random.Generator, criterion: str | None = None, *,
                  shown: bool = False) -> str:
    """Issue a session (:func:`_issue_session`): only its public id comes back, nothing is
    read again (a page shows it at its own address; the API reads it as
    :func:`arena.voting.shown.session` gives it)."""
    return _issue_session(voter, rng, criterion, EVERY if shown else 0)[1]


def issue_shown_session(voter: Voter, rng: np.random.Generator,
                        criterion: str | None = None) -> ShownSession:
    """Issue a session whose tasks all count as on the voter's screen from now (the JSON
    API's) and return it as :func:`arena.voting.shown.session` reads it: on PostgreSQL
    returned by the statement that writes it, elsewhere read in the write transaction,
    before its commit (after the commit it needed a connection and a transaction of its
    own; benchmarks/request_cost.py)."""
    return _issue_session(voter, rng, criterion, EVERY, read_back=lambda session_id, made: (
        made or shown_session(session_id)))[2]


def _issue_session(voter: Voter, rng: np.random.Generator, criterion: str | None,
                   shown: int, read_back: Callable[[int, ShownSession | None], object]
                   | None = None) -> tuple:
    """Issue a session of up to ``TASKS_PER_SESSION`` tasks of one criterion and commit it.
    Its first ``shown`` tasks (``EVERY``: all) count as on the voter's screen from now: an
    API client gets them all at once (see arena.voting.tasks.present), a page the first.

    One task may be a hidden validation pair (with probability ``VALIDATION_RATE``) at a random
    position; left/right order is random per task. The comparisons are chosen before the
    write transaction, which only inserts the session and its tasks and counts them issued:
    two sessions of one voter racing for the same comparison meet the unique (voter,
    comparison) constraint, and the loser picks again. Returns the session's id, its public
    id and what ``read_back`` (called in the write transaction with the session's id and,
    on PostgreSQL, the session as :func:`arena.voting.shown.session` reads it, as its write
    returned it; else None) returned, or None.

    Raises
    ------
    Invalid
        If ``criterion`` is not one of the app's criteria.
    NoTasksAvailable
        If the voter has answered everything there is.
    """
    if criterion is not None:
        criteria.check(criterion)
    voter_id, pool = voter.id, voter.pool or 0
    criterion = criterion or choose_criterion(voter, rng)
    cfg = current_app.config
    with_gold = cfg["TASKS_PER_SESSION"] > 1 and rng.random() < cfg["VALIDATION_RATE"]
    for attempt in range(ISSUE_ATTEMPTS):
        items = _pick_items(voter_id, criterion, with_gold, rng, pool)
        issue = partial(_issue, voter_id, criterion, items, rng, shown,
                        utcnow() if shown else None, read_back)
        try:
            return retry_on_lock(issue)
        except IntegrityError:
            # The same voter started two sessions at once and both picked one comparison;
            # the unique (voter, comparison) constraint refused the second: pick again,
            # after a random pause that grows, so sessions racing in step fall out of it
            # (picking again at once met the same rival: one race test in ten ran out of
            # attempts once a session took one pair per prompt).
            time.sleep(float(rng.random()) * RETRY_PAUSE * (attempt + 1))
    raise NoTasksAvailable("could not issue a session, please retry")


def _issue(voter_id: int, criterion: str, items: list, rng: np.random.Generator,
           shown: int, shown_at, read_back: Callable | None) -> tuple:
    """Write the session and its tasks, the first ``shown`` shown from ``shown_at``, and
    count the comparisons issued (one statement on PostgreSQL, which returns the session as
    :func:`arena.voting.shown.session` reads it; three elsewhere: :func:`_issue_statements`);
    returns the session's id, its public id and, with ``read_back``, what it returned of the
    session before the commit (else None)."""
    sides = []
    for comparison in items:
        left, right = comparison.image_a_id, comparison.image_b_id
        sides.append((right, left) if rng.random() < 0.5 else (left, right))
    public_id = secrets.token_hex(12)
    values = {"p_public_id": public_id, "p_voter": voter_id,
              "p_criterion": criterion, "p_now": utcnow(), "p_shown_at": shown_at,
              "p_ids": [c.id for c in items]}
    made = None
    with write_transaction():
        if db.session.get_bind().dialect.name == "postgresql":
            (combined,) = _issue_statements(combined=True, count=len(items),
                                            captioned=criteria.captioned())
            values.update(p_positions=list(range(len(items))),
                          p_lefts=[left for left, _ in sides],
                          p_rights=[right for _, right in sides], p_shown=shown)
            made = shown_from_rows(db.session.execute(combined, values).all())
            session_id = made.id
        else:
            insert_session, count_issued, insert_tasks = _issue_statements(
                combined=False, captioned=())
            session_id = db.session.execute(insert_session, values).lastrowid
            db.session.execute(count_issued, [{"p_id": comparison.id} for comparison in items])
            db.session.execute(insert_tasks, [
                {**values, "p_session": session_id, "p_comparison": comparison.id,
                 "p_position": position, "p_left": left, "p_right": right,
                 "p_shown_at": shown_at if position < shown else None}
                for position, (comparison, (left, right))
                in enumerate(zip(items, sides, strict=True))])
        return session_id, public_id, read_back(session_id, made) if read_back else None


@cache
def _issue_statements(*, combined: bool, captioned: tuple[str, ...], count: int = 0) -> tuple:
    """The session inserted, its comparisons counted issued once more, its tasks inserted.
    ``combined`` (PostgreSQL): one statement, the session, the count and the tasks as
    data-modifying WITH clauses, the tasks unnested from arrays, that returns the session
    as :func:`arena.voting.shown.session` reads it (one round trip instead of four). The
    same rows either way. Parameters: p_public_id, p_voter, p_criterion, p_now and
    p_shown_at; otherwise (SQLite) the count per comparison (p_id) and per task p_session,
    p_comparison, p_position, p_left, p_right and p_shown_at, each run as one
    ``executemany``; with ``combined`` the arrays
    p_ids (the comparisons in order), p_positions, p_lefts and p_rights of ``count``
    items, and p_shown (the tasks at a lower position are shown from p_shown_at, the others
    not yet). (The count written into it lets PostgreSQL keep one plan for it: planning
    it afresh took 0.9 ms, with the arrays' lengths unknown its kept plan looked costlier.)"""
    session, comparison, task = (VotingSession.__table__, Comparison.__table__.c,
                                 Task.__table__.c)
    insert_session = insert(session).values(
        public_id=param("p_public_id", session.c.public_id), voter_id=_VOTER,
        criterion=param("p_criterion", session.c.criterion),
        created_at=param("p_now", session.c.created_at))
    count_issued = update(Comparison.__table__).values(issued=comparison.issued + 1)
    issued_at, shown_at = param("p_now", task.issued_at), param("p_shown_at", task.shown_at)
    if not combined:
        count_issued = count_issued.where(comparison.id == param("p_id", comparison.id))
        return (insert_session, count_issued, insert(Task.__table__).values(
            session_id=param("p_session", task.session_id), voter_id=_VOTER,
            comparison_id=param("p_comparison", task.comparison_id),
            position=param("p_position", task.position),
            left_image_id=param("p_left", task.left_image_id),
            right_image_id=param("p_right", task.right_image_id),
            issued_at=issued_at, shown_at=shown_at))
    new_session = insert_session.returning(
        session.c.id, session.c.public_id, session.c.voter_id, session.c.criterion
    ).cte("new_session")
    unnested = func.unnest(*(bindparam(name, type_=ARRAY(Integer)) for name in (
        "p_ids", "p_positions", "p_lefts", "p_rights"))).table_valued(
        "comparison_id", "position", "left_image_id", "right_image_id").render_derived()
    rows = select(unnested).limit(count).cte("rows")
    counted = (count_issued.where(comparison.id.in_(select(rows.c.comparison_id)))
               .returning(literal(1)).cte("counted"))
    columns = ("session_id", "voter_id", "comparison_id", "position", "left_image_id",
               "right_image_id", "issued_at", "shown_at")
    shown_first = case((rows.c.position < bindparam("p_shown", type_=Integer), shown_at))
    tasks = select(new_session.c.id, _VOTER, rows.c.comparison_id, rows.c.position,
                   rows.c.left_image_id, rows.c.right_image_id, issued_at, shown_first
                   ).select_from(new_session.join(rows, true()))
    made = (insert(Task.__table__).from_select(columns, tasks)
            .returning(task.id, task.position, task.comparison_id, task.left_image_id,
                       task.right_image_id, task.shown_at, task.read_confirmed_at,
                       task.answered_at).cte("made"))
    return (shown_query(new_session, made, captioned).add_cte(counted),)


def _loaded_session(session_id: int) -> VotingSession:
    """The session with its tasks, their comparisons and captions and both images of each,
    as ORM objects, in one statement."""
    return db.session.scalars(_loaded_session_query(), {"p_session": session_id}
                              ).unique().one()


@cache
def _loaded_session_query():
    return (select(VotingSession)
            .where(VotingSession.id == param("p_session", VotingSession.id))
            .options(joinedload(VotingSession.tasks).options(
                joinedload(Task.comparison).joinedload(Comparison.prompt),
                joinedload(Task.left_image), joinedload(Task.right_image))))


def _pick_items(voter_id: int, criterion: str, with_gold: bool,
                rng: np.random.Generator, pool: int) -> list:
    """The session's comparisons (rows of ``PICKED``) in the voter's pool: the least-served
    regular ones, and with ``with_gold`` one gold pair at a random position. Raises
    NoTasksAvailable when no regular one is left."""
    size = current_app.config["TASKS_PER_SESSION"]
    validation = pick_validation(voter_id, criterion, rng, pool) if with_gold else None
    # the regular pairs pass over the gold pair's prompt and those its images were made for
    # (a swapped pair's wrong image, met under its own caption, would give the answer away)
    avoid = (validation.prompt_id, validation.image_a_id_prompt,
             validation.image_b_id_prompt) if validation else ()
    items = next_comparisons(voter_id, criterion, size - (validation is not None), rng,
                             pool=pool, avoid_prompts=avoid)
    if not items:
        raise NoTasksAvailable(f"no {criterion} comparisons left for this voter")
    if validation is not None:
        items.insert(int(rng.integers(len(items) + 1)), validation)
    return items
