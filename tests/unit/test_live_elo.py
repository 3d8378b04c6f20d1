"""The live Elo is the vote log replayed in id order: from a checkpoint that the period's
tick moves on over settled votes, and a reading that replays what came after it."""

from datetime import timedelta

from sqlalchemy import func, select

from arena.extensions import db
from arena.models import EloCheckpoint, EloRating, Vote, utcnow
from arena.voting import live_elo
from tests.factories import answer, make_campaign, new_voter, start


def _vote(sessions: int, seed: int = 0) -> None:
    voter = new_voter()
    for k in range(sessions):
        _, session = start(voter, "preference", seed=seed + k, validation_rate=0.0)
        for n, task in enumerate(session.tasks):
            answer(voter, task, "left" if (n + k) % 2 else "right")


def _whole_log() -> dict:
    """Every rated model's Elo, the whole log replayed from the initial rating."""
    rated = db.session.scalars(select(EloRating.model_id).where(
        EloRating.criterion == "preference"))
    return live_elo.replayed("preference", live_elo.elo_params(),
                             start={m: [live_elo.elo_params().initial, 0, 0] for m in rated})


def test_a_reading_is_the_whole_log_replayed_wherever_the_checkpoint_is(ctx):
    make_campaign(n_prompts=4)
    _vote(3)
    assert live_elo.ratings("preference") == _whole_log()  # (no checkpoint yet)
    assert live_elo.behind() == 9
    assert live_elo.advance(utcnow() + timedelta(hours=1)) == {
        "preference": 9, "coherence": 0, "alignment": 0}
    through = db.session.scalar(select(EloCheckpoint.through_vote_id).where(
        EloCheckpoint.criterion == "preference"))
    assert through == db.session.scalar(select(func.max(Vote.id)))
    assert live_elo.behind() == 0
    stored = {m: [r, n, w] for m, r, n, w in db.session.execute(select(
        EloRating.model_id, EloRating.rating, EloRating.votes, EloRating.wins).where(
        EloRating.criterion == "preference"))}
    assert stored == _whole_log()  # (the same floats)
    _vote(2, seed=10)  # (after the checkpoint: a reading replays them from it)
    assert live_elo.ratings("preference") == _whole_log() != stored
    assert live_elo.advance(utcnow() + timedelta(hours=1))["preference"] == 6
    assert live_elo.advance(utcnow() + timedelta(hours=1))["preference"] == 0  # (taken)
    assert live_elo.ratings("preference") == _whole_log()


def test_the_checkpoint_takes_only_votes_settled_for_two_minutes(ctx):
    """A vote of the last two minutes may sit behind one with a higher id that has not
    committed yet: the checkpoint stops before it, and readings still count it."""
    make_campaign(n_prompts=4)
    _vote(1)
    assert live_elo.advance()["preference"] == 0
    assert live_elo.behind() == 3
    assert sum(row[1] for row in live_elo.ratings("preference").values()) == 2 * 3
    assert live_elo.advance(utcnow() + timedelta(minutes=3))["preference"] == 3
