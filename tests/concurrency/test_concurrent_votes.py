"""Concurrent voters with real threads on the real databases: no vote lost or doubled, and the
online Elo equals a replay of the vote log in id order."""

import threading

import numpy as np
from sqlalchemy import func, select

from arena import matchmaking, voters, voting
from arena.extensions import db
from arena.models import Comparison, EloRating, Vote
from tests.factories import make_campaign

N_VOTERS = 8
SESSIONS_EACH = 4


def snapshot():
    return {
        (r.criterion, r.model_id): (r.rating, r.votes, r.wins)
        for r in db.session.scalars(select(EloRating))
    }


def test_concurrent_voters_lose_nothing_and_match_replay(any_app):
    app = any_app
    app.config["VALIDATION_RATE"] = 0.3
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4, images_per_model=2)
        voter_ids = []
        for _ in range(N_VOTERS):
            voter, _ = voters.create_voter()
            db.session.commit()
            voter_ids.append(voter.id)

    acknowledged = []
    duplicates = []
    errors = []
    barrier = threading.Barrier(N_VOTERS)

    def run(index: int, voter_id: int):
        rng = np.random.default_rng(index)
        try:
            with app.app_context():
                voter = db.session.get(voters.Voter, voter_id)
                barrier.wait()
                for _ in range(SESSIONS_EACH):
                    session = matchmaking.start_session(voter, rng)
                    for task in session.tasks:
                        choice = ["left", "right"][int(rng.integers(2))]
                        # every vote is sent twice, as a double tap would
                        for _attempt in range(2):
                            result = voting.cast_vote(voter, task.id, choice, 500)
                            (acknowledged if result.accepted else duplicates).append(task.id)
                db.session.remove()
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(i, v)) for i, v in enumerate(voter_ids)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(set(acknowledged)) == len(acknowledged)  # each task acknowledged once
    assert sorted(duplicates) == sorted(acknowledged)

    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Vote)) == len(acknowledged)
        assert db.session.scalar(select(func.sum(Comparison.votes_count))) == len(acknowledged)
        online = snapshot()
        rated = db.session.scalar(
            select(func.count()).select_from(Vote).where(Vote.is_validation.is_(False)))
        assert sum(v for _, v, _ in online.values()) == 2 * rated
        voting.replay()
        db.session.expire_all()
        assert snapshot() == online  # identical floats: ids were taken in lock order
