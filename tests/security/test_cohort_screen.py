"""A farm shaped to the per-voter screen's thresholds: many identities, a few votes each, at
most a few on the target's pairs (a voter's score needs five games with a model), the rest
with the crowd. Each passes alone; the voters new in the period together do not: the rollup
timer opens a cohort review, the farm's votes wait out of public figures until an operator
looks, and no voter is held by the cohort's signal. Framing: identities of an attacker on
the network of honest voters with a taste of their own hold none of them."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from sqlalchemy import func, select, update

from arena.analysis import cohorts, published
from arena.analysis.leaderboard import rank_models
from arena.analysis.suspects import suspects
from arena.extensions import db
from arena.models import CohortReview, Vote, Voter
from arena.voting import matchmaking
from tests.factories import answer, make_campaign, new_voter, vote_as

ORDER = ["model-0", "model-1", "model-2", "model-3"]
TARGET = "model-3"


def _at(voter_ids, when) -> None:
    """These voters, and their votes (order kept), as if first seen at ``when``."""
    votes = db.session.scalars(select(Vote).where(Vote.voter_id.in_(voter_ids))
                               .order_by(Vote.id)).all()
    for k, vote in enumerate(votes):
        vote.created_at = vote.public_at = when + timedelta(seconds=2 * k)
    db.session.execute(update(Voter).where(Voter.id.in_(voter_ids))
                       .values(created_at=when, earned_at=when))
    db.session.commit()


STRENGTH = {"model-0": 0.9, "model-1": 0.3, "model-2": -0.3, "model-3": -0.9}


def _crowd(rng, count: int, seed: int, taste: dict | None = None, sessions: int = 4
           ) -> list[int]:
    """Honest voters who pick by the crowd's Bradley-Terry strengths (and a taste of their
    own, sd 0.3 per model), ``sessions`` each."""
    ids = []
    for k in range(count):
        voter = new_voter()
        own = {m: s + 0.3 * rng.normal() + (taste or {}).get(m, 0.0)
               for m, s in STRENGTH.items()}
        for _ in range(sessions):
            try:
                session = matchmaking.start_session(voter, np.random.default_rng(seed + k),
                                                    "preference")
            except matchmaking.NoTasksAvailable:
                break
            for task in session.tasks:
                left, right = task.left_image.model.name, task.right_image.model.name
                p_left = 1 / (1 + np.exp(own[right] - own[left]))
                answer(voter, task, "left" if rng.random() < p_left else "right")
        ids.append(voter.id)
    return ids


def _farm_identity(seed: int, on_target: int = 3, sessions: int = 2) -> int:
    """``sessions``: the target's image whenever shown, up to ``on_target`` times, the
    crowd's order otherwise."""
    voter = new_voter()
    rng = np.random.default_rng(seed)
    rank = {name: k for k, name in enumerate(ORDER)}
    backed = 0
    for _ in range(sessions):
        try:
            session = matchmaking.start_session(voter, rng, "preference")
        except matchmaking.NoTasksAvailable:
            break
        for task in session.tasks:
            left, right = task.left_image.model.name, task.right_image.model.name
            if TARGET in (left, right) and backed < on_target:
                backed += 1
                answer(voter, task, "left" if left == TARGET else "right")
            else:
                answer(voter, task, "left" if rank[left] < rank[right] else "right")
    return voter.id


def _board() -> dict[str, tuple]:
    board = rank_models("preference", intervals="instant", public=True, include_idle=False)
    return {m.model: (m.rank, m.rank_best, m.rank_worst, m.rating) for m in board.models}


def test_a_wide_thin_farm_waits_out_of_public_figures_until_an_operator_looks(app, runner):
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(7)
    period = timedelta(seconds=app.config["PUBLISHED_PERIOD_S"])
    with app.app_context():
        make_campaign(n_prompts=4, n_models=4)
        cut = published.cutoff()
        crowd = _crowd(rng, 60, seed=0)
        _at(crowd, cut - timedelta(days=3))
        newcomers = _crowd(rng, 9, seed=500)
        _at(newcomers, cut - period / 2)
        published.forget()
        clean = _board()
        farm = [_farm_identity(900 + k) for k in range(40)]
        _at(farm, cut - period / 2)
        # each identity passes the per-voter screen alone
        named = {s.public_id for s in suspects("preference")}
        assert not named & set(db.session.scalars(select(Voter.public_id).where(
            Voter.id.in_(farm))))
        published.forget()
        bought = _board()
    assert bought[TARGET][3] > clean[TARGET][3] + 60  # what the farm bought, counted
    timer = runner.invoke(args=["votes", "rollup"])
    assert timer.exit_code == 0, timer.output
    assert "cohort reviews opened" in timer.output, timer.output
    with app.app_context():
        assert db.session.scalar(select(func.count()).where(Voter.held_at.is_not(None))) == 0
        review = db.session.scalar(select(CohortReview))
        assert review.criterion == "preference" and TARGET in review.reason, review.reason
        waiting = set(db.session.scalars(select(Voter.id).where(
            Voter.review_id == review.id)))
        assert len(waiting & set(farm)) >= 20 and len(waiting - set(farm)) <= 3, waiting
        after = _board()
        for model, (_, best, worst, _) in clean.items():
            assert best <= after[model][0] <= worst, (model, clean, after)
        assert after[TARGET][3] < clean[TARGET][3] + 30
        listed = cohorts.reviews(open_only=True)
        assert [r.id for r in listed] == [review.id]
        assert any(s["kind"] == "model" and s["models"] == [TARGET] and s["z"] > 4
                   for s in listed[0].evidence["statistics"])

    shown = runner.invoke(args=["votes", "cohorts"])
    assert shown.exit_code == 0 and f"#{review.id}" in shown.output and TARGET in shown.output
    kept = runner.invoke(args=["votes", "cohort-keep-out", str(review.id)])
    assert kept.exit_code == 0, kept.output
    with app.app_context():
        held = set(db.session.scalars(select(Voter.id).where(Voter.held_at.is_not(None))))
        assert held == waiting  # an operator's verdict, on the review's evidence
        assert db.session.get(CohortReview, review.id).decision == "kept out"


def test_a_busy_farm_hidden_among_many_light_newcomers_waits(app, runner):
    """30 identities of three sessions, three of their nine votes for the target, among 150
    honest newcomers of one session each: the period's newcomers as a whole hold the farm
    with the honest newcomers' noise (z 3.8, under the line); their busier half is the
    farm (z 10.7), and it waits."""
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(9)
    period = timedelta(seconds=app.config["PUBLISHED_PERIOD_S"])
    with app.app_context():
        make_campaign(n_prompts=4, n_models=4)
        cut = published.cutoff()
        _at(_crowd(rng, 60, seed=0), cut - timedelta(days=3))
        light = _crowd(rng, 150, seed=2000, sessions=1)
        farm = [_farm_identity(3000 + k, sessions=3) for k in range(30)]
        _at(light + farm, cut - period / 2)
        published.forget()
    timer = runner.invoke(args=["votes", "rollup"])
    assert timer.exit_code == 0, timer.output
    with app.app_context():
        found = db.session.scalars(select(CohortReview).order_by(CohortReview.id)).all()
        assert [r.kind for r in found] == ["period busy"], [r.reason for r in found]
        waiting = set(db.session.scalars(select(Voter.id).where(
            Voter.review_id == found[0].id)))
        assert len(waiting & set(farm)) >= 15 and len(waiting - set(farm)) <= 3, waiting
        assert db.session.scalar(select(func.count()).where(Voter.held_at.is_not(None))) == 0


def test_an_operator_releases_a_cohort_on_the_page_and_its_voters_cannot(app, runner,
                                                                       client):
    from arena.accounts import tokens
    from tests.web.helpers import csrf_token
    from tests.web.test_campaign_pages import sign_in

    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(8)
    period = timedelta(seconds=app.config["PUBLISHED_PERIOD_S"])
    with app.app_context():
        make_campaign(n_prompts=4, n_models=4)
        cut = published.cutoff()
        _at(_crowd(rng, 60, seed=0), cut - timedelta(days=3))
        farm = [_farm_identity(700 + k) for k in range(40)]
        _at(farm, cut - period / 2)
        published.forget()
    assert "cohort reviews opened" in runner.invoke(args=["votes", "rollup"]).output
    with app.app_context():
        review = db.session.scalar(select(CohortReview))
        review_id, voters = review.id, review.voters
        token = tokens.create_token("ops", role="operator")
    # a waiting identity posts its cohort's release: refused, still waiting
    assert client.post(f"/admin/cohorts/{review_id}/release").status_code in (302, 400)
    assert sign_in(client, token).status_code == 303
    page = client.get("/admin/").get_data(as_text=True)
    assert f"#{review_id}</strong>" in page and "Gaps it moved" in page
    done = client.post(f"/admin/cohorts/{review_id}/release",
                       data={"csrf_token": csrf_token(page)}, follow_redirects=True)
    assert f"{voters} voter(s) released" in done.get_data(as_text=True)
    with app.app_context():
        assert db.session.get(CohortReview, review_id).decision == "released"
        assert db.session.scalar(select(func.count()).where(
            Voter.review_id.is_not(None))) == 0
        # their votes count again, from the release on
        assert db.session.scalar(select(func.count()).where(
            Vote.voter_id.in_(farm), Vote.public_at.is_(None))) == 0
        assert runner.invoke(args=["votes", "cohort-release", str(review_id)]).exit_code != 0


def test_attackers_on_honest_voters_network_hold_none_of_them(app, runner):
    """Five honest voters of one network (a university's, a carrier's) like model-2 more
    than the crowd does; five identities of an attacker join their network and vote model-2
    up in every pair. The network's signal names only voters whose own votes cross the line
    a voter alone must cross: not the honest five."""
    from arena.infra.network import network_hash

    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(4)
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4)
        _crowd(rng, 40, seed=0)
        shared = network_hash(app.config["SECRET_KEY"], "203.0.113.9")
        honest = _crowd(rng, 5, seed=300, taste={"model-2": 0.5})
        attackers = [vote_as({}, ["model-2", "model-0", "model-1", "model-3"], sessions=5,
                             seed=400 + k).id for k in range(5)]
        db.session.execute(update(Voter).where(Voter.id.in_(honest + attackers))
                           .values(network=shared))
        db.session.commit()
        honest = db.session.scalars(select(Voter.public_id).where(Voter.id.in_(honest))).all()
        named = {s.public_id for s in suspects("preference")}
    assert not named & set(honest), named
