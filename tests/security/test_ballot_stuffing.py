"""Attacks on the count: a script that votes as fast as the server answers, a voter who keeps
voting after failing gold pairs, a page that lies about its response time."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import func, select

from arena.analysis.leaderboard import Slice, elo_table, rank_models
from arena.extensions import db
from arena.models import Comparison, EloRating, Vote, utcnow
from arena.voting import flags, live_elo, tasks, votes
from tests.factories import answer, make_campaign, new_voter, start
from tests.web.helpers import api_session, bearer

FLOORS = {"preference": 700, "coherence": 900, "alignment": 700}


def ratings(criterion="preference"):
    return {m: (r, n) for m, (r, n, _) in live_elo.ratings(criterion).items()}


def test_a_script_voting_as_fast_as_it_can_moves_nothing(make_app):
    """A load test had 1,736 of 5,072 votes arrive < 200 ms after issue, all
    counted. A script now gets its votes stored and acknowledged, flagged too fast, and
    neither the online Elo, the comparisons' quotas nor the rankings move."""
    app = make_app(MIN_VOTE_MS=FLOORS, VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
        before = ratings()
    client = app.test_client()
    body = api_session(client, {"criterion": "preference"}).json
    token = body["voter_token"]
    for _ in range(5):  # five sessions, every task answered the instant it arrives,
        for task in body["tasks"]:  # claiming a human-looking response time
            vote = client.post(f"/api/v1/tasks/{task['task_id']}/vote", headers=bearer(token),
                               json={"choice": "left", "response_ms": 2400})
            assert vote.status_code == 201
        body = api_session(client, {"criterion": "preference"}, token=token).json
    with app.app_context():
        stored = db.session.scalars(select(Vote)).all()
        assert len(stored) == 15
        assert all(v.flags & flags.TOO_FAST and v.server_ms < 700 for v in stored)
        assert all(v.response_ms == 2400 for v in stored)  # the page's claim, kept, unused
        assert ratings() == before
        assert db.session.scalar(select(func.sum(Comparison.votes_count))) == 0
        assert rank_models("preference", rounds=0).total_votes == 0
        assert rank_models("preference", rounds=0,
                           slice_=Slice(include_flagged=True)).total_votes == 15
        assert all(r.votes == 0 for r in elo_table("preference").rows)


def test_a_person_who_takes_their_time_is_counted(make_app):
    app = make_app(MIN_VOTE_MS=FLOORS, VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
        voter, session = start(criterion="coherence")
        task = session.tasks[0]
        shown = utcnow() - timedelta(seconds=10)
        tasks.present([task], now=shown)
        result = votes.cast_vote(voter, task.id, "left", now=shown + timedelta(milliseconds=950))
        assert result.accepted
        vote = db.session.scalar(select(Vote))
        assert vote.flags == 0 and vote.server_ms == 950
        assert sum(v for _, v in ratings("coherence").values()) == 2
        # the next task of the session is timed from that answer, not from the issue
        nxt = session.tasks[1]
        tasks.present([nxt], now=shown)
        votes.cast_vote(voter, nxt.id, "left", now=shown + timedelta(milliseconds=1200))
        second = db.session.scalar(select(Vote).where(Vote.task_id == nxt.id))
        assert second.server_ms == 250 and second.flags == flags.TOO_FAST


def test_a_voter_who_fails_gold_stops_moving_the_public_elo(ctx, campaign):
    """Voters who fail gold pairs must not move the public Elo."""
    voter, session = start(criterion="preference", validation_rate=1.0)
    gold = next(t for t in session.tasks if t.comparison.is_validation)
    wrong = "right" if gold.left_image_id == gold.comparison.correct_image_id else "left"
    answer(voter, gold, wrong)
    before = ratings()
    others = [t for t in session.tasks if not t.comparison.is_validation]
    for task in others:
        assert answer(voter, task, "left").accepted
    assert ratings() == before
    counted = db.session.scalars(select(Vote.flags).where(Vote.is_validation.is_(False)))
    assert set(counted) == {flags.DISTRUSTED}


def test_replay_applies_the_same_rule(make_app):
    app = make_app(MIN_VOTE_MS=FLOORS, VALIDATION_RATE=0.5)
    rng = np.random.default_rng(4)
    with app.app_context():
        make_campaign()
        clock = utcnow() - timedelta(hours=1)
        for seed in range(6):
            voter = new_voter()
            for _ in range(2):
                _, session = start(voter, criterion=None, seed=seed)
                for task in session.tasks:
                    slow = rng.random() < 0.6
                    clock += timedelta(seconds=1)
                    tasks.present([task], now=clock)
                    caption = tasks.caption_of(task)
                    if caption:
                        clock += timedelta(milliseconds=tasks.reveal_ms(caption))
                        tasks.confirm_read(voter, task.id, now=clock)
                    clock += timedelta(seconds=5 if slow else 0.1)
                    votes.cast_vote(voter, task.id, ["left", "right"][int(rng.integers(2))],
                                    now=clock)
        all_votes = db.session.scalars(select(Vote)).all()
        assert {v.flags == 0 for v in all_votes} == {True, False}  # both kinds present
        online = {c: ratings(c) for c in ("preference", "coherence", "alignment")}
        counters = dict(db.session.execute(select(Comparison.id, Comparison.votes_count)).all())
        db.session.execute(EloRating.__table__.update().values(rating=0.0, votes=0, wins=0))
        db.session.execute(Comparison.__table__.update().values(votes_count=0, level=0))
        db.session.commit()
        votes.replay()
        db.session.expire_all()
        assert {c: ratings(c) for c in online} == online
        assert dict(db.session.execute(select(Comparison.id, Comparison.votes_count)).all()) \
            == counters


@pytest.mark.parametrize("fmt", ["jsonl"])
def test_exports_say_which_votes_do_not_count(make_app, fmt):
    import json

    from arena.accounts import tokens

    app = make_app(MIN_VOTE_MS=FLOORS, VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
        voter, session = start(criterion="preference")
        votes.cast_vote(voter, session.tasks[0].id, "left")
        token = tokens.create_token("ana")
    with app.test_client().get(f"/api/v1/votes?format={fmt}",
                               headers=bearer(token)) as response:
        row = json.loads(response.get_data(as_text=True).splitlines()[0])
    assert row["flags"] == "too_fast" and row["server_ms"] < 700
