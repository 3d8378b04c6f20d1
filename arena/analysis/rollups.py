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

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from scipy import sparse
from sqlalchemy import (
    DateTime,
    and_,
    case,
    delete,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects import postgresql, sqlite

from arena.analysis import published, slices
from arena.analysis.tallies import Slice, vote_filter
from arena.config import CRITERIA
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
from arena.ranking.moments import cross_products

# per transaction: memory bounded (about 440 MB for the process), the lock held under half a
# minute; every batch reads and writes each prompt's counts whatever its size, so 500,000
# built a 2M log's rollup 2.7 times as fast as 50,000 (benchmarks/scale.py's log)
BATCH_VOTES = 500_000
EPOCH = datetime(1970, 1, 1)


@dataclass
class State:
    """A rollup in memory: cells as (winner id, loser id) rows, pooled counts, and the cross
    products (cells x cells) of the voters' and of the prompts' counts, with how many of
    each."""

    cells: np.ndarray
    counts: np.ndarray
    cross: sparse.csr_matrix
    voters: int
    prompt_cross: sparse.csr_matrix
    prompts: int

    @classmethod
    def empty(cls) -> State:
        return cls(np.zeros((0, 2), dtype=np.int64), np.zeros(0),
                   sparse.csr_matrix((0, 0)), 0, sparse.csr_matrix((0, 0)), 0)

    @classmethod
    def load(cls, row: RankingRollup | None) -> State:
        if row is None or row.moments is None:
            return cls.empty()
        with np.load(io.BytesIO(row.moments), allow_pickle=False) as saved:
            cells = saved["cells"]
            crosses = [_symmetric(saved[f"{way}value"], saved[f"{way}row"], saved[f"{way}col"],
                                  len(cells)) for way in ("", "p")]
            return cls(cells, saved["counts"], crosses[0], row.voters, crosses[1],
                       int(saved["prompts"]))

    def dump(self) -> bytes:
        out = io.BytesIO()
        parts = {}
        for way, cross in (("", self.cross), ("p", self.prompt_cross)):
            upper = sparse.triu(cross).tocoo()
            parts.update({f"{way}row": upper.row.astype(np.int32),
                          f"{way}col": upper.col.astype(np.int32), f"{way}value": upper.data})
        np.savez(out, cells=self.cells, counts=self.counts, prompts=np.int64(self.prompts),
                 **parts)
        return out.getvalue()

    def added(self, new: np.ndarray, old: np.ndarray, new_prompts: np.ndarray,
              old_prompts: np.ndarray) -> State:
        """This state with the votes ``new`` (rows voter, winner, loser, count) added, ``old``
        holding the rolled-up counts of the voters in ``new`` (the same columns); and the
        same votes as ``new_prompts`` (rows prompt, winner, loser, count) with
        ``old_prompts``."""
        if not len(new):
            return self
        return self.replaced(old, np.concatenate([old, new]), old_prompts,
                             np.concatenate([old_prompts, new_prompts]))

    def replaced(self, old: np.ndarray, new: np.ndarray, old_prompts: np.ndarray,
                 new_prompts: np.ndarray) -> State:
        """This state with some voters' counts ``old`` (rows voter, winner, loser, count:
        every cell of each of those voters) replaced by ``new``, and some prompts' counts
        ``old_prompts`` by ``new_prompts`` (the same, per prompt)."""
        parts = [old, new, old_prompts, new_prompts]
        pairs = np.concatenate([self.cells] + [p[:, 1:3] for p in parts])
        codes, index = np.unique(pairs[:, 0] << 32 | pairs[:, 1], return_inverse=True)
        cells = np.column_stack([codes >> 32, codes & 0xFFFFFFFF])
        index = np.split(index.ravel(),
                         np.cumsum([len(self.cells)] + [len(p) for p in parts])[:-1])
        counts = np.zeros(len(cells))
        np.add.at(counts, index[0], self.counts)
        np.add.at(counts, index[2], new[:, 3])
        np.add.at(counts, index[1], -old[:, 3])
        move = sparse.csr_matrix((np.ones(len(index[0])), (index[0], np.arange(len(index[0])))),
                                 shape=(len(cells), len(self.cells)))
        ways = []
        for cross, before, after, prior, rows in (
                (self.cross, index[1], index[2], old, new),
                (self.prompt_cross, index[3], index[4], old_prompts, new_prompts)):
            ways.append(move @ cross @ move.T
                        + cross_products(rows[:, 0], after, rows[:, 3], len(cells))
                        - cross_products(prior[:, 0], before, prior[:, 3], len(cells)))
            ways.append(_units(rows) - _units(prior))
        return State(cells, counts, ways[0].tocsr(), self.voters + ways[1], ways[2].tocsr(),
                     self.prompts + ways[3])

    def moments(self, ids: list[int]) -> PairMoments:
        """As the ranking core takes them, models numbered by their place in ``ids``."""
        index = {model_id: i for i, model_id in enumerate(ids)}
        keep = np.array([w in index and lo in index and count > 0
                         for (w, lo), count in zip(self.cells.tolist(), self.counts,
                                                   strict=True)], dtype=bool)
        keep = np.flatnonzero(keep)
        winners = np.array([index[w] for w in self.cells[keep, 0]], dtype=np.int64)
        losers = np.array([index[lo] for lo in self.cells[keep, 1]], dtype=np.int64)
        return PairMoments(len(ids), winners, losers, self.counts[keep],
                           self.cross[keep][:, keep].tocsr(), self.voters,
                           self.prompt_cross[keep][:, keep].tocsr(), self.prompts)


def sql_dialect():
    """The dialect module whose ``insert`` takes ``on_conflict_do_update``."""
    return postgresql if db.engine.dialect.name == "postgresql" else sqlite


def _units(rows: np.ndarray) -> int:
    """How many units (first column) hold votes in rows (unit, winner, loser, count)."""
    return int(np.unique(rows[rows[:, 3] > 0, 0]).size)


def _symmetric(value, row, col, size: int) -> sparse.csr_matrix:
    """The symmetric matrix whose upper triangle is stored."""
    upper = sparse.coo_matrix((value, (row, col)), shape=(size, size))
    return (upper + sparse.triu(upper, k=1).T).tocsr()


def window(criterion: str, row: RankingRollup, before: datetime | None,
           last_id: int | None = None) -> list:
    """WHERE clauses: the votes of ``criterion`` not in ``row``: counted in public figures
    from its watermark on (and before ``before``), or stored after its last vote with an
    earlier stamp (a simulation's clock, an import); without ``before`` (the live figures)
    the votes waiting for their voters' trust too; up to vote ``last_id`` when given."""
    window = Vote.public_at >= row.through
    late = and_(Vote.id > row.last_vote_id, Vote.public_at < row.through)
    if before is not None:
        window = and_(window, Vote.public_at < before)
    else:
        late = or_(late, Vote.public_at.is_(None))
    clauses = [Vote.criterion == criterion, or_(window, late)]
    if last_id is not None:
        clauses.append(Vote.id <= last_id)
    return clauses


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
        Vote.public_at < target)).scalar() for criterion in CRITERIA)


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
    for criterion in CRITERIA:
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


def comparison_votes(before: datetime, *among):
    """Per comparison (``comparison_id``, ``n``), a subquery: its votes that fill its quota,
    stamped before ``before``. ``among``: WHERE clauses on Comparison."""
    parts = [select(Vote.comparison_id.label("comparison_id"), func.count().label("n"))
             .join(Comparison, Comparison.id == Vote.comparison_id)
             .where(Vote.flags == 0, *clauses, *among).group_by(Vote.comparison_id)
             for criterion in CRITERIA for clauses in _not_rolled_up(criterion, before)]
    parts.append(select(RollupComparison.comparison_id, RollupComparison.votes)
                 .join(Comparison, Comparison.id == RollupComparison.comparison_id)
                 .where(_usable(RollupComparison.criterion, before), *among))
    both = union_all(*parts).subquery()
    return (select(both.c.comparison_id, func.sum(both.c.n).label("n"))
            .group_by(both.c.comparison_id).subquery())


def comparison_sides(criterion: str, as_of: datetime | None = None) -> np.ndarray | None:
    """Per ordinary comparison of ``criterion``, its counted votes stamped before ``as_of``
    (all when None) for its first and its second image, from the rollup and the votes past
    its watermark: an array of rows (first, second). None when there is no rollup, or it
    runs past ``as_of`` (read the log, :func:`arena.analysis.agreement.sides`)."""
    row = db.session.get(RankingRollup, criterion, populate_existing=True)
    if row is None or (as_of is not None and row.through > as_of):
        return None
    before = as_of or datetime(9999, 1, 1)
    ordinary = Comparison.is_validation.is_(False)
    parts = [select(Vote.comparison_id.label("comparison_id"), first_votes().label("first"),
                    func.count().label("n"))
             .join(Comparison, Comparison.id == Vote.comparison_id)
             .where(Vote.flags == 0, ordinary, *clauses).group_by(Vote.comparison_id)
             for clauses in _not_rolled_up(criterion, before, waiting=as_of is None)]
    parts.append(select(RollupComparison.comparison_id, RollupComparison.first_votes,
                        RollupComparison.votes)
                 .join(Comparison, Comparison.id == RollupComparison.comparison_id)
                 .where(RollupComparison.criterion == criterion, ordinary,
                        _usable(RollupComparison.criterion, before)))
    both = union_all(*parts).subquery()
    return sides_of(select(func.sum(both.c.first), func.sum(both.c.n))
                    .group_by(both.c.comparison_id))


def sides_of(query) -> np.ndarray:
    """Rows (first, second) from a query of rows (votes for the first image, votes)."""
    rows = np.array([tuple(r) for r in db.session.execute(query)],
                    dtype=np.int64).reshape(-1, 2)
    return np.column_stack([rows[:, 0], rows[:, 1] - rows[:, 0]])


def campaign_voters(campaign_id: int, before: datetime, waiting: bool = False):
    """Per voter of the campaign (``voter_id``, ``votes``, ``gold``, ``failed``), a
    subquery: their votes counted in public figures before ``before`` (with ``waiting``,
    those waiting for their voters' trust too: the live figures), of them on gold pairs and
    failed."""
    parts = [select(Vote.voter_id.label("voter_id"), *_answers())
             .join(Comparison, Comparison.id == Vote.comparison_id)
             .where(Comparison.campaign_id == campaign_id, *clauses).group_by(Vote.voter_id)
             for criterion in CRITERIA
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
