"""Sliced rollups: a slice's ranking from its rollup equals the whole log's, on SQLite and
PostgreSQL, while voters change their answers, lose their trust on another criterion's gold
pair, vote on past the watermark, and vote in several languages and categories."""

from datetime import timedelta

import numpy as np
import pytest
from flask import current_app
from sqlalchemy import func, select, update

from arena.analysis import published, rollups, slices
from arena.analysis.agreement import sums_of
from arena.analysis.leaderboard import rank_counts, rank_models
from arena.analysis.tallies import Slice, tally, vote_filter
from arena.extensions import db
from arena.models import Comparison, Prompt, RollupSlice, Vote, Voter, utcnow
from arena.voting.voters import update_demographics
from tests.factories import answer, make_campaign, start, vote_as

NOW = utcnow().replace(minute=30, second=0, microsecond=0)
CUTOFF = NOW.replace(minute=0) - published.SETTLED
LATER = NOW + timedelta(hours=1)
SLICES = [{"continent": "AF"}, {"gender": "female"}, {"language": "es"},
          {"category": "Animals"}]


@pytest.fixture
def ctx_any(any_app):
    with any_app.app_context():
        current_app.config["VALIDATION_RATE"] = 0.3
        campaign = make_campaign(n_prompts=3, n_models=4)
        db.session.execute(update(Prompt).where(Prompt.id == campaign["prompts"][0].id)
                           .values(category="Animals"))
        db.session.commit()
        yield any_app


def _voters(count, seed, stamped_from, step=timedelta(minutes=7)):
    """``count`` voters with tastes and answers of their own, votes in two languages,
    restamped ``step`` apart from ``stamped_from`` on."""
    rng = np.random.default_rng(seed)
    names = [f"model-{k}" for k in range(4)]
    first = db.session.scalar(select(func.coalesce(func.max(Vote.id), 0)))
    for k in range(count):
        answers = {"country": ("KE", "BR", "DE")[k % 3],
                   "gender": ("female", "male")[(k // 3) % 2],
                   "age_group": ("18-29", "30-39")[(k + seed) % 2]}
        vote_as(answers, list(rng.permutation(names)), sessions=int(rng.integers(1, 4)),
                seed=seed * 100 + k)
    ids = db.session.scalars(select(Vote.id).where(Vote.id > first).order_by(Vote.id)).all()
    for i, vote_id in enumerate(ids):
        db.session.execute(update(Vote).where(Vote.id == vote_id).values(
            created_at=stamped_from + i * step, public_at=stamped_from + i * step,
            language=("en", "es")[int(rng.integers(2))]))
    db.session.commit()


def _same(slice_, cluster="voter+prompt"):
    """The slice's ranking and its comparisons' votes for either image (agreement) through
    the rollup equal the whole log's."""
    counted = tally("preference", slice_, cluster=cluster)
    want = rank_counts(counted.names, counted.counts, intervals="instant", cluster=cluster)
    field = slices.field_of(slice_)
    assert field is not None
    read = slices.read("preference", slice_)
    assert read is not None
    logged = [tuple(row) for row in sums_of("preference", slice_)[0].astype(int).tolist()]
    rolled = read.sides()
    assert sorted(map(tuple, rolled.tolist())) == sorted(logged), slice_
    got = rank_models("preference", intervals="instant", slice_=slice_, cluster=cluster)
    assert got.total_votes == want.total_votes and got.units == want.units, slice_
    for a, b in zip(got.models, want.models, strict=True):
        assert a.model == b.model
        assert a.rating == pytest.approx(b.rating, abs=1e-6)
        assert a.ci_low == pytest.approx(b.ci_low, abs=1e-6), slice_
        assert (a.rank_best, a.rank_worst) == (b.rank_best, b.rank_worst)
    return got


def _all_same(as_of, live=True):
    for kwargs in SLICES:
        _same(Slice(**kwargs, as_of=as_of))
    if live:  # (the analysts' live figures: every vote, the voters' answers now)
        _same(Slice(age_group="18-29"), cluster="voter")
    _same(Slice(trusted_only=True, as_of=as_of))


def _fail_gold(voter, stamp):
    """``voter`` answers the gold pairs of another criterion's session wrongly, the votes
    stamped ``stamp``."""
    first = db.session.scalar(select(func.max(Vote.id)))
    _, session = start(voter, criterion="coherence", validation_rate=1.0)
    for task in session.tasks:
        gold = db.session.get(Comparison, task.comparison_id)
        if gold.is_validation:
            answer(voter, task, "left" if task.right_image.id == gold.correct_image_id
                   else "right")
    db.session.execute(update(Vote).where(Vote.id > first).values(created_at=stamp,
                                                                  public_at=stamp))
    db.session.commit()
    assert db.session.get(Voter, voter.id).validations_failed > 0


def _voters_in(slice_):
    return vote_filter("preference", slice_).with_only_columns(Vote.voter_id).distinct()


def test_each_slice_from_its_rollup_is_the_logs_while_voters_move(ctx_any):
    _voters(10, seed=1, stamped_from=CUTOFF - timedelta(days=3))
    rollups.refresh(NOW, batch=23)  # several batches, voters spanning them
    _all_same(CUTOFF, live=False)

    # past the watermark: new votes, a voter's new answers, a trusted voter's wrong gold
    # answer on another criterion (after the cut-off: trusted at it, not at the next)
    _voters(3, seed=2, stamped_from=CUTOFF + timedelta(seconds=1), step=timedelta(seconds=3))
    mover = db.session.get(Voter, db.session.scalar(_voters_in(Slice(continent="AF")).limit(1)))
    update_demographics(mover, {"country": "DE", "gender": "male", "age_group": "30-39"})
    db.session.commit()
    liar = db.session.get(Voter, db.session.scalar(
        _voters_in(Slice(trusted_only=True, as_of=CUTOFF)).where(Vote.voter_id != mover.id)
        .limit(1)))
    _fail_gold(liar, CUTOFF + timedelta(minutes=1))
    _all_same(CUTOFF)

    next_cutoff = published.cutoff(LATER)
    assert sum(d.votes for d in rollups.refresh(LATER)) > 0
    _all_same(next_cutoff)
    assert liar.id not in db.session.scalars(_voters_in(
        Slice(trusted_only=True, as_of=next_cutoff))).all()
    assert rollups.refresh(LATER)[0].votes == 0
    _all_same(next_cutoff, live=False)


def test_a_slice_reads_its_rollup_not_the_log(ctx_any):
    _voters(8, seed=3, stamped_from=CUTOFF - timedelta(days=1))
    rollups.refresh(NOW)
    everything = _same(Slice(continent="EU", as_of=CUTOFF)).total_votes
    assert everything > 0
    # a public slice of fewer voters than the page shows shows nothing, from the rollup too
    assert rank_models("preference", intervals="instant", slice_=Slice(continent="EU"),
                       public=True).withheld
    # a slice rollup that no longer matches the log shows here: the page must read it
    db.session.execute(update(RollupSlice).values(moments=None, voters=0))
    db.session.commit()
    blank = rank_models("preference", intervals="instant",
                        slice_=Slice(continent="EU", as_of=CUTOFF))
    assert blank.total_votes == 0
    # two fields at once, a country or dates read the log
    for slice_ in (Slice(continent="EU", gender="male"), Slice(country="DE"),
                   Slice(since=CUTOFF - timedelta(days=2))):
        assert slices.field_of(slice_) is None
    assert slices.field_of(Slice(trusted_only=True)) is None  # (trust as it is now: the log)
