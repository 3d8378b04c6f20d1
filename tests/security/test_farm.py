"""A farm of patient identities, each inside every limit, votes its model up in every pair
it meets: the identities are named for an operator (arena votes suspects), honest voters
with tastes of their own are not, and once held out their votes count nowhere."""

from __future__ import annotations

import re
import time

import numpy as np
from sqlalchemy import func, select

from arena.analysis import rollups
from arena.analysis import suspects as screen
from arena.analysis.leaderboard import online_elo, rank_models
from arena.analysis.suspects import suspects
from arena.extensions import db
from arena.models import RankingRollup, Vote, Voter
from arena.voting import matchmaking
from arena.voting.flags import HELD
from tests import timing
from tests.factories import answer, make_campaign, time_passes, vote_as

ORDER = ["model-0", "model-1", "model-2", "model-3"]


def _ratings() -> dict[str, float]:
    return {m.model: m.rating for m in rank_models("preference", intervals="instant").models}


def _crowd(rng) -> list[str]:
    """30 honest voters of the crowd's order, a neighbouring pair swapped by some: their
    public ids."""
    honest = []
    for k in range(30):
        order = list(ORDER)
        if k % 3 == 0:
            i = int(rng.integers(0, 3))
            order[i], order[i + 1] = order[i + 1], order[i]
        honest.append(vote_as({}, order, sessions=4, seed=k).public_id)
    return honest


def test_a_farm_is_named_then_held_out_of_every_ranking(app, runner):
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(0)
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4)
        honest = _crowd(rng)
        clean = _ratings()
        farm = [vote_as({}, ["model-3", *ORDER[:3]], sessions=8, seed=100 + k).public_id
                for k in range(8)]
        bought = _ratings()
        found = suspects("preference")
        elo_bought = online_elo("preference")["model-3"]
    assert bought["model-3"] > clean["model-3"] + 50  # what the farm bought
    assert {s.public_id for s in found} == set(farm), found
    assert all(s.model == "model-3" and s.z > 3 and s.votes >= 6 for s in found)

    listed = runner.invoke(args=["votes", "suspects", "--criterion", "preference", "--hold"])
    assert listed.exit_code == 0, listed.output
    assert "8 voters favour a model beyond the crowd" in listed.output
    assert all(public_id in listed.output for public_id in farm)
    assert not any(public_id in listed.output for public_id in honest)
    assert "8 voters held out" in listed.output
    with app.app_context():
        assert _ratings() == clean  # the ratings the farm bought are undone
        farm_ids = db.session.scalars(select(Voter.id).where(Voter.public_id.in_(farm))).all()
        flags = db.session.scalars(select(Vote.flags).where(Vote.voter_id.in_(farm_ids))).all()
        assert flags and all(f & HELD for f in flags)
        assert db.session.scalar(select(RankingRollup.criterion)) is None  # built again
        rollups.refresh()
        rebuilt = _ratings()  # and from the rebuilt rollup
        assert all(abs(rebuilt[m] - clean[m]) < 1e-6 for m in clean)
        assert online_elo("preference")["model-3"] < elo_bought  # replayed without them
        # a held voter's next vote is held too
        voter = db.session.scalar(select(Voter).where(Voter.public_id == farm[0]))
        session = matchmaking.start_session(voter, np.random.default_rng(5), "preference")
        answer(voter, session.tasks[0], "left")
        assert db.session.scalar(select(Vote.flags).where(
            Vote.task_id == session.tasks[0].id)) & HELD
    assert "8 voters held out" in runner.invoke(args=["votes", "held"]).output

    released = runner.invoke(args=["votes", "release", *farm])
    assert released.exit_code == 0 and "8 voters released" in released.output
    with app.app_context():
        assert _ratings()["model-3"] > clean["model-3"] + 50  # counted again
        assert not any(f & HELD for f in db.session.scalars(select(Vote.flags)))


def test_the_rollup_timer_holds_a_farm_out_and_respects_a_release(app, runner):
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(1)
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4)
        _crowd(rng)
        farm = sorted(vote_as({}, ["model-3", *ORDER[:3]], sessions=8, seed=200 + k).public_id
                      for k in range(8))
        time_passes()  # (the screen reads the votes before the period's cut-off)
    timer = runner.invoke(args=["votes", "rollup"])
    assert timer.exit_code == 0, timer.output
    assert (f"the farm screen held out 8 voters this period: {', '.join(farm)}"
            in timer.output), timer.output
    with app.app_context():
        held = set(db.session.scalars(select(Voter.public_id).where(
            Voter.held_at.is_not(None))))
        assert held == set(farm)
    listed = runner.invoke(args=["votes", "held"]).output
    assert "8 voters held out" in listed
    for public_id in farm:  # each with what the screen found, for the operator's review
        line = next(row for row in listed.splitlines() if row.startswith(public_id))
        assert re.search(r"preference: favours model-3 \(z \d+\.\d over \d+ votes\)", line), line
    # the same period: the screen has run (it says what it did); a release by an operator
    # outlives the next periods' screens
    assert "held out 8 voters this period" in runner.invoke(args=["votes", "rollup"]).output
    assert runner.invoke(args=["votes", "release", farm[0]]).exit_code == 0
    with app.app_context():
        from arena.analysis import published

        published.forget()  # (as a new period would)
    again = runner.invoke(args=["votes", "rollup"])
    # (with the farm out, the crowd's strengths move: an honest voter of a strong taste of
    # their own may be named now, as in any period; the released identity is not)
    assert again.exit_code == 0 and "the farm screen held out" in again.output, again.output
    assert farm[0] not in again.output and not set(farm[1:]) & set(again.output.split())
    with app.app_context():
        assert db.session.scalar(select(Voter.held_at).where(Voter.public_id == farm[0])) is None


def test_the_operator_page_lists_the_voters_held_out(app, client):
    from arena.accounts import tokens
    from arena.analysis import suspects
    from tests.factories import new_voter
    from tests.web.test_campaign_pages import sign_in

    with app.app_context():
        token = tokens.create_token("ops", role="operator")
        public_id = new_voter().public_id
    assert sign_in(client, token).status_code == 303
    assert "None. The hourly rollup holds out" in client.get("/admin/").get_data(as_text=True)
    with app.app_context():
        assert suspects.hold([public_id], reasons={public_id: "preference: favours X"}) == 1
        other = new_voter().public_id
        assert suspects.hold([other]) == 1
    page = client.get("/admin/").get_data(as_text=True)
    assert f"<code>{public_id}</code> · 0 vote(s) · held " in page and "arena votes release" in page
    assert "preference: favours X" in page and "held by an operator" in page
    with app.app_context():
        assert suspects.release([public_id]) == 1
        assert db.session.scalar(select(Voter.held_reason).where(
            Voter.public_id == public_id)) is None


def test_the_operator_reviews_each_hold_on_the_page_and_a_held_voter_cannot(app, client,
                                                                         job_worker):
    """A held farm identity posts its own release (it knows its public id from its
    cookie): refused, still held. The operator keeps one voter out (off the review queue,
    their votes still held) and releases another from the page: their votes count again,
    and the online Elo is replayed with them."""
    from arena.accounts import tokens
    from tests.web.helpers import csrf_token
    from tests.web.test_campaign_pages import sign_in

    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4)
        _crowd(np.random.default_rng(0))
        farm = [vote_as({}, ["model-3", *ORDER[:3]], sessions=8, seed=100 + k).public_id
                for k in range(2)]
        bought = online_elo("preference")["model-3"]
        token = tokens.create_token("ops", role="operator")
    assert client.post(f"/admin/voters/{farm[0]}/release").status_code in (302, 400)
    runner = app.test_cli_runner()
    with app.app_context():
        assert screen.hold(farm, reasons=dict.fromkeys(farm, "preference: favours model-3")) == 2
    assert client.post(f"/admin/voters/{farm[0]}/release").status_code in (302, 400)
    with app.app_context():
        assert {h.public_id for h in screen.held()} == set(farm)
        held_elo = online_elo("preference")["model-3"]
    assert held_elo < bought

    assert sign_in(client, token).status_code == 303
    page = client.get("/admin/").get_data(as_text=True)
    assert page.count(">Keep out</button>") == 2 and page.count(">Release</button>") == 2
    kept = client.post(f"/admin/voters/{farm[1]}/keep-out", data={"csrf_token": csrf_token(page)},
                       follow_redirects=True).get_data(as_text=True)
    assert f"{farm[1]} kept out: reviewed." in kept and kept.count(">Keep out</button>") == 1
    assert "2 voters held out, 1 to review" in runner.invoke(args=["votes", "held"]).output
    released = client.post(f"/admin/voters/{farm[0]}/release",
                           data={"csrf_token": csrf_token(kept)}, follow_redirects=True)
    assert f"Releasing {farm[0]}" in released.get_data(as_text=True)
    with app.app_context():
        deadline = time.monotonic() + timing.seconds(30)
        while screen.releasing():  # (the job worker replays the log)
            assert time.monotonic() < deadline, "the release is still under way"
            time.sleep(0.05)
        assert [h.public_id for h in screen.held()] == [farm[1]]
        counted = online_elo("preference")["model-3"]
        flags = db.session.scalars(select(Vote.flags).join(Voter).where(
            Voter.public_id == farm[0])).all()
    assert flags and not any(f & HELD for f in flags)
    assert held_elo < counted < bought
    page = client.get("/admin/").get_data(as_text=True)
    assert farm[0] not in page and "kept out</strong>" in page


def test_the_progress_page_counts_what_the_screen_held_out(app, client, runner):
    """A campaign's page and `arena campaign status` say how many of its votes count
    nowhere and why, with their voters: a held farm is seen there, not only by its absence."""
    from arena.campaigns.progress import progress
    from arena.models import Campaign

    done = runner.invoke(args=["demo", "--prompts", "2", "--images", "1", "--votes", "60"])
    assert done.exit_code == 0, done.output
    with app.app_context():
        voters = db.session.scalars(select(Voter.public_id).join(Vote).group_by(
            Voter.public_id).order_by(Voter.public_id).limit(3)).all()
        assert screen.hold(voters) == 3
        held = db.session.scalar(select(func.count()).select_from(Vote).join(Voter).where(
            Voter.public_id.in_(voters)))
        campaign = db.session.scalar(select(Campaign))
        assert ["held", held, 3] in progress(campaign).not_counted
        name = campaign.name
    status = runner.invoke(args=["campaign", "status", name]).output
    assert f"not counted: {held:,d} votes held from 3 voters" in status, status
    page = client.get(f"/campaigns/{name}").get_data(as_text=True)
    assert f"{held:,d} held out by the farm screen or an operator, from 3 voter(s)" in page


def test_a_farm_of_the_last_period_never_shows_before_the_timer_screens_it(app, runner):
    """The farm benchmark found that between a period's start and the rollup timer's first
    run in it, the public board counted a farm's votes of the period before: bought first
    place for those minutes. Until the timer has screened the period, the public pages show
    the period before's figures; once it has, the farm is held out of the new ones."""
    from datetime import timedelta

    from arena.analysis import published
    from arena.models import utcnow

    def public() -> tuple[dict[str, float], object]:
        board = rank_models("preference", intervals="instant", public=True)
        return {m.model: m.rating for m in board.models}, board.as_of

    def back_before(cut) -> None:
        """Every vote stamped after ``cut`` less a minute moves back to just before it."""
        stamps = db.session.scalars(select(Vote).where(Vote.created_at > cut)).all()
        shift = max(v.created_at for v in stamps) - cut + timedelta(minutes=1)
        for vote in stamps:
            vote.created_at -= shift
            vote.public_at -= shift
        db.session.commit()

    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    period = timedelta(seconds=app.config["PUBLISHED_PERIOD_S"])
    rng = np.random.default_rng(1)  # (the crowd of the test above)
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4)
        _crowd(rng)
        earlier = published.cutoff() - period  # the period before's cut-off
        back_before(earlier)  # the crowd voted before it
        # the timer screened the period before (nothing to hold)
        published.figures(published.SCREEN, published.ALL, lambda _before: [],
                          now=utcnow() - period, screened=False)
        clean, _ = public()
        farm = [vote_as({}, ["model-3", *ORDER[:3]], sessions=12, seed=200 + k).public_id
                for k in range(8)]
        # the farm voted in the period before, after its cut-off; this period has just begun
        back_before(published.cutoff())
        published.forget()
        published.figures(published.SCREEN, published.ALL, lambda _before: [],
                          now=utcnow() - period, screened=False)
        counted = {m.model: m.rating for m in rank_models(
            "preference", intervals="instant", slice_=None).models}
        assert counted["model-3"] > clean["model-3"] + 50  # what the farm bought
        shown, as_of = public()  # before the timer's first run in this period
        assert as_of == earlier and shown == clean
        app.config["SCREEN_HOLDS"] = False  # (without a screen: no reason to wait)
        assert public()[0]["model-3"] > clean["model-3"] + 50
        app.config["SCREEN_HOLDS"] = True
    timer = runner.invoke(args=["votes", "rollup"])
    assert timer.exit_code == 0 and "the farm screen held out" in timer.output, timer.output
    with app.app_context():
        shown, as_of = public()
        assert as_of == published.cutoff()
        held = set(db.session.scalars(select(Voter.public_id).where(
            Voter.held_at.is_not(None))))
        assert set(farm) <= held  # (with a voter or two of the crowd's partial ones)
        assert shown["model-3"] < clean["model-3"] + 20 < counted["model-3"] - 30


def test_a_voter_who_taps_one_side_without_looking_is_named(app, runner):
    """Sides are drawn at random per task, so a voter who always taps the left image (a
    bot, or someone paid per answer) stands apart from voters with any tastes; named with
    the side, and held with the others."""
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(3)
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4)
        honest = _crowd(rng)
        tapper = vote_as({}, ORDER, sessions=0).public_id
        voter = db.session.scalar(select(Voter).where(Voter.public_id == tapper))
        for k in range(9):
            session = matchmaking.start_session(voter, np.random.default_rng(k), "preference")
            for task in session.tasks:
                answer(voter, task, "left")
        found = suspects("preference")
    sides = {s.public_id: s.side for s in found}
    assert sides.get(tapper) == "left", found  # (their taps may favour a model too)
    assert not {public_id for public_id, side in sides.items() if side} & set(honest)
    listed = runner.invoke(args=["votes", "suspects", "--criterion", "preference"])
    assert "always the left image" in listed.output and tapper in listed.output
