"""The cohort screen: voters new together whose votes move the public ranking beyond what
voters like the crowd would (:mod:`arena.ranking.cohorts`), kept out of public figures until
an operator looks.

Once a period, among the votes that count in public figures at the period's cut-off, the
rollup timer tests up to eight cohorts per criterion: the voters first seen in the period, in
the day and in the week before the cut-off, those whose votes first count in the period (trust
earned: :mod:`arena.voting.trust`), and the busier half of each
(:func:`arena.ranking.cohorts.busier_half`), each against every other voter. A cohort past the
line (``SCREEN_COHORT_ALPHA`` shared by every statistic of every cohort tested) opens a
review (``CohortReview``) with the evidence, and the fewest of its voters whose votes take
it back under the line wait: their votes count in no public figure (``Vote.public_at`` None,
``Voter.review_id``) until an operator releases them (they count from then) or keeps them out
(held, as the farm screen holds). A cohort's signal holds nobody by itself: waiting is not a
verdict, and nothing is deleted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise

import numpy as np
from flask import current_app
from scipy.special import ndtri
from sqlalchemy import func, select, update

from arena import criteria
from arena.analysis import rollups, suspects
from arena.analysis.tallies import Slice, models, vote_filter
from arena.errors import NotFound
from arena.extensions import db
from arena.infra.database import write_transaction
from arena.models import CohortReview, Comparison, RankingRollup, Vote, Voter, utcnow
from arena.ranking import PairCounts, bradley_terry
from arena.ranking.cohorts import ELO, CohortTest, busier_half, cohort_test, count

KINDS = ("period", "day", "week", "counted", "period busy", "day busy", "week busy",
         "counted busy")
_WHO = {"period": "voters first seen in the period", "day": "voters first seen that day",
        "week": "voters first seen that week", "counted": "voters whose votes began to count "
        "in the period"}
_WHO |= {f"{kind} busy": f"the busier half of the {_WHO[kind]}" for kind in list(_WHO)}


@dataclass(frozen=True)
class Cohort:
    kind: str
    since: datetime
    until: datetime
    voters: np.ndarray  # voter ids


def screen(before: datetime, period: timedelta) -> list[int]:
    """Test every criterion's cohorts of the votes counted before ``before`` (the period's
    cut-off); open a review for each cohort past the line and send its named voters' votes
    back to waiting. Returns the reviews opened."""
    alpha = float(current_app.config["SCREEN_COHORT_ALPHA"])
    plans = []
    for criterion in criteria.names():
        found = _public_votes(criterion, before)
        if found is None:
            continue
        voter_ids, data = found
        fit = bradley_terry(data.matrix())
        order = np.argsort(-fit.log_strengths, kind="stable")
        played = (data.matrix() + data.matrix().T).sum(axis=1) > 0
        order = [int(m) for m in order if played[m]]
        gaps = list(pairwise(order))
        cast = np.bincount(data.ways[0][data.unit], data.ab + data.ba + data.tie,
                           minlength=voter_ids.size)
        for cohort in _cohorts(voter_ids, cast, before, period):
            plans.append((criterion, voter_ids, data, gaps, cohort))
    if not plans:
        return []
    tests = sum(count(p[2].n_items, len(p[3])) for p in plans)
    level = float(ndtri(1 - alpha / tests))
    # a gap a cohort reversed: one-sided, over every cohort's gaps (a farm buys a reversal)
    pivotal = float(ndtri(1 - alpha / max(sum(len(p[3]) for p in plans), 1)))
    names = models()[1]
    opened = []
    for criterion, voter_ids, data, gaps, cohort in plans:
        member = np.isin(voter_ids, cohort.voters)
        result = cohort_test(data, member, gaps, level, pivotal_level=pivotal)
        if result.flagged:
            opened.append(_open(criterion, cohort, result, voter_ids, names, int(member.sum())))
    return [review for review in opened if review is not None]


def _public_votes(criterion: str, before: datetime) -> tuple[np.ndarray, PairCounts] | None:
    """The votes of ``criterion`` counted in public figures before ``before``, per voter and
    prompt: (the voters' ids, as the two-way data numbers them; the data). None without."""
    ids, _ = models()
    counted = (vote_filter(criterion, Slice(as_of=before), join_prompt=True)
               .add_columns(Vote.voter_id, Comparison.prompt_id).subquery())
    keys = (counted.c.voter_id, counted.c.prompt_id, counted.c.winner_model_id,
            counted.c.loser_model_id)
    rows = db.session.execute(select(*keys, func.count()).group_by(*keys)).all()
    index = {model_id: i for i, model_id in enumerate(ids)}
    rows = [r for r in rows if r[2] in index and r[3] in index and r[2] != r[3]]
    if not rows:
        return None
    voters = np.array([r[0] for r in rows], dtype=np.int64)
    data = PairCounts.crossed(len(ids), voters, [-1 if r[1] is None else r[1] for r in rows],
                              [index[r[2]] for r in rows], [index[r[3]] for r in rows],
                              np.array([r[4] for r in rows], dtype=float))
    return np.unique(voters), data


def _cohorts(voter_ids: np.ndarray, cast: np.ndarray, before: datetime, period: timedelta
             ) -> list[Cohort]:
    """The cohorts among the voters with counted votes (``cast`` of them each, as
    ``voter_ids`` orders them), each tested once (a day's that holds only the period's voters
    is the period's): first seen in a window or counted from the period, and the busier half
    of each."""
    rows = []
    ids = voter_ids.tolist()
    for start in range(0, len(ids), 5_000):  # (SQLite's limit on parameters)
        rows += db.session.execute(select(Voter.id, Voter.created_at, Voter.earned_at).where(
            Voter.id.in_(ids[start:start + 5_000]))).all()
    since = {"period": before - period, "day": before - timedelta(days=1),
             "week": before - timedelta(days=7)}
    chosen = {kind: [v for v, c, _ in rows if c is not None and start <= c < before]
              for kind, start in since.items()}
    chosen["counted"] = [v for v, _, e in rows if e is not None and since["period"] <= e < before]
    since["counted"] = since["period"]
    found, seen = [], set()
    for kind, voters in chosen.items():
        if not 0 < len(voters) < len(ids):
            continue  # (a window that holds every voter has no crowd to be held against)
        busy = voter_ids[busier_half(cast, np.isin(voter_ids, voters))]
        for name, members in ((kind, np.array(sorted(voters), dtype=np.int64)),
                              (f"{kind} busy", busy)):
            key = tuple(members.tolist())
            if members.size and key not in seen:
                seen.add(key)
                found.append(Cohort(name, since[kind], before, members))
    return found


def _open(criterion: str, cohort: Cohort, result: CohortTest, voter_ids: np.ndarray,
          names: list[str], members: int) -> int | None:
    """Record the review and send its named voters' votes back to waiting; the review's id,
    or None when they all wait already."""
    waiting = voter_ids[result.removed].tolist()
    past = [s for s in result.statistics if abs(s.z) >= result.level]
    worst = [max((s for s in past if s.kind == kind), key=lambda s: abs(s.z), default=None)
             for kind in ("model", "gap")]
    evidence = {
        "level": result.level, "members": members, "votes": result.votes,
        "statistics": [_described(s, names) for s in result.statistics],
        "after": [_described(s, names) for s in result.after],
    }
    reason = (f"{_WHO[cohort.kind]} ({members} voters): "
              + "; ".join(_said(stat, names) for stat in worst if stat is not None))
    with write_transaction():
        waiting = db.session.scalars(select(Voter.id).where(
            Voter.id.in_(waiting), Voter.review_id.is_(None), Voter.held_at.is_(None))).all()
        if not waiting:
            return None
        votes = db.session.scalar(select(func.count()).where(Vote.voter_id.in_(waiting)))
        review = CohortReview(criterion=criterion, kind=cohort.kind, since=cohort.since,
                              until=cohort.until, reason=reason[:300],
                              evidence=json.dumps(evidence), voters=len(waiting), votes=votes)
        db.session.add(review)
        db.session.flush()
        db.session.execute(update(Voter).where(Voter.id.in_(waiting))
                           .values(review_id=review.id))
        # (votes the rollups hold already: they are built again without them)
        rolled = db.session.scalar(select(func.count()).select_from(Vote).join(
            RankingRollup, RankingRollup.criterion == Vote.criterion).where(
            Vote.voter_id.in_(waiting), Vote.public_at < RankingRollup.through))
        db.session.execute(update(Vote).where(Vote.voter_id.in_(waiting))
                           .values(public_at=None))
        if rolled:
            rollups.reset()
        return review.id


def _described(stat, names: list[str]) -> dict:
    said = {"kind": stat.kind, "models": [names[i] for i in stat.items], "z": round(stat.z, 2)}
    if stat.kind == "gap":
        said["elo"] = round(ELO * stat.sum, 1)  # how far the cohort moved the gap
    else:
        said["excess_wins"] = round(stat.sum, 1)
    return said


def _said(stat, names: list[str]) -> str:
    if stat.kind == "gap":
        ahead, behind = (names[i] for i in stat.items)
        return (f"moved the gap of {ahead} over {behind} by {ELO * stat.sum:+.0f} Elo "
                f"(z {stat.z:.1f})")
    name = names[stat.items[0]]
    return (f"{'favoured' if stat.sum > 0 else 'disfavoured'} {name}: {stat.sum:+.0f} wins "
            f"beyond the crowd's strengths (z {stat.z:.1f})")


# -- the operator's review ----------------------------------------------------------------

@dataclass(frozen=True)
class Review:
    id: int
    criterion: str
    kind: str
    since: datetime
    until: datetime
    found_at: datetime
    reason: str
    voters: int
    votes: int
    evidence: dict
    decision: str | None
    decided_at: datetime | None


def reviews(open_only: bool = False) -> list[Review]:
    """Every cohort review, those to decide first, then the newest first."""
    query = select(CohortReview).order_by(CohortReview.decided_at.is_not(None),
                                          CohortReview.found_at.desc(), CohortReview.id)
    if open_only:
        query = query.where(CohortReview.decided_at.is_(None))
    return [Review(r.id, r.criterion, r.kind, r.since, r.until, r.found_at, r.reason, r.voters,
                   r.votes, json.loads(r.evidence), r.decision, r.decided_at)
            for r in db.session.scalars(query)]


def release(review_id: int) -> int:
    """An operator's review: the cohort's waiting voters count again, their votes from now
    (those who had earned trust; the others go on waiting for it). Returns how many voters.
    Raises NotFound for an unknown or decided review."""
    from arena.voting import trust

    with write_transaction():
        review = _undecided(review_id)
        voters = db.session.execute(select(Voter.id, Voter.earned_at).where(
            Voter.review_id == review.id)).all()
        db.session.execute(update(Voter).where(Voter.review_id == review.id)
                           .values(review_id=None))
        now = utcnow()
        for voter_id, earned in voters:
            if earned is not None:
                trust.admit(voter_id, now)
        review.decision, review.decided_at = "released", now
        return len(voters)


def keep_out(review_id: int, progress=None) -> int:
    """An operator's review: the cohort's waiting voters are held out (as the farm screen
    holds: :func:`arena.analysis.suspects.hold`). Returns how many voters. Raises NotFound
    for an unknown or decided review."""
    with write_transaction():
        review = _undecided(review_id)
        voters = db.session.scalars(select(Voter.public_id).where(
            Voter.review_id == review.id)).all()
        db.session.execute(update(Voter).where(Voter.review_id == review.id)
                           .values(review_id=None))
        review.decision, review.decided_at = "kept out", utcnow()
        reason = f"kept out with cohort review {review.id}: {review.reason}"
    suspects.hold(voters, progress, dict.fromkeys(voters, reason))
    return len(voters)


def _undecided(review_id: int) -> CohortReview:
    review = db.session.get(CohortReview, review_id)
    if review is None or review.decided_at is not None:
        raise NotFound(f"no cohort review {review_id} to decide")
    return review
