"""Ranking rollups: the rollup plus the votes since its watermark give the same ranking as
the whole log, at every step, on SQLite and PostgreSQL; refreshing is idempotent and safe
to run twice at once."""

import threading
from datetime import timedelta

import numpy as np
import pytest
from flask import current_app
from sqlalchemy import func, select, update

from arena.analysis import published, rollups
from arena.analysis.leaderboard import rank_counts, rank_models
from arena.analysis.tallies import Slice, tally
from arena.extensions import db
from arena.models import RankingRollup, RollupVoterCell, Vote, utcnow
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
    """``count`` voters with tastes of their own; their votes restamped ``step`` apart from
    ``stamped_from`` on (the log's order kept)."""
    rng = np.random.default_rng(seed)
    names = [f"model-{k}" for k in range(4)]
    first = db.session.scalar(select(func.coalesce(func.max(Vote.id), 0)))
    for k in range(count):
        vote_as({}, list(rng.permutation(names)), sessions=int(rng.integers(1, 4)),
                seed=seed * 100 + k)
    ids = db.session.scalars(select(Vote.id).where(Vote.id > first).order_by(Vote.id)).all()
    for i, vote_id in enumerate(ids):
        db.session.execute(update(Vote).where(Vote.id == vote_id)
                           .values(created_at=stamped_from + i * step))
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


def test_rollup_and_votes_since_give_the_whole_logs_ranking(ctx_any):
    stamps = _voters(12, seed=1, stamped_from=CUTOFF - timedelta(days=3))
    assert db.session.scalar(select(Vote.created_at).where(Vote.id == stamps[-1])) < CUTOFF
    before = _scan()
    done = rollups.refresh(NOW, batch=17)  # several batches, some sharing voters
    assert sum(d.votes for d in done) == len(stamps)
    assert db.session.get(RankingRollup, "preference").through == CUTOFF
    _same(_rolled(), before)
    _same(_rolled(cluster="none"), _scan(cluster="none"))
    assert rollups.refresh(NOW)[0].votes == 0  # nothing new: nothing changes

    # the same voters and new ones vote on, after the cut-off: read from the log
    _voters(6, seed=2, stamped_from=CUTOFF + timedelta(seconds=1), step=timedelta(seconds=3))
    _same(_rolled(), _scan())
    _same(_rolled(as_of=CUTOFF), _scan(as_of=CUTOFF))

    # a vote stored now with a stamp before the watermark (a simulation's clock) counts too
    late = _voters(1, seed=3, stamped_from=CUTOFF - timedelta(days=1), step=timedelta(0))
    _same(_rolled(as_of=CUTOFF), _scan(as_of=CUTOFF))
    later = NOW + timedelta(hours=1)
    assert sum(d.votes for d in rollups.refresh(later)) >= len(late)
    _same(_rolled(), _scan())
    cells = db.session.scalar(select(func.sum(RollupVoterCell.votes)))
    assert cells == db.session.scalar(select(func.count()).select_from(Vote))


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


def test_the_rollup_command_reports_what_it_added(app):
    with app.app_context():
        current_app.config["VALIDATION_RATE"] = 0.0
        make_campaign(n_prompts=2, n_models=4)
        stamps = _voters(4, seed=7, stamped_from=published.cutoff() - timedelta(days=1))
    first = app.test_cli_runner().invoke(args=["votes", "rollup"])
    assert first.exit_code == 0, first.output
    assert f"preference: {len(stamps):,d} votes added" in first.output
    again = app.test_cli_runner().invoke(args=["votes", "rollup"])
    assert "preference: 0 votes added" in again.output
