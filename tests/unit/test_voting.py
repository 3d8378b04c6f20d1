import numpy as np
import pytest
from sqlalchemy import select

from arena import matchmaking, voters, voting
from arena.extensions import db
from arena.models import Comparison, EloRating, Task, Vote, Voter


def voter_and_session(criterion="preference", seed=0, validation_rate=0.0):
    from flask import current_app

    current_app.config["VALIDATION_RATE"] = validation_rate
    voter, _ = voters.create_voter()
    db.session.commit()
    return voter, matchmaking.start_session(voter, np.random.default_rng(seed), criterion)


def ratings(criterion="preference"):
    return {
        r.model_id: (r.rating, r.votes, r.wins)
        for r in db.session.scalars(select(EloRating).where(EloRating.criterion == criterion))
    }


def test_vote_is_recorded_with_elo_and_counter(campaign):
    voter, session = voter_and_session()
    task = session.tasks[0]
    result = voting.cast_vote(voter, task.id, "left", 1234)
    assert result == voting.VoteResult(accepted=True)
    vote = db.session.scalar(select(Vote))
    assert vote.winner_image_id == task.left_image_id
    assert vote.response_ms == 1234
    assert db.session.get(Comparison, task.comparison_id).votes_count == 1
    r = ratings()
    assert r[vote.winner_model_id] == (1002.0, 1, 1)
    assert r[vote.loser_model_id] == (998.0, 1, 0)


def test_the_same_vote_twice_counts_once(campaign):
    voter, session = voter_and_session()
    task_id = session.tasks[0].id
    assert voting.cast_vote(voter, task_id, "right").accepted
    again = voting.cast_vote(voter, task_id, "left")
    assert again == voting.VoteResult(accepted=False, duplicate=True)
    assert len(db.session.scalars(select(Vote)).all()) == 1
    assert sum(v for _, v, _ in ratings().values()) == 2


def test_another_voters_task_is_refused(campaign):
    _, session = voter_and_session()
    stranger, _ = voters.create_voter()
    db.session.commit()
    with pytest.raises(voting.NotYourTask):
        voting.cast_vote(stranger, session.tasks[0].id, "left")
    with pytest.raises(voting.TaskNotFound):
        voting.cast_vote(stranger, 99999, "left")


@pytest.mark.parametrize("choice,ms", [("up", None), (None, None), ("left", -1),
                                       ("left", "12"), ("left", True), ("left", 10**9)])
def test_malformed_votes_are_refused(campaign, choice, ms):
    voter, session = voter_and_session()
    with pytest.raises(voting.InvalidVote):
        voting.cast_vote(voter, session.tasks[0].id, choice, ms)
    assert db.session.scalar(select(Vote)) is None


def test_wrong_validation_answer_lowers_trust_and_skips_elo(ctx, campaign):
    voter, session = voter_and_session("alignment", validation_rate=1.0)
    gold_task = next(t for t in session.tasks if t.comparison.is_validation)
    wrong_side = "left" if gold_task.left_image_id != gold_task.comparison.correct_image_id \
        else "right"
    before = ratings("alignment")
    result = voting.cast_vote(voter, gold_task.id, wrong_side)
    assert result.accepted and result.validation_failed
    db.session.expire_all()
    v = db.session.get(Voter, voter.id)
    assert v.validations_failed == 1 and v.trust == pytest.approx(0.75)
    assert ratings("alignment") == before
    assert db.session.scalar(select(Vote)).correct is False


def test_right_validation_answer_is_credited(campaign):
    voter, session = voter_and_session("coherence", validation_rate=1.0)
    gold_task = next(t for t in session.tasks if t.comparison.is_validation)
    right_side = "left" if gold_task.left_image_id == gold_task.comparison.correct_image_id \
        else "right"
    assert not voting.cast_vote(voter, gold_task.id, right_side).validation_failed
    db.session.expire_all()
    assert db.session.get(Voter, voter.id).validations_passed == 1


def test_replay_reproduces_online_elo_exactly(campaign):
    rng = np.random.default_rng(11)
    for seed in range(8):
        voter, session = voter_and_session(["preference", "coherence", "alignment"][seed % 3],
                                           seed, validation_rate=0.5)
        for task in session.tasks:
            voting.cast_vote(voter, task.id, ["left", "right"][int(rng.integers(2))])
    before = {c: ratings(c) for c in ("preference", "coherence", "alignment")}
    counters = dict(db.session.execute(select(Comparison.id, Comparison.votes_count)).all())
    assert any(r != 1000.0 for rows in before.values() for r, _, _ in rows.values())
    # Scramble the derived numbers, then rebuild them from the log.
    db.session.execute(EloRating.__table__.update().values(rating=0.0, votes=0, wins=0))
    db.session.execute(Comparison.__table__.update().values(votes_count=0, progress=0))
    db.session.commit()
    voting.replay()
    db.session.expire_all()
    assert {c: ratings(c) for c in before} == before  # bit-for-bit equal floats
    assert dict(db.session.execute(select(Comparison.id, Comparison.votes_count)).all()) \
        == counters


def test_answered_task_is_marked(campaign):
    voter, session = voter_and_session()
    voting.cast_vote(voter, session.tasks[1].id, "left")
    db.session.expire_all()
    assert db.session.get(Task, session.tasks[1].id).answered_at is not None
    assert matchmaking.open_task(session).id == session.tasks[0].id
