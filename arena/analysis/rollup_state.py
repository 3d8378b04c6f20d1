"""A rollup's summed counts in memory, and the votes a rollup has not taken yet: what the
ranking rollups (:mod:`arena.analysis.rollups`) and the sliced ones
(:mod:`arena.analysis.slices`) share.

:class:`State` holds the pooled counts per ordered model pair and the cross products of the
voters' and of the prompts' counts (:class:`arena.ranking.PairMoments`); :func:`window` is the
WHERE clauses of the votes counted since a rollup's watermark.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from scipy import sparse
from sqlalchemy import and_, or_
from sqlalchemy.dialects import postgresql, sqlite

from arena.extensions import db
from arena.models import RankingRollup, Vote
from arena.ranking import PairMoments
from arena.ranking.moments import cross_products


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
