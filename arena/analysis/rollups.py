"""Rankings and public counts flat in the vote log: each criterion's votes summed up to a
watermark.

A ranking of every counted vote, with intervals clustered by voter and prompt, needs the
pooled counts per ordered model pair, the number of voters and of prompts and their cross
products (:class:`arena.ranking.PairMoments`): a few numbers per pair of pairs, however many
votes. :func:`refresh` adds the votes stamped since the watermark (``RankingRollup.through``)
to them, a batch at a time, keeping each voter's and each prompt's counts
(``RollupVoterCell``, ``RollupPromptCell``) to subtract when their next votes change their
cross products. :func:`moments` is what a ranking
reads: the rollup plus the votes since its watermark (the same numbers as the whole log).
The same batches keep the public counts: each comparison's votes (``RollupComparison``),
and each campaign voter's votes and gold answers (``RollupCampaignVoter``), read by
:func:`comparison_votes` and :func:`campaign_voters` with the votes past the watermark in
one statement.

The watermark moves to the public pages' cut-off (:func:`arena.analysis.published.cutoff`),
so what they show reads the rollup alone; the votes after it are read from the log. A
refresh runs as a command (``arena votes rollup``, from a timer), never in a vote's
transaction; it is idempotent and safe to run twice at once (each batch locks its
criterion's row and starts from the watermark it finds). Without a rollup, or for slices,
margins, other clusters and the bootstrap, rankings read the log as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import (
    DateTime,
    case,
    delete,
    func,
    literal,
    select,
    true,
    union_all,
)

from arena import criteria
from arena.analysis import published, slices
from arena.analysis.rollup_state import State, sql_dialect, window
from arena.analysis.tallies import Slice, vote_filter
from arena.extensions import db
from arena.infra.database import retry_on_lock, write_transaction
from arena.models import (
    Comparison,
    RankingRollup,
    RollupCampaignVoter,
    RollupComparison,
    RollupPromptCell,
    RollupVoterCell,
    Vote,
    utcnow,
)
from arena.ranking import PairCounts, PairMoments

# per transaction: memory bounded (about 440 MB for the process), the lock held under half a
# minute; every batch reads and writes each prompt's counts whatever its size, so 500,000
# built a 2M log's rollup 2.7 times as fast as 50,000 (benchmarks/scale.py's log)
BATCH_VOTES = 500_000
EPOCH = datetime(1970, 1, 1)


def _counted(criterion: str, row: RankingRollup, before: datetime | None,
             last_id: int | None = None, way: int = 0):
    """The counted votes of :func:`_window`, grouped per (voter, winner, loser), or per
    (prompt, winner, loser) for ``way=1`` (-1 for a comparison without a prompt)."""
    unit = (Vote.voter_id if way == 0 else func.coalesce(Comparison.prompt_id, -1)).label("unit")
    counted = (vote_filter(criterion, Slice(), join_prompt=way == 1).add_columns(unit)
               .where(*window(criterion, row, before, last_id),
                      Vote.winner_model_id != Vote.loser_model_id)).subquery()
    keys = (counted.c.unit, counted.c.winner_model_id, counted.c.loser_model_id)
    return select(*keys, func.count().label("votes")).group_by(*keys)


def _new_votes(criterion: str, row: RankingRollup, before: datetime | None,
               last_id: int | None = None, way: int = 0) -> np.ndarray:
    """:func:`_counted` as (voter or prompt, winner, loser, count) rows."""
    return _array(db.session.execute(_counted(criterion, row, before, last_id, way)).all())


CELLS = (RollupVoterCell, RollupPromptCell)  # each voter's, each prompt's counts


def _rolled_up(criterion: str, units: np.ndarray, way: int = 0) -> np.ndarray:
    """The rolled-up counts of ``units`` (voters, or prompts for ``way=1``): (unit, winner,
    loser, count) rows."""
    table = CELLS[way]
    unit = table.voter_id if way == 0 else table.prompt_id
    rows = []
    ids = np.unique(units).tolist()
    for start in range(0, len(ids), 5_000):  # (SQLite's limit on parameters)
        rows += db.session.execute(
            select(unit, table.winner_model_id, table.loser_model_id, table.votes)
            .where(table.criterion == criterion, unit.in_(ids[start:start + 5_000]))).all()
    return _array(rows)


def _state(criterion: str, row: RankingRollup, before: datetime | None,
           last_id: int | None = None) -> tuple[State, int]:
    """``row``'s state with the votes of :func:`_window` added, and how many they are."""
    new = [_new_votes(criterion, row, before, last_id, way) for way in (0, 1)]
    old = [_rolled_up(criterion, new[way][:, 0], way) for way in (0, 1)]
    return State.load(row).added(new[0], old[0], new[1], old[1]), int(new[0][:, 3].sum())


def _array(rows) -> np.ndarray:
    # (as tuples: numpy probes a Row for array interfaces by name, a failed lookup each)
    return np.array([tuple(row) for row in rows], dtype=np.int64).reshape(len(rows), 4)


def moments(criterion: str, ids: list[int], as_of: datetime | None = None
            ) -> PairMoments | None:
    """Every counted vote of ``criterion`` stamped before ``as_of`` (all of them when None)
    as :class:`PairMoments` over the models ``ids``, from the rollup and the votes since its
    watermark; None when there is no rollup, or it runs past ``as_of``."""
    for _ in range(3):
        row = db.session.get(RankingRollup, criterion, populate_existing=True)
        if row is None or (as_of is not None and row.through > as_of):
            return None
        through = row.through
        state, _ = _state(criterion, row, as_of)
        # a refresh that committed meanwhile would have moved what the last reads saw
        again = db.session.execute(select(RankingRollup.through)
                                   .where(RankingRollup.criterion == criterion)).scalar()
        if again == through:
            return state.moments(ids)
    return None


def voter_counts(criterion: str, ids: list[int], as_of: datetime
                 ) -> tuple[np.ndarray, PairCounts] | None:
    """Every counted vote of ``criterion`` stamped before ``as_of`` per voter, from the
    voters' rolled-up counts, when the rollup stops exactly there (the timer's cut-off) and
    no vote it lacks was stamped before it: (the voter ids, the counts over the models
    ``ids``, units numbered as the voter ids are). None otherwise (read the log)."""
    row = db.session.get(RankingRollup, criterion, populate_existing=True)
    if row is None or row.through != as_of:
        return None
    late = db.session.execute(select(Vote.id).where(
        Vote.criterion == criterion, Vote.id > row.last_vote_id,
        Vote.public_at < row.through).limit(1)).first()
    if late is not None:
        return None
    rows = _array(db.session.execute(
        select(RollupVoterCell.voter_id, RollupVoterCell.winner_model_id,
               RollupVoterCell.loser_model_id, RollupVoterCell.votes)
        .where(RollupVoterCell.criterion == criterion, RollupVoterCell.votes > 0)).all())
    index = np.full(max(ids, default=0) + 1, -1)
    index[ids] = np.arange(len(ids))
    known = (rows[:, 1] < index.size) & (rows[:, 2] < index.size)
    rows = rows[known]
    rows = rows[(index[rows[:, 1]] >= 0) & (index[rows[:, 2]] >= 0)]
    voters, unit = np.unique(rows[:, 0], return_inverse=True)
    return voters, PairCounts.from_rows(len(ids), unit.ravel(), index[rows[:, 1]],
                                        index[rows[:, 2]], rows[:, 3])


def reset() -> None:
    """Drop every rollup (not committed): the next :func:`refresh` builds them again from the
    log. For votes whose flags changed after they were rolled up (a voter held out)."""
    slices.reset()
    for table in (RollupVoterCell, RollupPromptCell, RollupComparison, RollupCampaignVoter,
                  RankingRollup):
        db.session.execute(delete(table))


def pending(now: datetime | None = None) -> int:
    """How many votes (of any kind) the next :func:`refresh` reads, about."""
    target = published.cutoff(now)
    marks = dict(db.session.execute(
        select(RankingRollup.criterion, RankingRollup.through)).all())
    return sum(db.session.execute(select(func.count()).where(
        Vote.criterion == criterion, Vote.public_at >= marks.get(criterion, EPOCH),
        Vote.public_at < target)).scalar() for criterion in criteria.names())


@dataclass(frozen=True)
class Refreshed:
    criterion: str
    votes: int  # added by this refresh
    through: datetime


def refresh(now: datetime | None = None, batch: int = BATCH_VOTES,
            progress: Callable[[str, int], None] | None = None) -> list[Refreshed]:
    """Bring every criterion's rollup to the public pages' current cut-off, ``batch``
    votes per transaction; ``progress(criterion, votes)`` after each."""
    target = published.cutoff(now)
    done = []
    for criterion in criteria.names():
        added = 0
        while True:
            step = retry_on_lock(lambda c=criterion: _advance(c, target, batch))
            if step is None:
                break
            added += step
            if progress:
                progress(criterion, step)
        row = db.session.get(RankingRollup, criterion, populate_existing=True)
        done.append(Refreshed(criterion, added, row.through if row else target))
    return done


def _advance(criterion: str, target: datetime, batch: int) -> int | None:
    """Add the next batch of votes before ``target`` to ``criterion``'s rollup in one
    transaction; the number added, or None when the rollup has reached ``target``."""
    with write_transaction():
        dialect = sql_dialect()
        db.session.execute(dialect.insert(RankingRollup).values(
            criterion=criterion, through=EPOCH, last_vote_id=0, voters=0,
            refreshed_at=utcnow())
            .on_conflict_do_nothing())
        row = db.session.execute(select(RankingRollup).where(
            RankingRollup.criterion == criterion).with_for_update()
            .execution_options(populate_existing=True)).scalar_one()
        if row.through >= target:
            return None
        end = _batch_end(criterion, row.through, target, batch)
        # (with count() beside it, max() is not planned as a scan down the primary key)
        last, _ = db.session.execute(select(func.max(Vote.id), func.count())
                                     .where(*window(criterion, row, end))).one()
        last = last or row.last_vote_id
        state, added = _state(criterion, row, end, last)
        for way in (0, 1):
            _store_cells(dialect, criterion, row, end, last, way)
        _store_counts(dialect, criterion, row, end, last)
        slices.advance(criterion, row, end, last)
        row.moments, row.voters = state.dump(), state.voters
        row.through, row.refreshed_at = end, utcnow()
        row.last_vote_id = max(last, row.last_vote_id)
        return added


def _batch_end(criterion: str, since: datetime, target: datetime, batch: int) -> datetime:
    """The stamp ``batch`` votes after ``since`` (exclusive end of the batch), or ``target``."""
    stamps = (select(Vote.public_at)
              .where(Vote.criterion == criterion, Vote.public_at >= since,
                     Vote.public_at < target)
              .order_by(Vote.public_at).offset(batch).limit(1))
    end = db.session.execute(stamps).scalar()
    if end is None:
        return target
    if end == since:  # more than a batch share one stamp: take them all
        end = db.session.execute(select(func.min(Vote.public_at)).where(
            Vote.criterion == criterion, Vote.public_at > since,
            Vote.public_at < target)).scalar() or target
    return end


def _store_cells(dialect, criterion: str, row: RankingRollup, end: datetime,
                 last: int, way: int) -> None:
    """Add the batch's votes to their voters' (``way=0``) or prompts' (1) rolled-up counts,
    in the database (the same votes as :func:`_new_votes` read: up to the newest one it
    saw)."""
    table, unit = CELLS[way], ("voter_id", "prompt_id")[way]
    new = _counted(criterion, row, end, last, way).subquery()
    statement = dialect.insert(table).from_select(
        ["criterion", unit, "winner_model_id", "loser_model_id", "votes"],
        select(literal(criterion), new.c.unit, new.c.winner_model_id,
               new.c.loser_model_id, new.c.votes).where(true()))
    db.session.execute(statement.on_conflict_do_update(
        index_elements=["criterion", unit, "winner_model_id", "loser_model_id"],
        set_={"votes": table.votes + statement.excluded.votes}))


def _store_counts(dialect, criterion: str, row: RankingRollup, end: datetime,
                  last: int) -> None:
    """Add the batch's votes to the public counts: each comparison's votes that fill its
    quota, and each campaign voter's votes, gold answers and failed ones."""
    votes = window(criterion, row, end, last)
    quota = dialect.insert(RollupComparison).from_select(
        ["criterion", "comparison_id", "votes", "first_votes"],
        select(literal(criterion), Vote.comparison_id, func.count(), first_votes())
        .join(Comparison, Comparison.id == Vote.comparison_id)
        .where(*votes, Vote.flags == 0).group_by(Vote.comparison_id))
    db.session.execute(quota.on_conflict_do_update(
        index_elements=["criterion", "comparison_id"],
        set_={"votes": RollupComparison.votes + quota.excluded.votes,
              "first_votes": RollupComparison.first_votes + quota.excluded.first_votes}))
    people = dialect.insert(RollupCampaignVoter).from_select(
        ["criterion", "campaign_id", "voter_id", "votes", "gold", "failed"],
        select(literal(criterion), Comparison.campaign_id, Vote.voter_id, *_answers())
        .join(Comparison, Comparison.id == Vote.comparison_id)
        .where(*votes, Comparison.campaign_id.is_not(None))
        .group_by(Comparison.campaign_id, Vote.voter_id))
    db.session.execute(people.on_conflict_do_update(
        index_elements=["criterion", "campaign_id", "voter_id"],
        set_={name: getattr(RollupCampaignVoter, name) + getattr(people.excluded, name)
              for name in ("votes", "gold", "failed")}))


def first_votes():
    """A group's votes for their comparison's first image (Comparison joined)."""
    return func.sum(case((Vote.winner_image_id == Comparison.image_a_id, 1), else_=0))


def _answers() -> tuple:
    """A group's votes, of them on gold pairs, and of those failed: as aggregate columns."""
    failed = Vote.is_validation & Vote.correct.is_(False)
    return (func.count(), func.sum(case((Vote.is_validation, 1), else_=0)),
            func.sum(case((failed, 1), else_=0)))


# -- what the public counts read: the rollup and the votes past it, in one statement ----------

def _not_rolled_up(criterion: str, before: datetime, waiting: bool = False) -> list[list]:
    """WHERE clauses on Vote, two sets for two SELECTs: the votes of ``criterion`` counted
    in public figures before ``before`` that its rollup does not hold (all of them when it
    has no rollup that stops at or before ``before``), and with ``waiting`` a third: those
    waiting for their voters' trust (the live figures). The watermark is read by the same
    statement as the rollup, so a refresh that commits meanwhile is seen whole or not at
    all."""
    def mark(column):
        return select(column).where(RankingRollup.criterion == criterion,
                                    RankingRollup.through <= before).scalar_subquery()

    through = mark(RankingRollup.through)
    since = [Vote.criterion == criterion, Vote.public_at < before,
             Vote.public_at >= func.coalesce(through, literal(EPOCH, DateTime()))]
    late = [Vote.criterion == criterion, Vote.id > mark(RankingRollup.last_vote_id),
            Vote.public_at < through]
    return [since, late] + ([[Vote.criterion == criterion, Vote.public_at.is_(None)]]
                            if waiting else [])


def _usable(criterion, before: datetime):
    """Rollup rows of ``criterion`` (a column) that stop at or before ``before``."""
    return criterion.in_(select(RankingRollup.criterion)
                         .where(RankingRollup.through <= before))


def votes_column(before: datetime | None, *among):
    """A comparison's counted votes (``Comparison.votes_count``), or those of them counted
    in public figures before ``before`` (from the rollup and the log past it): (the column,
    a function that adds its join to a query on ``Comparison``). ``among``: WHERE clauses on
    ``Comparison`` that keep the comparisons queried (the rest are read and grouped for
    nothing)."""
    if before is None:
        return Comparison.votes_count, lambda query: query
    counted = comparison_votes(before, *among)
    return (func.coalesce(counted.c.n, 0),
            lambda query: query.outerjoin(counted, counted.c.comparison_id == Comparison.id))


def comparison_votes(before: datetime, *among):
    """Per comparison (``comparison_id``, ``n``), a subquery: its votes that fill its quota,
    stamped before ``before``. ``among``: WHERE clauses on Comparison."""
    parts = [select(Vote.comparison_id.label("comparison_id"), func.count().label("n"))
             .join(Comparison, Comparison.id == Vote.comparison_id)
             .where(Vote.flags == 0, *clauses, *among).group_by(Vote.comparison_id)
             for criterion in criteria.names() for clauses in _not_rolled_up(criterion, before)]
    parts.append(select(RollupComparison.comparison_id, RollupComparison.votes)
                 .join(Comparison, Comparison.id == RollupComparison.comparison_id)
                 .where(_usable(RollupComparison.criterion, before), *among))
    both = union_all(*parts).subquery()
    return (select(both.c.comparison_id, func.sum(both.c.n).label("n"))
            .group_by(both.c.comparison_id).subquery())


def campaign_voters(campaign_id: int, before: datetime, waiting: bool = False):
    """Per voter of the campaign (``voter_id``, ``votes``, ``gold``, ``failed``), a
    subquery: their votes counted in public figures before ``before`` (with ``waiting``,
    those waiting for their voters' trust too: the live figures), of them on gold pairs and
    failed."""
    parts = [select(Vote.voter_id.label("voter_id"), *_answers())
             .join(Comparison, Comparison.id == Vote.comparison_id)
             .where(Comparison.campaign_id == campaign_id, *clauses).group_by(Vote.voter_id)
             for criterion in criteria.names()
             for clauses in _not_rolled_up(criterion, before, waiting)]
    parts.append(select(RollupCampaignVoter.voter_id, RollupCampaignVoter.votes,
                        RollupCampaignVoter.gold, RollupCampaignVoter.failed)
                 .where(RollupCampaignVoter.campaign_id == campaign_id,
                        _usable(RollupCampaignVoter.criterion, before)))
    both = union_all(*parts).subquery()
    columns = both.c
    return (select(columns.voter_id, func.sum(columns[1]).label("votes"),
                   func.sum(columns[2]).label("gold"), func.sum(columns[3]).label("failed"))
            .group_by(columns.voter_id).subquery())
