"""Attacks on the clock: open many sessions, wait once, answer them all back to back; send
one session's votes at the same instant; read twenty captions in the time of one. One voter
has one clock (arena.voting.pacing)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from arena import criteria
from arena.extensions import db
from arena.models import Task, Vote, Voter, utcnow
from arena.voting import flags, live_elo, tasks, votes
from tests.factories import make_campaign, new_voter, start
from tests.timing import seconds

FLOORS = {"preference": 700, "coherence": 900, "alignment": 700}


def test_many_sessions_one_wait_counts_once(make_app):
    """The attack opens 20 sessions, waited 0.75 s, and answered the first task of each back
    to back: 60 of 60 votes counted, 7.7 ms apart. Now the floor runs from the voter's last
    vote in any session."""
    app = make_app(MIN_VOTE_MS=FLOORS, VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
        voter = new_voter()
        sessions = [start(voter, criterion="preference", seed=k)[1] for k in range(5)]
        opened = utcnow() - timedelta(seconds=30)
        firsts = [s.tasks[0] for s in sessions]
        tasks.present(firsts, now=opened)
        clock = opened + timedelta(milliseconds=750)
        for task in firsts:  # all shown together, answered 8 ms apart after one wait
            votes.cast_vote(voter, task.id, "left", now=clock)
            clock += timedelta(milliseconds=8)
        stored = db.session.scalars(select(Vote).order_by(Vote.id)).all()
        assert len(stored) == 5
        assert [v.flags & flags.TOO_FAST for v in stored] == [0] + [flags.TOO_FAST] * 4
        # a person pausing between answers is counted, whichever session the task is in
        second = sessions[0].tasks[1]
        tasks.present([second], now=clock)
        clock += timedelta(seconds=2)
        votes.cast_vote(voter, second.id, "left", now=clock)
        last = db.session.scalar(select(Vote).order_by(Vote.id.desc()))
        assert last.flags == 0 and last.server_ms >= 700


def test_a_session_voted_all_at_once_counts_one_vote(any_app):
    """The race: the three tasks of one session voted at the same instant by three requests
    (real threads, real database). Each used to read 'previous answer' before the others
    committed, so 16 of 24 counted; now one does."""
    app = any_app
    app.config.update(MIN_VOTE_MS=FLOORS, VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
        voter = new_voter()
        rounds = []
        for k in range(4):
            _, session = start(voter, criterion="preference", seed=k)
            rounds.append([t.id for t in session.tasks])
        voter_id = voter.id
        begin = utcnow() - timedelta(minutes=10)
        tasks.present(db.session.scalars(select(Task)).all(), now=begin)
    errors = []

    def vote(task_id, at):
        try:
            with app.app_context():
                votes.cast_vote(db.session.get(Voter, voter_id), task_id, "left", now=at)
                db.session.remove()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    for k, task_ids in enumerate(rounds):
        at = begin + timedelta(seconds=10 * (k + 1))  # a long wait, then three at once
        threads = [threading.Thread(target=vote, args=(t, at + timedelta(milliseconds=j)))
                   for j, t in enumerate(task_ids)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=seconds(60))
    assert not errors, errors
    with app.app_context():
        stored = db.session.scalars(select(Vote)).all()
        assert len(stored) == 12
        assert sum(1 for v in stored if v.flags == 0) == 4  # one per round
        # only the counted ones moved the ratings, as a replay of the log moves them, and
        # the voter's clock holds the last of the three
        online = {(c, m): (r, n) for c in criteria.names()
                  for m, (r, n, _) in live_elo.ratings(c).items()}
        assert sum(n for _, n in online.values()) == 2 * 4
        votes.replay()
        db.session.expire_all()
        assert {(c, m): (r, n) for c in criteria.names()
                for m, (r, n, _) in live_elo.ratings(c).items()} == online
        assert db.session.get(Voter, voter_id).last_action_at == max(v.created_at for v in stored)


def test_captions_are_read_one_at_a_time(make_app):
    """The attack waits once for the longest reveal and then confirmed 60 captions in 8.7 s
    (131 s of reading). Now each caption's reveal starts after the voter's last action."""
    app = make_app(MIN_VOTE_MS=FLOORS, VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
        voter = new_voter()
        firsts = [start(voter, criterion="alignment", seed=k)[1].tasks[0] for k in range(5)]
        shown = utcnow() - timedelta(minutes=5)
        tasks.present(firsts, now=shown)
        longest = max(tasks.reveal_ms(tasks.caption_of(t)) for t in firsts)
        clock = shown + timedelta(milliseconds=longest)
        tasks.confirm_read(voter, firsts[0].id, now=clock)
        for task in firsts[1:]:
            with pytest.raises(tasks.StillRevealing) as refused:
                tasks.confirm_read(voter, task.id, now=clock + timedelta(milliseconds=50))
            assert refused.value.details["retry_after_ms"] > 0
        # after reading it (its reveal, from the last confirmation), the next one passes
        db.session.refresh(voter)
        need = tasks.reveal_ms(tasks.caption_of(firsts[1]))
        tasks.confirm_read(voter, firsts[1].id, now=clock + timedelta(milliseconds=need))
        assert db.session.get(Task, firsts[1].id).read_confirmed_at is not None
