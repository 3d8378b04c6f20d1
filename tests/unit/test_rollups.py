"""Ranking rollups: the rollup plus the votes since its watermark give the same ranking as
the whole log, at every step, on SQLite and PostgreSQL; refreshing is idempotent and safe
to run twice at once."""

import threading
from datetime import timedelta

import numpy as np
import pytest
from flask import current_app
from sqlalchemy import Integer, func, select, update

from arena.analysis import published, rollups
from arena.analysis.leaderboard import rank_counts, rank_models
from arena.analysis.tallies import Slice, tally
from arena.campaigns.progress import progress
from arena.extensions import db
from arena.models import (
    Campaign,
    Comparison,
    Prompt,
    PublishedFigures,
    RankingRollup,
    RollupComparison,
    RollupPromptCell,
    RollupVoterCell,
    Vote,
    utcnow,
)
from tests.factories import make_campaign, vote_as

NOW = utcnow().replace(minute=30, second=0, microsecond=0)
CUTOFF = NOW.replace(minute=0) - published.SETTLED  # (the hour's, as the default period)


@pytest.fixture
def ctx_any(any_app):
    with any_app.app_context():
        assert published.cutoff(NOW) == CUTOFF
        current_app.config["VALIDATION_RATE"] = 0.0
        make_campaign(n_prompts=2, n_models=4)
        yield any_app


def _voters(count, seed, stamped_from, step=timedelta(minutes=7)):
    """``count`` voters with tastes (and countries) of their own; their votes restamped
    ``step`` apart from ``stamped_from`` on (the log's order kept)."""
    rng = np.random.default_rng(seed)
    names = [f"model-{k}" for k in range(4)]
    first = db.session.scalar(select(func.coalesce(func.max(Vote.id), 0)))
    for k in range(count):
        vote_as({"country": ("KE", "BR", "DE")[k % 3]}, list(rng.permutation(names)),
                sessions=int(rng.integers(1, 4)), seed=seed * 100 + k)
    ids = db.session.scalars(select(Vote.id).where(Vote.id > first).order_by(Vote.id)).all()
    for i, vote_id in enumerate(ids):
        db.session.execute(update(Vote).where(Vote.id == vote_id)
                           .values(created_at=stamped_from + i * step,
                                   public_at=stamped_from + i * step))
    db.session.commit()
    return ids


def _scan(as_of=None, cluster="voter"):
    """The ranking as the whole log gives it (what rank_models does without a rollup)."""
    counted = tally("preference", Slice(as_of=as_of), cluster=cluster)
    return rank_counts(counted.names, counted.counts, intervals="instant", cluster=cluster)


def _same(got, want):
    assert got.total_votes == want.total_votes and got.units == want.units
    assert [m.model for m in got.models] == [m.model for m in want.models]
    for a, b in zip(got.models, want.models, strict=True):
        assert a.rating == pytest.approx(b.rating, abs=1e-6)
        assert a.ci_low == pytest.approx(b.ci_low, abs=1e-6)
        assert a.ci_high == pytest.approx(b.ci_high, abs=1e-6)
        assert (a.rank_best, a.rank_worst) == (b.rank_best, b.rank_worst)


def _rolled(as_of=None, cluster="voter"):
    assert rollups.moments("preference", tally("preference").ids, as_of) is not None
    return rank_models("preference", intervals="instant", slice_=Slice(as_of=as_of),
                       cluster=cluster)


@pytest.mark.parametrize("cluster", ["voter+prompt", "voter"])
def test_rollup_and_votes_since_give_the_whole_logs_ranking(ctx_any, cluster):
    stamps = _voters(12, seed=1, stamped_from=CUTOFF - timedelta(days=3))
    assert db.session.scalar(select(Vote.created_at).where(Vote.id == stamps[-1])) < CUTOFF
    before = _scan(cluster=cluster)
    assert before.cluster == cluster and (before.prompts == 2) == (cluster == "voter+prompt")
    done = rollups.refresh(NOW, batch=17)  # several batches, some sharing voters
    assert sum(d.votes for d in done) == len(stamps)
    assert db.session.get(RankingRollup, "preference").through == CUTOFF
    _same(_rolled(cluster=cluster), before)
    _same(_rolled(cluster="none"), _scan(cluster="none"))
    assert rollups.refresh(NOW)[0].votes == 0  # nothing new: nothing changes

    # the same voters and new ones vote on, after the cut-off: read from the log
    _voters(6, seed=2, stamped_from=CUTOFF + timedelta(seconds=1), step=timedelta(seconds=3))
    _same(_rolled(cluster=cluster), _scan(cluster=cluster))
    _same(_rolled(as_of=CUTOFF, cluster=cluster), _scan(as_of=CUTOFF, cluster=cluster))

    # a vote stored now with a stamp before the watermark (a simulation's clock) counts too
    late = _voters(1, seed=3, stamped_from=CUTOFF - timedelta(days=1), step=timedelta(0))
    _same(_rolled(as_of=CUTOFF, cluster=cluster), _scan(as_of=CUTOFF, cluster=cluster))
    later = NOW + timedelta(hours=1)
    assert sum(d.votes for d in rollups.refresh(later)) >= len(late)
    _same(_rolled(cluster=cluster), _scan(cluster=cluster))
    everything = db.session.scalar(select(func.count()).select_from(Vote))
    for table in (RollupVoterCell, RollupPromptCell):
        assert db.session.scalar(select(func.sum(table.votes))) == everything


def test_the_public_leaderboard_reads_the_rollup_to_its_cut_off(ctx_any):
    _voters(10, seed=4, stamped_from=published.cutoff() - timedelta(days=1))
    want = rank_models("preference", intervals="instant", public=True, include_idle=False)
    rollups.refresh()
    got = rank_models("preference", intervals="instant", public=True, include_idle=False)
    assert got.as_of == want.as_of
    _same(got, want)


def test_slices_and_the_bootstrap_read_the_log(ctx_any):
    _voters(8, seed=5, stamped_from=CUTOFF - timedelta(days=1))
    rollups.refresh(NOW)
    # a rollup that no longer matches the log would show here: slices must not use it
    db.session.execute(update(RankingRollup).values(moments=None, voters=0))
    db.session.commit()
    sliced = rank_models("preference", intervals="instant", slice_=Slice(since=CUTOFF
                                                                         - timedelta(days=2)))
    assert sliced.total_votes == db.session.scalar(select(func.count()).select_from(Vote))
    boot = rank_models("preference", rounds=20, rng=np.random.default_rng(0))
    assert boot.total_votes == sliced.total_votes
    assert rank_models("preference", intervals="instant").total_votes == 0  # (the rollup's)


@pytest.mark.postgres
def test_two_refreshes_at_once_add_every_vote_once(pg_app):
    with pg_app.app_context():
        current_app.config["VALIDATION_RATE"] = 0.0
        make_campaign(n_prompts=2, n_models=4)
        stamps = _voters(10, seed=6, stamped_from=CUTOFF - timedelta(days=2))
        want = _scan()
    added, errors = [], []

    def run():
        try:
            with pg_app.app_context():
                added.append(sum(d.votes for d in rollups.refresh(NOW, batch=5)))
        except Exception as exc:  # (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(added) == len(stamps)
    with pg_app.app_context():
        _same(_rolled(), want)


def _log_counts(before, campaign_id):
    """What the public counts are, from the whole log: per comparison its counted votes, and
    per campaign voter (votes, gold answers, failed ones), stamped before ``before``."""
    quota = dict(db.session.execute(
        select(Vote.comparison_id, func.count())
        .where(Vote.flags == 0, Vote.created_at < before).group_by(Vote.comparison_id)).all())
    people = {row[0]: tuple(row[1:]) for row in db.session.execute(
        select(Vote.voter_id, func.count(), func.sum(Vote.is_validation.cast(Integer)),
               func.sum((Vote.is_validation & Vote.correct.is_(False)).cast(Integer)))
        .join(Comparison, Comparison.id == Vote.comparison_id)
        .where(Comparison.campaign_id == campaign_id, Vote.created_at < before)
        .group_by(Vote.voter_id))}
    return quota, people


def _read_counts(before, campaign_id):
    """The same, as the public pages read them (the rollup and the log past it)."""
    quota = rollups.comparison_votes(before)
    people = rollups.campaign_voters(campaign_id, before)
    return (dict(db.session.execute(select(quota.c.comparison_id, quota.c.n)).all()),
            {row[0]: tuple(row[1:]) for row in db.session.execute(select(people))})


def _campaign_of_everything() -> Campaign:
    """A published campaign holding every comparison."""
    campaign = Campaign(name="all", prompt_set_id=db.session.scalar(select(Prompt.prompt_set_id)),
                        criteria="preference", published_at=utcnow())
    db.session.add(campaign)
    db.session.flush()
    db.session.execute(update(Comparison).values(campaign_id=campaign.id))
    db.session.commit()
    return campaign


def _report(campaign, before):
    report = progress(campaign, before=before)
    return {name: getattr(report, name) for name in (
        "criteria", "pairs", "votes_total", "voters", "demographics", "validation",
        "most_skipped", "votes_per_hour")}


def test_public_counts_read_the_rollup_and_give_the_logs(ctx_any):
    current_app.config["VALIDATION_RATE"] = 0.5  # gold answers, passed and failed
    campaign = _campaign_of_everything()
    first = _voters(12, seed=8, stamped_from=CUTOFF - timedelta(days=2))
    db.session.execute(update(Vote).where(Vote.id.in_(first[::5])).values(flags=1))
    db.session.commit()
    gold = db.session.scalar(select(func.count()).where(Vote.is_validation))
    assert gold and db.session.scalar(select(func.count()).where(Vote.correct.is_(False)))
    want = _report(campaign, CUTOFF)
    assert want["voters"] == 12 and want["validation"]["failed"]

    rollups.refresh(NOW, batch=9)
    assert _read_counts(CUTOFF, campaign.id) == _log_counts(CUTOFF, campaign.id)
    assert _report(campaign, CUTOFF) == want
    # the pages read the rollup (a count changed in it shows), not the log
    db.session.execute(update(RollupComparison).values(votes=RollupComparison.votes + 1000))
    assert _read_counts(CUTOFF, campaign.id) != _log_counts(CUTOFF, campaign.id)
    db.session.rollback()

    # votes past the watermark, and one stored now with an earlier stamp
    _voters(5, seed=9, stamped_from=CUTOFF + timedelta(seconds=1), step=timedelta(seconds=3))
    _voters(1, seed=10, stamped_from=CUTOFF - timedelta(days=1), step=timedelta(0))
    for before in (CUTOFF, NOW):
        assert _read_counts(before, campaign.id) == _log_counts(before, campaign.id)
    # a cut-off before the watermark cannot use the rollup: the log alone, still exact
    early = CUTOFF - timedelta(days=1)
    assert _read_counts(early, campaign.id) == _log_counts(early, campaign.id)
    rollups.refresh(NOW + timedelta(hours=1))
    later = NOW + timedelta(hours=1)
    assert _read_counts(later, campaign.id) == _log_counts(later, campaign.id)
    assert db.session.scalar(select(func.sum(RollupComparison.votes))) == (
        db.session.scalar(select(func.count()).where(Vote.flags == 0)))


def test_the_rollup_command_reports_what_it_added(app):
    with app.app_context():
        current_app.config["VALIDATION_RATE"] = 0.0
        make_campaign(n_prompts=2, n_models=4)
        campaign = _campaign_of_everything().id
        stamps = _voters(4, seed=7, stamped_from=published.cutoff() - timedelta(days=1))
    first = app.test_cli_runner().invoke(args=["votes", "rollup"])
    assert first.exit_code == 0, first.output
    assert f"preference: {len(stamps):,d} votes added" in first.output
    assert "the campaign list and 1 campaigns' progress" in first.output
    with app.app_context():  # no page waits for them this period
        taken = db.session.execute(select(PublishedFigures.kind, PublishedFigures.key)).all()
        assert {("elo", published.ALL), ("campaigns", published.ALL),
                ("progress", campaign)} <= set(taken)
    again = app.test_cli_runner().invoke(args=["votes", "rollup"])
    assert "preference: 0 votes added" in again.output


def test_the_public_board_carries_the_lead_counts_the_timer_took(app):
    with app.app_context():
        current_app.config["VALIDATION_RATE"] = 0.0
        make_campaign(n_prompts=2, n_models=4)
        _voters(12, seed=8, stamped_from=published.cutoff() - timedelta(days=1))
        shown = rank_models("preference", intervals="instant", public=True, include_idle=False)
        assert all(m.lead_voters is None for m in shown.models)  # no page pays for them
    assert app.test_cli_runner().invoke(args=["votes", "rollup"]).exit_code == 0
    with app.app_context():
        current_app.config["FRAGILE_SHARE"] = 0.5  # (a dozen voters: every lead is fragile)
        board = rank_models("preference", intervals="instant", public=True, include_idle=False)
        # (the votes per voter before the cut-off, from the log: what the timer fitted)
        counted = tally("preference", Slice(as_of=board.as_of), cluster="voter")
        analyst = rank_counts(counted.names, counted.counts, intervals="instant",
                              cluster="voter", include_idle=False)
        assert [(m.model, m.lead_voters, m.lead_share) for m in board.models] == \
            [(m.model, m.lead_voters, m.lead_share) for m in analyst.models]
        assert any(m.lead_voters for m in board.models)
        fragile = [f.replace(" of 12 voters", " voters") for f in analyst.flags
                   if f.startswith("fragile")]
        assert fragile and [f for f in board.flags if f.startswith("fragile")] == fragile
