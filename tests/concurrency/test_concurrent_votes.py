"""Concurrent voters with real threads on the real databases: no vote lost or doubled, and the
online Elo equals a replay of the vote log in id order."""

import threading
import time
from datetime import timedelta

import numpy as np
from sqlalchemy import func, select

from arena.extensions import db
from arena.models import Comparison, Vote, Voter, utcnow
from arena.voting import live_elo, matchmaking, votes
from tests.factories import make_campaign, new_voter, read_caption, start
from tests.timing import seconds

N_VOTERS = 8
SESSIONS_EACH = 4


def snapshot():
    return live_elo.every_rating()


def test_concurrent_voters_lose_nothing_and_match_replay(any_app):
    app = any_app
    app.config["VALIDATION_RATE"] = 0.3
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4, images_per_model=2)
        voter_ids = [new_voter().id for _ in range(N_VOTERS)]

    acknowledged = []
    duplicates = []
    errors = []
    barrier = threading.Barrier(N_VOTERS)

    def run(index: int, voter_id: int):
        rng = np.random.default_rng(index)
        try:
            with app.app_context():
                voter = db.session.get(Voter, voter_id)
                barrier.wait()
                for _ in range(SESSIONS_EACH):
                    session = matchmaking.start_session(voter, rng)
                    for task in session.tasks:
                        read_caption(voter, task)
                        choice = ["left", "right"][int(rng.integers(2))]
                        # every vote is sent twice, as a double tap would
                        for _attempt in range(2):
                            result = votes.cast_vote(voter, task.id, choice, 500)
                            (acknowledged if result.accepted else duplicates).append(task.id)
                db.session.remove()
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(i, v)) for i, v in enumerate(voter_ids)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds(120))
    assert not errors, errors
    assert len(set(acknowledged)) == len(acknowledged)  # each task acknowledged once
    assert sorted(duplicates) == sorted(acknowledged)

    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Vote)) == len(acknowledged)
        # votes of voters who failed a gold pair are kept but do not count
        counted = db.session.scalar(select(func.count()).select_from(Vote)
                                    .where(Vote.flags == 0))
        assert db.session.scalar(select(func.sum(Comparison.votes_count))) == counted
        online = snapshot()
        rated = db.session.scalar(select(func.count()).select_from(Vote).where(
            Vote.is_validation.is_(False), Vote.flags == 0))
        assert sum(v for _, v, _ in online.values()) == 2 * rated
        # (the live Elo is the log replayed: from a checkpoint taken now, or rebuilt whole,
        # the same floats)
        live_elo.advance(utcnow() + timedelta(hours=1))
        db.session.expire_all()
        assert snapshot() == online
        votes.replay()
        db.session.expire_all()
        assert snapshot() == online


def test_one_voter_racing_for_sessions_never_gets_a_comparison_twice(any_app):
    """Matchmaking reads happen before the write lock now, so threads of one voter starting
    sessions at once often pick the same least-served comparisons. The unique (voter,
    comparison) constraint refuses the later insert and that thread picks again: every
    session is issued, no comparison twice, and the issued counters add up."""
    from arena.models import Task

    app = any_app
    app.config["VALIDATION_RATE"] = 0.0
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4, images_per_model=2, gold=False)
        voter_id = new_voter().id
    threads_n, each = 6, 3
    issued, errors = [], []
    barrier = threading.Barrier(threads_n)

    def run(index: int):
        rng = np.random.default_rng(100 + index)
        try:
            with app.app_context():
                voter = db.session.get(Voter, voter_id)
                barrier.wait()
                for _ in range(each):
                    session = matchmaking.start_session(voter, rng, "preference")
                    issued.extend(t.comparison_id for t in session.tasks)
                db.session.remove()
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds(120))
    assert not errors, errors
    assert len(issued) == threads_n * each * app.config["TASKS_PER_SESSION"]
    assert len(set(issued)) == len(issued)  # never the same comparison twice
    with app.app_context():
        stored = db.session.scalars(select(Task.comparison_id)
                                    .where(Task.voter_id == voter_id)).all()
        assert sorted(stored) == sorted(issued)
        assert db.session.scalar(select(func.sum(Comparison.issued))) == len(issued)


def test_a_vote_held_up_by_a_lock_is_stamped_once_it_holds_it(any_app):
    """The public pages count what was stamped before their cut-off, taken two minutes after
    it (arena.analysis.published.SETTLED): a vote must commit within moments of its stamp.
    One that came while another transaction held the lock it needs (SQLite's writer; on
    PostgreSQL the voter's row) is stamped once it got it, not when it came; its pacing
    still counts from when it came."""
    app = any_app
    with app.app_context():
        make_campaign(n_prompts=2, n_models=2, images_per_model=1)
        voter, session = start(criterion="preference", validation_rate=0.0)
        voter_id, task_id = voter.id, session.tasks[0].id
        holder = db.engine.raw_connection()
        cursor = holder.cursor()
        if db.engine.dialect.name == "sqlite":
            cursor.execute("BEGIN IMMEDIATE")
        else:
            cursor.execute("SELECT id FROM voter WHERE id = %s FOR UPDATE", (voter_id,))
    came, results = utcnow(), []

    def vote():
        with app.app_context():
            voter = db.session.get(Voter, voter_id)
            results.append(votes.cast_vote(voter, task_id, "left", 900))
            db.session.remove()

    voting = threading.Thread(target=vote)
    voting.start()
    time.sleep(1.0)
    released = utcnow()
    holder.rollback()
    holder.close()
    voting.join(timeout=seconds(60))
    assert results and results[0].accepted
    with app.app_context():
        stamp = db.session.scalar(select(Vote.created_at).where(Vote.task_id == task_id))
        assert stamp >= released
        paced_from = db.session.get(Voter, voter_id).last_action_at
        assert came <= paced_from < released
