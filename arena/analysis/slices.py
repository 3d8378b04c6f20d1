"""The leaderboard's slices flat in the vote log: each slice's counted votes summed with its
criterion's rollup (:mod:`arena.analysis.rollups`), to the same watermark.

A slice is one field's value: the voter's age group, gender or continent, their trust (as
their gold answers stood at the watermark), the page's language, or the prompt's category.
Each keeps what the whole rollup keeps (the moments of :class:`arena.ranking.PairMoments`
in ``RollupSlice``, each prompt's counts in ``RollupSlicePrompt``), so a sliced
ranking reads a few numbers per pair of pairs plus the votes since the watermark.

A voter's own fields move all of their votes when they change (new answers, a failed gold
pair), so every batch, and every read, takes the voters whose slices may have moved
(those who voted or answered gold since the watermark, or changed their answers), reads
their votes from the log (by voter: what they cast, not the log) and replaces their old
counts by their new ones: the rolled-up slices they were in (``RollupSliceMember``) lose
them, the slices they are in now gain them. The numbers are those of the log.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy import and_, case, delete, func, or_, select

from arena import criteria
from arena.analysis.rollup_state import State, sql_dialect, window
from arena.analysis.tallies import Slice, trusted_before, vote_filter
from arena.extensions import db
from arena.models import (
    Comparison,
    Prompt,
    RankingRollup,
    RollupSlice,
    RollupSliceMember,
    RollupSlicePrompt,
    Vote,
    Voter,
)
from arena.ranking import PairMoments

VOTER_FIELDS = ("age_group", "gender", "continent", "trusted")  # all of a voter's votes
VOTE_FIELDS = ("language", "category")  # each vote's own: they never move
FIELDS = VOTER_FIELDS + VOTE_FIELDS
TRUSTED = "yes"
# answers changed this long before a batch's end are read again (a change that committed
# while the batch ran is not missed); reading a voter again changes nothing
CHANGED_MARGIN = timedelta(minutes=10)
FAR = datetime(9999, 1, 1)
CHUNK = 4_000  # voters or rows per statement (SQLite's limit on parameters)


def field_of(slice_: Slice) -> tuple[str, str] | None:
    """The one rolled-up (field, value) ``slice_`` keeps, or None (read the log). Trust is
    rolled up as it stood at a time: only for published figures (``as_of``)."""
    active = slice_.active()
    if len(active) != 1:
        return None
    (name, value), = active.items()
    if name == "trusted_only":
        return ("trusted", TRUSTED) if slice_.as_of is not None else None
    return (name, value) if name in FIELDS else None


@dataclass(frozen=True)
class Rolled:
    """One rolled-up slice as a reading sees it: its state to the reading's cut-off, and
    every prompt's counts (rows prompt, comparison, winner, loser, first, votes)."""

    state: State
    cells: np.ndarray

    def moments(self, ids: list[int]) -> PairMoments:
        """The slice's counted votes as :class:`PairMoments` over the models ``ids``."""
        return self.state.moments(ids)

    def sides(self) -> np.ndarray:
        """Per ordinary comparison in the slice's cells, its counted votes for its first and
        its second image (what the cells hold of each comparison, as the log counts it)."""
        comparisons, index = np.unique(self.cells[:, 1], return_inverse=True)
        votes = self.cells[:, 5]
        total = np.bincount(index.ravel(), weights=votes, minlength=len(comparisons))
        first = np.bincount(index.ravel(), weights=votes * self.cells[:, 4],
                            minlength=len(comparisons))
        return np.column_stack([first, total - first]).astype(np.int64)


def read(criterion: str, slice_: Slice) -> Rolled | None:
    """The counted votes of ``criterion`` in ``slice_``, stamped before its ``as_of`` (all
    when None): the rolled-up slice with the votes since the watermark and the voters who
    moved, in one reading for the ranking and its agreement. None when ``slice_`` is not
    one rolled-up slice, or there is no rollup or it runs past ``as_of``."""
    sliced = field_of(slice_)
    if sliced is None:
        return None
    key = (criterion, *sliced)
    for _ in range(3):
        row = db.session.get(RankingRollup, criterion, populate_existing=True)
        if row is None or (slice_.as_of is not None and row.through > slice_.as_of):
            return None
        through = row.through
        state, after = _changed(criterion, row, slice_.as_of or FAR, None,
                                fields=(sliced[0],), only=sliced[1]).get(sliced,
                                                                         (None, _fine()))
        if state is None:
            state = State.load(db.session.get(RollupSlice, key))
        stored = _prompt_cells(key, None)
        cells = np.concatenate([stored[~np.isin(stored[:, 0], after[:, 0])], after])
        again = db.session.execute(select(RankingRollup.through)
                                   .where(RankingRollup.criterion == criterion)).scalar()
        if again == through:  # (else a refresh moved the watermark meanwhile: read again)
            return Rolled(state, cells)
    return None


def advance(criterion: str, row: RankingRollup, end: datetime, last: int) -> None:
    """Bring ``criterion``'s slices to where :func:`arena.analysis.rollups` takes ``row``
    in this batch (votes stamped before ``end``, up to vote ``last``), in its transaction;
    ``row`` still holds the watermark the batch starts from."""
    moved = _changed(criterion, row, end, last, fields=FIELDS, store=True)
    for (field, value), (state, _) in moved.items():
        stored = db.session.get(RollupSlice, (criterion, field, value))
        if stored is None:
            stored = RollupSlice(criterion=criterion, field=field, value=value)
            db.session.add(stored)
        stored.moments, stored.voters = state.dump(), state.voters


def reset() -> None:
    """Drop every slice (not committed), with :func:`arena.analysis.rollups.reset`."""
    for table in (RollupSlice, RollupSlicePrompt, RollupSliceMember):
        db.session.execute(delete(table))


def _changed(criterion: str, row: RankingRollup, end: datetime, last: int | None,
             fields: tuple, only: str | None = None, store: bool = False) -> dict:
    """The slices of ``fields`` (the value ``only`` when given) whose counts change from
    ``row``'s watermark to ``end`` (and vote ``last``): {(field, value): (State, the changed
    prompts' counts as rows prompt, comparison, winner, loser, first, votes)}. With
    ``store``, the prompts' counts and the voters' slices are written too."""
    voters = _touched(criterion, row, end, last)
    if not voters:
        return {}
    history, names = _history(criterion, voters, row, end, last)
    before = _members_before(criterion, voters)
    now = _members_now(voters, end)
    found = {}
    for field in fields:
        for value, (old, new, change) in _split(field, history, names, before,
                                                now).items():
            if only is not None and value != only:
                continue
            key = (criterion, field, value)
            cells = _prompt_cells(key, change[:, 0])
            after = _sum(cells, change)
            state = State.load(db.session.get(RollupSlice, key))
            found[(field, value)] = (state.replaced(old, new, _decisive(cells),
                                                    _decisive(after)), after)
            if store:
                _store_prompts(key, change[:, 0], after)
    if store:
        _store_members(criterion, now, set(history[:, 0].tolist()))
    return found


def _touched(criterion: str, row: RankingRollup, end: datetime, last: int | None
             ) -> list[int]:
    """The voters whose counts in some slice may change: who cast a vote of ``criterion``
    past the watermark, answered a gold pair of any criterion in that time (their trust), or
    changed their answers since the slices last read them."""
    rolled = window(criterion, row, end, last)
    since = or_(and_(Vote.created_at >= row.through, Vote.created_at < end),
                and_(Vote.id > row.last_vote_id, Vote.created_at < row.through))
    parts = [select(Vote.voter_id).where(*rolled),
             select(Vote.voter_id).where(Vote.criterion.in_(criteria.names()),
                                         Vote.is_validation.is_(True), since),
             select(Voter.id).where(Voter.profile_at >= row.refreshed_at - CHANGED_MARGIN)]
    found = set()
    for part in parts:
        found.update(db.session.scalars(part.distinct()))
    return sorted(found)


def _history(criterion: str, voters: list[int], row: RankingRollup, end: datetime,
             last: int | None) -> tuple[np.ndarray, list]:
    """Every counted vote of ``voters`` in the rollup before and after this step, grouped:
    rows (voter, prompt, winner, loser, language, category, comparison, first (1 when the
    comparison's first image won), votes before, votes after), language and category as
    their places in the list returned with the rows (-1 for none)."""
    before = and_(Vote.public_at < row.through, Vote.id <= row.last_vote_id)
    after = Vote.public_at < end
    if last is not None:
        after = and_(after, Vote.id <= last)
    keys = (Vote.voter_id, func.coalesce(Comparison.prompt_id, -1), Vote.winner_model_id,
            Vote.loser_model_id, Vote.language, Prompt.category, Vote.comparison_id,
            case((Vote.winner_image_id == Comparison.image_a_id, 1), else_=0))
    rows, codes = [], {None: -1}
    for start in range(0, len(voters), CHUNK):
        query = (vote_filter(criterion, Slice(), join_prompt=True)
                 .outerjoin(Prompt, Prompt.id == Comparison.prompt_id)
                 .with_only_columns(*keys, func.sum(case((before, 1), else_=0)),
                                    func.sum(case((after, 1), else_=0)))
                 .where(Vote.voter_id.in_(voters[start:start + CHUNK]), or_(before, after))
                 .group_by(*keys))
        rows += [(*r[:4], codes.setdefault(r[4], len(codes) - 1),
                  codes.setdefault(r[5], len(codes) - 1), *r[6:])
                 for r in db.session.execute(query)]
    names = [name for name in codes if name is not None]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 10), names


def _members_before(criterion: str, voters: list[int]) -> dict:
    """{voter: (age group, gender, continent, trusted)} as the slices hold them."""
    found = {}
    for start in range(0, len(voters), CHUNK):
        found.update((r[0], tuple(r[1:])) for r in db.session.execute(
            select(RollupSliceMember.voter_id, *(getattr(RollupSliceMember, f)
                                                 for f in VOTER_FIELDS))
            .where(RollupSliceMember.criterion == criterion,
                   RollupSliceMember.voter_id.in_(voters[start:start + CHUNK]))))
    return found


def _members_now(voters: list[int], end: datetime) -> dict:
    """{voter: (age group, gender, continent, trusted)}: their answers now, their trust as
    their gold answers before ``end`` made it."""
    found = {}
    for start in range(0, len(voters), CHUNK):
        chunk = voters[start:start + CHUNK]
        trusted = set(db.session.scalars(trusted_before(end).where(Vote.voter_id.in_(chunk))))
        found.update((r[0], (r[1], r[2], r[3], TRUSTED if r[0] in trusted else None))
                     for r in db.session.execute(
                         select(Voter.id, Voter.age_group, Voter.gender, Voter.continent)
                         .where(Voter.id.in_(chunk))))
    return found


def _split(field: str, history: np.ndarray, names: list, before: dict, now: dict) -> dict:
    """Per value of ``field`` that changes: the voters' old counts and their new counts
    (rows voter, winner, loser, count: a model beaten), and the change in the prompts'
    counts (rows prompt, comparison, winner, loser, first, count)."""
    if field in VOTER_FIELDS:
        at = VOTER_FIELDS.index(field)
        voters = history[:, 0].tolist()
        was = [before.get(v, (None,) * 4)[at] for v in voters]
        is_ = [now[v][at] for v in voters]
    else:
        codes = history[:, 4 if field == "language" else 5].tolist()
        was = is_ = [names[c] if c >= 0 else None for c in codes]
    groups = defaultdict(lambda: ([], []))
    for i, (a, b) in enumerate(zip(was, is_, strict=True)):
        if a is not None:
            groups[a][0].append(i)
        if b is not None:
            groups[b][1].append(i)
    found = {}
    for value, (old_rows, new_rows) in groups.items():
        old, new = history[old_rows], history[new_rows]
        fine = (1, 6, 2, 3, 7)
        found[value] = (_rows(old[old[:, 2] != old[:, 3]], (0, 2, 3), 8),
                        _rows(new[new[:, 2] != new[:, 3]], (0, 2, 3), 9),
                        _sum(_rows(old, fine, 8, -1), _rows(new, fine, 9)))
    return found


def _rows(history: np.ndarray, keys: tuple, column: int, sign: int = 1) -> np.ndarray:
    """``history``'s columns ``keys`` and its counts from ``column``, added up per key."""
    return _sum(np.column_stack([history[:, list(keys)], sign * history[:, column]]))


def _sum(*parts: np.ndarray) -> np.ndarray:
    """Rows (keys..., count) added up per key, zeros left out."""
    width = parts[0].shape[1]
    rows = np.concatenate([p.reshape(-1, width) for p in parts]).astype(np.int64)
    rows = rows[np.lexsort(rows[:, :-1].T[::-1])] if len(rows) else rows
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (rows[1:, :-1] != rows[:-1, :-1]).any(axis=1)
    starts = np.flatnonzero(first)
    counts = np.add.reduceat(rows[:, -1], starts) if len(rows) else rows[:0, -1]
    keep = counts != 0
    return np.column_stack([rows[starts[keep], :-1], counts[keep]])


def _fine() -> np.ndarray:
    """No prompts' counts: rows (prompt, comparison, winner, loser, first, votes)."""
    return np.zeros((0, 6), dtype=np.int64)


def _decisive(fine: np.ndarray) -> np.ndarray:
    """Prompts' counts as the rankings take them: rows (prompt, winner, loser, count) of
    the votes between two models."""
    return _sum(fine[fine[:, 2] != fine[:, 3]][:, [0, 2, 3, 5]].reshape(-1, 4))


def _prompt_cells(key: tuple, prompts: np.ndarray | None) -> np.ndarray:
    """The rolled-up counts of ``prompts`` (all when None) in the slice ``key``: rows
    (prompt, comparison, winner, loser, first, votes)."""
    table = RollupSlicePrompt
    query = select(table.prompt_id, table.cells).where(
        table.criterion == key[0], table.field == key[1], table.value == key[2])
    ids = [None] if prompts is None else np.unique(prompts).tolist()
    parts = [_fine()]
    for start in range(0, len(ids), CHUNK):
        chunk = query if prompts is None else query.where(
            table.prompt_id.in_(ids[start:start + CHUNK]))
        for prompt, cells in db.session.execute(chunk):
            cells = np.frombuffer(cells, dtype=np.int64).reshape(-1, 5)
            parts.append(np.column_stack([np.full(len(cells), prompt), cells]))
    return np.concatenate(parts)


def _store_prompts(key: tuple, prompts: np.ndarray, counts: np.ndarray) -> None:
    """Write ``counts`` (rows prompt, comparison, winner, loser, first, votes: every cell
    of each prompt it holds) as the slice ``key``'s counts of ``prompts``."""
    table = RollupSlicePrompt
    insert = sql_dialect().insert(table)
    statement = insert.on_conflict_do_update(
        index_elements=["criterion", "field", "value", "prompt_id"],
        set_={"cells": insert.excluded.cells})
    ids = np.unique(prompts)
    bounds = np.searchsorted(counts[:, 0], np.concatenate([ids, [np.iinfo(np.int64).max]]))
    rows = [{"criterion": key[0], "field": key[1], "value": key[2], "prompt_id": prompt,
             "cells": np.ascontiguousarray(counts[bounds[i]:bounds[i + 1], 1:]).tobytes()}
            for i, prompt in enumerate(ids.tolist())]
    if rows:
        db.session.execute(statement, rows)


def _store_members(criterion: str, now: dict, voters: set) -> None:
    """The slices ``voters`` (those with counted votes) are rolled up in from now on."""
    insert = sql_dialect().insert(RollupSliceMember)
    statement = insert.on_conflict_do_update(
        index_elements=["criterion", "voter_id"],
        set_={f: getattr(insert.excluded, f) for f in VOTER_FIELDS})
    rows = [dict(criterion=criterion, voter_id=v, **dict(zip(VOTER_FIELDS, now[v],
                                                              strict=True)))
            for v in sorted(voters)]
    for start in range(0, len(rows), CHUNK // 8):
        db.session.execute(statement, rows[start:start + CHUNK // 8])
