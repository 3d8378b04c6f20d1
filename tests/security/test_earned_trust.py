"""A farm of fresh identities, gold answered right, votes its model up within minutes: its
votes count in no public figure, however many identities, until each has answered gold
right on separate visits (arena.voting.trust); an honest voter who comes back the next day
earns it, and every vote of theirs counts from then on."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from sqlalchemy import func, select

from arena.analysis.leaderboard import rank_models
from arena.campaigns.progress import progress
from arena.extensions import db
from arena.models import Vote, Voter, utcnow
from arena.voting import matchmaking, votes
from tests.factories import make_campaign, new_voter, time_passes
from tests.security.test_gold import publish_live

TRUST = {"EARN_TRUST_GOLD": 2, "EARN_TRUST_HOURS": 20, "VALIDATION_RATE": 1.0}


def _session(voter, criterion: str, now, favour: str | None = None, right: bool = True,
             seed: int = 0) -> int:
    """One session of ``voter`` at ``now`` (a simulated clock, a few seconds a vote): the
    gold pair answered ``right``, ``favour``'s image picked whenever shown, else the left.
    Returns the ordinary votes cast."""
    session = matchmaking.start_session(voter, np.random.default_rng(seed), criterion)
    cast = 0
    for task in session.tasks:
        now += timedelta(seconds=3)
        comparison = task.comparison
        if comparison.is_validation:
            good = "left" if comparison.correct_image_id == task.left_image_id else "right"
            choice = good if right else ("right" if good == "left" else "left")
        else:
            choice = ("right" if favour and task.right_image.model.name == favour else "left")
            cast += 1
        votes.cast_vote(voter, task.id, choice, 2000, now=now)
    return cast


def _public_votes() -> int:
    return rank_models("preference", rounds=0, public=True).total_votes


def _live_votes() -> int:
    return rank_models("preference", rounds=0).total_votes


def test_a_farm_of_fresh_identities_moves_no_public_figure_before_it_earns_trust(make_app):
    app = make_app(**TRUST, REVEAL_WORD_MS=0)
    with app.app_context():
        campaign = publish_live()
        now = utcnow()
        farm = []
        for k in range(12):  # gold right every time, minutes apart: no visit of another day
            voter = new_voter()
            farm.append(voter.id)
            for criterion in ("preference", "coherence"):
                _session(voter, criterion, now + timedelta(minutes=k), favour="C", seed=k)
        time_passes()
        assert _live_votes() > 0
        assert _public_votes() == 0
        assert db.session.scalar(select(func.count()).where(
            Vote.voter_id.in_(farm), Vote.public_at.is_not(None))) == 0
        assert all(v.earned_at is None for v in db.session.scalars(select(Voter)))
        report = progress(campaign)
        waiting = {why: (n, voters) for why, n, voters in report.waiting}
        assert waiting["trust"][1] == 12 and waiting["trust"][0] > 0


def test_a_voter_who_comes_back_the_next_day_with_gold_right_earns_trust(make_app):
    app = make_app(**TRUST)
    with app.app_context():
        make_campaign(n_prompts=4, n_models=4)
        first_day = utcnow() - timedelta(days=2)
        voter = new_voter()
        _session(voter, "preference", first_day)
        voter = db.session.get(Voter, voter.id)
        assert voter.first_gold_at is not None and voter.earned_at is None
        _session(voter, "coherence", first_day + timedelta(hours=21))
        voter = db.session.get(Voter, voter.id)
        assert voter.earned_at is not None
        # every vote of theirs counts from the answer that earned it, the earlier ones too
        stamps = db.session.scalars(select(Vote.public_at).where(Vote.voter_id == voter.id))
        assert all(stamp is not None and stamp >= voter.earned_at for stamp in stamps)
        _session(voter, "preference", first_day + timedelta(hours=22), seed=3)
        time_passes()
        cast = db.session.scalar(select(func.count()).where(
            Vote.voter_id == voter.id, Vote.criterion == "preference",
            Vote.is_validation.is_(False)))
        assert _public_votes() == _live_votes() == cast > 2


def test_gold_right_twice_the_same_day_or_a_failed_gold_pair_earns_nothing(make_app):
    app = make_app(**TRUST)
    with app.app_context():
        make_campaign(n_prompts=4, n_models=4)
        start = utcnow() - timedelta(days=2)
        hasty = new_voter()
        _session(hasty, "preference", start)
        _session(hasty, "coherence", start + timedelta(hours=19))
        assert db.session.get(Voter, hasty.id).earned_at is None
        careless = new_voter()
        _session(careless, "preference", start, right=False)
        _session(careless, "coherence", start + timedelta(hours=21))
        assert db.session.get(Voter, careless.id).earned_at is None  # (trust under the floor)


def test_a_panels_participants_and_everyone_without_the_rule_are_trusted_from_the_start(
        make_app):
    from arena.campaigns import panels

    app = make_app(**TRUST)
    with app.app_context():
        key = panels.open_panel(publish_live(), "DONE-1")
        participant = panels.admit(key, {"PROLIFIC_PID": "p-1", "STUDY_ID": "s",
                                         "SESSION_ID": "x"})
        assert participant.earned_at is not None
        assert new_voter().earned_at is None
        app.config["EARN_TRUST_GOLD"] = 0
        assert new_voter().earned_at is not None
