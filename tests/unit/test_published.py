"""Published figures (arena.analysis.published): taken once per period by its first request,
shared by every worker, on both databases; the public rankings count the votes and the trust
of before their time."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from flask import current_app
from sqlalchemy import func, select, update

from arena.analysis import published
from arena.analysis.leaderboard import Slice, elo_table, rank_models
from arena.campaigns import campaigns
from arena.campaigns.progress import progress, public_progress
from arena.catalog.registry import model_stats
from arena.extensions import db
from arena.models import GenModel, PublishedFigures, Task, Vote, utcnow
from arena.ranking.elo import elo_update, keyed_order
from arena.voting import live_elo, tasks, votes
from tests.factories import answer, make_campaign, new_voter, start, time_passes
from tests.security.test_gold import publish_live
from tests.timing import seconds

NOON = datetime(2026, 11, 28, 12, 0)


def test_periods_begin_on_the_hour(ctx):
    ctx.config["PUBLISHED_PERIOD_S"] = 3600
    assert published.period_start(NOON + timedelta(minutes=34, seconds=56)) == NOON
    assert published.period_start(NOON) == NOON
    ctx.config["PUBLISHED_PERIOD_S"] = 900
    assert published.period_start(NOON + timedelta(minutes=34)) == NOON + timedelta(minutes=30)
    ctx.config["PUBLISHED_PERIOD_S"] = 0  # (as live as it gets: a second)
    assert published.period_start(NOON + timedelta(seconds=7.5)) == NOON + timedelta(seconds=7)


def test_figures_are_taken_once_per_period_and_the_old_ones_dropped(any_app):
    with any_app.app_context():
        any_app.config["PUBLISHED_PERIOD_S"] = 3600
        calls = []

        def compute(before):
            calls.append(before)
            return {"taken": len(calls), "pairs": [("a", 1)]}

        first = published.figures("test", 1, compute, now=NOON + timedelta(minutes=5))
        same = published.figures("test", 1, compute, now=NOON + timedelta(minutes=59))
        assert first == same and first.payload == {"taken": 1, "pairs": [["a", 1]]}
        assert calls == [NOON - published.SETTLED] and first.as_of == calls[0]
        other = published.figures("test", 2, compute, now=NOON + timedelta(minutes=59))
        assert other.payload["taken"] == 2  # another key has figures of its own
        later = published.figures("test", 1, compute, now=NOON + timedelta(hours=1))
        assert later.payload["taken"] == 3 and later.as_of == first.as_of + timedelta(hours=1)
        kept = db.session.execute(select(PublishedFigures.key, PublishedFigures.period)
                                  .order_by(PublishedFigures.key)).all()
        assert kept == [(1, NOON + timedelta(hours=1)), (2, NOON)]
        published.forget()
        assert published.figures("test", 1, compute, now=NOON + timedelta(hours=1)
                                 ).payload["taken"] == 4


def test_two_workers_taking_the_figures_at_once_show_the_same(any_app):
    """Both compute (each sees none stored), one stores first; the other shows those."""
    both_computing = threading.Barrier(2, timeout=seconds(10))
    shown = []

    def worker(k: int):
        with any_app.app_context():
            def compute(_before):
                both_computing.wait()
                return {"worker": k}

            shown.append(published.figures("test", 0, compute).payload)
            db.session.remove()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(shown) == 2 and shown[0] == shown[1], shown
    with any_app.app_context():
        assert db.session.scalar(select(func.count()).select_from(PublishedFigures)) == 1


def gold_answered_right(voter) -> None:
    _, session = start(voter, "preference", seed=3, validation_rate=1.0)
    for task in session.tasks:
        comparison = task.comparison
        if comparison.is_validation:
            right = task.left_image_id == comparison.correct_image_id
            answer(voter, task, "left" if right else "right")
        else:
            answer(voter, task, "left")


def test_public_rankings_count_votes_and_trust_from_before_their_time(ctx):
    """A voter's first gold answer, after the figures' time, makes them trusted: their
    earlier votes join the live trusted-voters slice at once, but not the published one
    (else that page would tell the voter the answer was gold). Votes after the time do not
    count there either."""
    make_campaign()
    voter = new_voter()
    _, session = start(voter, "preference", validation_rate=0.0)
    for task in session.tasks:
        answer(voter, task, "left")
    as_of = utcnow()
    gold_answered_right(voter)
    db.session.refresh(voter)
    assert voter.validations_passed == 1 and voter.validations_failed == 0
    counted = db.session.scalar(select(func.count()).select_from(Vote).where(
        Vote.is_validation.is_(False)))
    assert counted == 5
    trusted = Slice(trusted_only=True)
    assert rank_models("preference", rounds=0, slice_=trusted).total_votes == 5
    assert rank_models("preference", rounds=0,
                       slice_=trusted.published_at(as_of)).total_votes == 0
    assert rank_models("preference", rounds=0,
                       slice_=Slice().published_at(as_of)).total_votes == 3
    later = utcnow()
    assert rank_models("preference", rounds=0,
                       slice_=trusted.published_at(later)).total_votes == 5
    assert Slice().published_at(later).active() == {}  # (not a visitor's filter)


def test_every_public_figure_counts_to_one_cutoff(ctx):
    """The attacks compare two figures taken either side of an answer: the campaign
    list against the campaign page, the API's Elo against the board's Bradley-Terry. Every
    figure now counts the votes stamped before one cut-off per period, whichever is asked
    first and whenever: a vote just before it is in all of them, one just after in none."""
    campaign = make_campaign()
    voter = new_voter()
    _, session = start(voter, "preference", validation_rate=0.0)
    for task in session.tasks:
        answer(voter, task, "left")
    first, second, third = db.session.scalars(select(Vote).order_by(Vote.id))
    cut = published.cutoff()
    first.created_at = first.public_at = cut - timedelta(hours=1)
    second.created_at = second.public_at = cut - timedelta(microseconds=1)  # (just settled)
    third.created_at = third.public_at = cut  # not before it: next period's
    db.session.commit()
    board = rank_models("preference", rounds=0, public=True)
    table = elo_table("preference")
    assert board.as_of == table.as_of == cut
    assert board.total_votes == 2
    assert sum(row.votes for row in table.rows) == 2 * 2
    assert {row.model: row.rating for row in table.rows} == {
        m.model: m.online_elo for m in board.models if m.votes}
    names = {m.id: m.name for m in campaign["models"]}
    assert _keyed_replay(names, cut, current_app.config["ELO_PUBLIC_ORDERS"]) == pytest.approx(
        {row.model: row.rating for row in table.rows})
    published.forget()  # asked again, in any order: the same figures
    assert elo_table("preference") == table
    assert rank_models("preference", rounds=0, public=True).total_votes == 2


def test_the_campaign_list_and_page_count_to_the_same_cutoff(make_app):
    app = make_app(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    with app.app_context():
        campaign = publish_live()
        voter = new_voter()
        _, session = start(voter, "preference", validation_rate=0.0)
        for task in session.tasks:
            answer(voter, task, "left")
        time_passes()  # three votes before the cut-off
        _, session = start(voter, "preference", seed=4, validation_rate=0.0)
        for task in session.tasks:
            answer(voter, task, "left")  # three after it
        listed = {s.name: s for s in campaigns.summaries(public=True)}["Live"]
        page = public_progress(campaign)
        live = progress(campaign)
        assert listed.votes == page.votes_total == 3 and live.votes_total == 6
        assert page.voters == 1 and page.validation["pairs"] is None
        published.forget()
        assert public_progress(campaign).votes_total == 3


def test_the_public_ranking_moves_on_with_the_period_only(ctx):
    make_campaign()
    voter = new_voter()
    _, session = start(voter, "preference", validation_rate=0.0)
    answer(voter, session.tasks[0], "left")
    time_passes()
    before = rank_models("preference", rounds=0, public=True)
    assert before.total_votes == 1 and before.as_of == published.cutoff()
    for task in session.tasks[1:]:
        answer(voter, task, "left")
    published.forget()  # (taken afresh within the period: the same)
    after = rank_models("preference", rounds=0, public=True)
    assert after.total_votes == 1
    assert [m.online_elo for m in after.models] == [m.online_elo for m in before.models]
    assert rank_models("preference", rounds=0).total_votes == 3  # analysts: live
    time_passes()
    assert rank_models("preference", rounds=0, public=True).total_votes == 3


def test_figures_stored_in_another_shape_are_worked_out_again(ctx):
    """A release that changes what a page's figures hold meets the figures the release
    before stored for this period: they are worked out again, not shown as a 500."""
    db.session.add(PublishedFigures(kind="test", key=0, period=published.period_start(),
                                    as_of=published.cutoff(), payload='{"old": 1}'))
    db.session.commit()
    calls = []

    def compute(before):
        calls.append(before)
        return {"new": 2}

    assert published.figures("test", 0, compute, load=lambda p: p["new"]).payload == 2
    assert published.figures("test", 0, compute, load=lambda p: p["new"]).payload == 2
    assert len(calls) == 1


def _keyed_replay(names: dict[int, str], before, orders: int) -> dict[str, float]:
    """The online update over the votes counted before ``before``, one at a time in each of
    ``orders`` orders drawn from their ids by keys that follow published.elo_key(), and the
    mean of the ``orders`` ratings."""
    counted = db.session.scalars(select(Vote).where(Vote.public_at < before).order_by(
        Vote.id)).all()
    total = dict.fromkeys(names, 0.0)
    for j in range(orders):
        ratings = dict.fromkeys(names, live_elo.elo_params().initial)
        key = (published.elo_key() + j * 0x9E3779B97F4A7C15) % 2**64
        for k in keyed_order([v.id for v in counted], key):
            w, lo = counted[k].winner_model_id, counted[k].loser_model_id
            ratings[w], ratings[lo] = elo_update(ratings[w], ratings[lo], 1.0,
                                                 live_elo.elo_params())
        total = {m: total[m] + ratings[m] for m in names}
    played = {m for v in counted for m in (v.winner_model_id, v.loser_model_id)}
    return {names[m]: r / orders for m, r in total.items() if m in played}


def test_the_public_elo_replays_every_counted_vote_in_a_keyed_order(ctx):
    """Each period's Elo is the whole log replayed in the key's orders (and averaged), a
    later period's votes falling among the earlier ones, not after them: not the order they
    came in."""
    campaign = make_campaign()
    voter = new_voter()
    for seed in range(3):
        _, session = start(voter, "preference", seed=seed, validation_rate=0.0)
        for k, task in enumerate(session.tasks):
            answer(voter, task, "left" if k % 2 else "right")
        if seed == 0:
            time_passes()
            first = published.elo()  # stored: three votes before its cut-off
            assert sum(v for _, _, v, _ in first.ratings["preference"]) == 2 * 3
    later = utcnow() + timedelta(minutes=1)
    names = {m.id: m.name for m in campaign["models"]}
    public = published._elo_before(later)["preference"]
    assert sum(row[2] for row in public) == 2 * 9
    keyed = _keyed_replay(names, later, current_app.config["ELO_PUBLIC_ORDERS"])
    assert {row[0]: row[1] for row in public if row[2]} == pytest.approx(keyed)
    assert keyed != pytest.approx(_keyed_replay(names, later, 1))
    arrival = live_elo.replayed("preference", live_elo.elo_params())
    assert {names[m]: r for m, (r, n, _) in arrival.items() if n} != pytest.approx(keyed)


def test_nothing_stamped_within_the_period_moves_a_public_figure(make_app, monkeypatch):
    """Votes and a skip stamped ten minutes into the period, pages asked for at five minutes
    and again at fifty (every figure taken afresh): the same figures. (A cut-off that
    followed the clock, "now less two minutes", would show the votes at fifty.)"""
    app = make_app(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    with app.app_context():
        campaign = publish_live()
        owner_model = db.session.scalar(select(GenModel).where(GenModel.name == "A"))
        start_of = published.period_start()

        def pages_at(minutes: int):
            monkeypatch.setattr(published, "utcnow", lambda: start_of + timedelta(
                minutes=minutes))
            published.forget()
            report = public_progress(campaign)
            return (campaigns.summaries(public=True), report.votes_total, report.skips_total,
                    report.voters, elo_table("preference"),
                    rank_models("preference", rounds=0, public=True).records(),
                    model_stats(owner_model)["criteria"])

        early = pages_at(5)
        voter = new_voter()
        _, session = start(voter, "preference", validation_rate=0.0)
        *answered, skipped = session.tasks
        for task in answered:
            votes.cast_vote(voter, task.id, "left", now=start_of + timedelta(minutes=10))
        tasks.skip(voter, skipped.id)
        db.session.execute(update(Task).where(Task.id == skipped.id).values(
            skipped_at=start_of + timedelta(minutes=10)))
        db.session.commit()
        assert pages_at(50) == early
        assert pages_at(65)[1] == early[1] + 2  # (the next period counts them)
