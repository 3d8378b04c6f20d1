"""Voters whose votes favour one model beyond what the crowd's strengths predict
(:mod:`arena.ranking.favouritism`), alone or with the other voters of their network, and
voters who choose one side of the screen rather than an image, for an operator to review,
and to hold out: a held voter's votes, past and to come, are flagged ``held`` and count
nowhere (the rollups are built again and the online Elo and counters replayed); released,
they count again. An operator reviews each hold: releases the voter or keeps them out for
good (:func:`keep_out`: nothing is deleted, the hold leaves the review queue)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from flask import current_app
from sqlalchemy import case, func, select, update

from arena import criteria
from arena.analysis import rollups
from arena.analysis.tallies import Slice, models, tally, vote_filter
from arena.extensions import db
from arena.infra import jobs
from arena.infra.database import write_transaction
from arena.models import Vote, Voter, utcnow
from arena.ranking import PairCounts, bradley_terry
from arena.ranking.favouritism import favouritism, groups, one_sided
from arena.voting import votes
from arena.voting.flags import HELD


@dataclass(frozen=True)
class Suspect:
    public_id: str
    votes: int  # counted, in the selection
    model: str  # the model they favour most
    z: float  # how far beyond the crowd (about standard normal for a voter like the crowd)
    gold_passed: int
    gold_failed: int
    network: bool = False  # named because their network's voters favour the model together
    side: str | None = None  # named because they choose this side of the screen, not images

    @property
    def reason(self) -> str:
        """What the screen found, in a line for the operator's review."""
        found = []
        if self.model:
            found.append(f"favours {self.model} (z {self.z:.1f} over {self.votes} votes)"
                         + (" with its network's voters" if self.network else ""))
        if self.side:
            found.append(f"always the {self.side} image")
        return "; ".join(found)


def suspects(criterion: str, slice_: Slice | None = None, alpha: float = 0.01,
             reference: datetime | None = None) -> list[Suspect]:
    """The voters of ``criterion``'s counted votes in ``slice_`` who favour one model
    together beyond the crowd's strengths (:mod:`arena.ranking.favouritism`), most extreme
    first. The crowd's strengths are the fit of the votes themselves, or of the counted
    votes stamped before ``reference`` when it has some: a farm large enough to move the
    fit would hide in it, and make honest voters look partial against its model. Raises
    RankingError for an unknown criterion, ValueError for a bad ``alpha``."""
    criteria.check(criterion)
    ids, names = models()
    found = _per_voter(criterion, ids, slice_ or Slice())
    if found is None:
        return []
    voters, data = found
    crowd = data.matrix()
    if reference is not None:
        earlier = tally(criterion, Slice(as_of=reference), cluster="none").counts.matrix()
        crowd = earlier if earlier.sum() > 0 else crowd
    found = favouritism(data, bradley_terry(crowd), alpha)
    named = {int(u): (int(found.favoured[u]), False) for u in found.flagged}
    # a farm spread thin over identities on one network, each too short to stand out alone
    together = groups(found, _networks(voters), alpha)
    by_network = sorted(together.members.items(), key=lambda um: -found.z[um[0], um[1]])
    for u, m in by_network:
        named.setdefault(u, (m, True))
    sided = _one_sided(criterion, slice_ or Slice(), voters, reference, alpha)
    people = {v.id: v for v in db.session.scalars(select(Voter).where(Voter.id.in_(
        voters[list(named)].tolist() + list(sided))))}
    listed = [Suspect(people[int(voters[u])].public_id, int(found.votes[u]), names[m],
                      float(found.z[u, m]), people[int(voters[u])].validations_passed,
                      people[int(voters[u])].validations_failed, network,
                      sided.get(int(voters[u]), (None,))[0])
              for u, (m, network) in named.items()]
    seen = {int(voters[u]) for u in named}
    return listed + [Suspect(people[v].public_id, n, "", z, people[v].validations_passed,
                             people[v].validations_failed, side=side)
                     for v, (side, n, z) in sided.items() if v not in seen]


def _one_sided(criterion: str, slice_: Slice, voters: np.ndarray,
               reference: datetime | None, alpha: float) -> dict:
    """{voter id: (the side, their votes, z)} for the voters who choose one side of the
    screen beyond chance (:func:`arena.ranking.favouritism.one_sided`), among ``voters``, or
    with ``reference`` those of them who voted since (the timer's period: what it costs
    follows the period's voters, not the log). Read from the log by voter."""
    ids = voters.tolist()
    if reference is not None:
        recent = vote_filter(criterion, slice_).where(Vote.created_at >= reference)
        ids = sorted(set(db.session.scalars(recent.with_only_columns(Vote.voter_id)
                                            .distinct())) & set(ids))
    rows = []
    for start in range(0, len(ids), 5_000):  # (SQLite's limit on parameters)
        rows += db.session.execute(
            vote_filter(criterion, slice_).with_only_columns(
                Vote.voter_id, func.sum(case((Vote.choice == "left", 1), else_=0)), func.count())
            .where(Vote.voter_id.in_(ids[start:start + 5_000])).group_by(Vote.voter_id)).all()
    if not rows:
        return {}
    voter, left, n = (np.array(column) for column in zip(*rows, strict=True))
    flagged = one_sided(left, n, alpha)
    z = (left - n / 2) / np.sqrt(n / 4)
    return {int(voter[k]): ("left" if z[k] > 0 else "right", int(n[k]), float(abs(z[k])))
            for k in np.flatnonzero(flagged)}


def _networks(voters: np.ndarray) -> np.ndarray:
    """Each voter's network as a number (voters of one network alike), -1 where unknown."""
    known: dict[int, str] = {}
    ids = voters.tolist()
    for start in range(0, len(ids), 5_000):  # (SQLite's limit on parameters)
        known.update(db.session.execute(select(Voter.id, Voter.network).where(
            Voter.id.in_(ids[start:start + 5_000]), Voter.network.is_not(None))).all())
    labels = sorted(set(known.values()))
    number = {label: k for k, label in enumerate(labels)}
    return np.array([number.get(known.get(v), -1) for v in ids], dtype=np.int64)


def _per_voter(criterion: str, ids: list[int], slice_: Slice):
    """(voter ids, their counted votes per model pair) of ``slice_``: from the rollup's voter
    counts where it holds exactly those votes (every vote before its cut-off), else from the
    log; None without a vote."""
    if slice_.as_of is not None and not slice_.active():
        rolled = rollups.voter_counts(criterion, ids, slice_.as_of)
        if rolled is not None:
            return rolled if rolled[0].size else None
    counted = vote_filter(criterion, slice_).add_columns(Vote.voter_id).subquery()
    keys = (counted.c.voter_id, counted.c.winner_model_id, counted.c.loser_model_id)
    rows = db.session.execute(select(*keys, func.count()).group_by(*keys)).all()
    index = {model_id: i for i, model_id in enumerate(ids)}
    rows = [r for r in rows if r[1] in index and r[2] in index and r[1] != r[2]]
    if not rows:
        return None
    voters, unit = np.unique(np.array([r[0] for r in rows]), return_inverse=True)
    return voters, PairCounts.from_rows(len(ids), unit.ravel(), [index[r[1]] for r in rows],
                                        [index[r[2]] for r in rows], [r[3] for r in rows])


def hold(public_ids, progress=None, reasons: dict[str, str] | None = None) -> int:
    """Hold these voters out: flag every vote of theirs ``held`` (and their next ones), build
    the rollups again from the log and replay the online Elo and counters (``progress`` per
    vote replayed); ``reasons`` (by public id) say why, for the review. Returns how many
    voters were not held before. Unknown ids are ignored."""
    return _set_held(public_ids, True, progress, reasons or {})


def release(public_ids, progress=None) -> int:
    """Undo :func:`hold` for these voters. Returns how many were held."""
    return _set_held(public_ids, False, progress, {})


def release_in_background(public_id: str) -> bool:
    """Queue :func:`release` of one voter for the job worker (it replays the log: seconds on
    a large one), for the operator page; False while a release is queued or under way."""
    return jobs.submit("release", public_id=public_id)


def release_one(public_id: str) -> int:
    """The ``release`` job."""
    return release([public_id])


def releasing() -> bool:
    return jobs.busy("release")


def keep_out(public_ids) -> int:
    """An operator's review of these holds: the voters stay out for good (until released)
    and leave the review queue. Returns how many holds were not reviewed before."""
    with write_transaction():
        return db.session.execute(
            update(Voter).where(Voter.public_id.in_(list(public_ids)),
                                Voter.held_at.is_not(None), Voter.hold_reviewed_at.is_(None))
            .values(hold_reviewed_at=utcnow())).rowcount


@dataclass(frozen=True)
class Held:
    public_id: str
    votes: int
    held_at: datetime
    reason: str | None  # None: held by an operator's list without one
    reviewed_at: datetime | None  # kept out by an operator's review; None: still to review


def held() -> list[Held]:
    """Every held voter, with their votes, why and whether reviewed: those to review first,
    then held first first."""
    rows = db.session.execute(
        select(Voter.public_id, func.count(Vote.id), Voter.held_at, Voter.held_reason,
               Voter.hold_reviewed_at)
        .outerjoin(Vote, Vote.voter_id == Voter.id).where(Voter.held_at.is_not(None))
        .group_by(Voter.id, Voter.public_id, Voter.held_at, Voter.held_reason,
                  Voter.hold_reviewed_at)
        .order_by(Voter.hold_reviewed_at.is_not(None), Voter.held_at, Voter.id)).all()
    return [Held(*row) for row in rows]


def _set_held(public_ids, holding: bool, progress, reasons: dict[str, str]) -> int:
    with write_transaction():
        rows = db.session.execute(select(Voter.id, Voter.public_id, Voter.held_at).where(
            Voter.public_id.in_(list(public_ids)))).all()
        changed = [(voter_id, public_id) for voter_id, public_id, at in rows
                   if (at is None) == holding]
        if not rows:
            return 0
        now = utcnow()
        if changed:  # (by primary key: one executemany)
            db.session.execute(update(Voter), [
                {"id": voter_id, "held_at": now if holding else None,
                 "released_at": None if holding else now, "hold_reviewed_at": None,
                 "held_reason": (reasons.get(public_id) or "")[:200] or None}
                for voter_id, public_id in changed])
        # (every vote of theirs, again: one cast while the hold was being decided too)
        ids = [row[0] for row in rows]
        flags = Vote.flags.op("|")(HELD) if holding else Vote.flags.op("&")(~HELD)
        db.session.execute(update(Vote).where(Vote.voter_id.in_(ids)).values(flags=flags))
        rollups.reset()
    votes.replay(progress=progress)
    return len(changed)


def screen(before: datetime) -> list[str]:
    """Hold out the voters :func:`suspects` names in any criterion among the votes counted
    before ``before`` (the period's cut-off), against the crowd's strengths as of the period
    before, but those already held and those an operator released: once a period, from the
    period's tick (:mod:`arena.campaigns.period`). Returns the public ids held."""
    alpha = current_app.config["SCREEN_ALPHA"]
    # (the crowd as it stood a period earlier: what a farm of this period could not move)
    earlier = before - timedelta(seconds=float(current_app.config["PUBLISHED_PERIOD_S"]))
    reasons: dict[str, list[str]] = {}
    for criterion in criteria.names():
        for s in suspects(criterion, Slice(as_of=before), alpha, earlier):
            reasons.setdefault(s.public_id, []).append(f"{criterion}: {s.reason}")
    fresh = db.session.scalars(select(Voter.public_id).where(
        Voter.public_id.in_(sorted(reasons)), Voter.held_at.is_(None),
        Voter.released_at.is_(None))).all() if reasons else []
    if fresh:
        hold(fresh, None, {p: "; ".join(reasons[p]) for p in fresh})
    return sorted(fresh)
