"""Agreement per criterion (arena.ranking.agreement): alpha equals the reference package's,
behaves at its ends, and its intervals cover the population's values (new pairs, new voters)
in a simulation from a known truth with pairs of very different difficulty and vote counts
and careless voters."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ranking.agreement import agreement, agreement_of_votes
from benchmarks.agreement import population, study
from tests.timing import seconds

counts_st = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=2,
                     max_size=30).filter(lambda rows: sum(a + b >= 2 for a, b in rows) >= 2)



def alike(a, b) -> bool:
    """Two agreements alike to the last bits a database's order of summing moves."""
    if a is None or b is None:
        return a is b
    x, y = asdict(a), asdict(b)
    return all(x[k] == pytest.approx(y[k], rel=1e-12, abs=1e-15) if isinstance(x[k], float)
               else x[k] == y[k] for k in x)


@settings(max_examples=150, deadline=None)
@given(counts_st)
def test_alpha_is_the_reference_packages(rows):
    result = agreement(rows)
    pairable = np.array([r for r in rows if sum(r) >= 2], float)
    firsts, seconds = pairable.sum(axis=0)
    if firsts == 0 or seconds == 0:  # every vote one way: no variation to agree about
        assert result is None
        return
    expected = krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal")
    assert result.alpha == pytest.approx(expected, abs=1e-9)
    # the majority share, by hand
    assert result.majority == pytest.approx(pairable.max(axis=1).sum() / pairable.sum())
    assert result.alpha_low <= result.alpha_high and result.pairs == len(pairable)


def test_its_ends_and_its_symmetry():
    unanimous = agreement([[5, 0], [0, 4], [3, 0]])
    assert unanimous.alpha == pytest.approx(1) and unanimous.majority == pytest.approx(1)
    rng = np.random.default_rng(2)
    coin = rng.binomial(20, 0.5, size=4000)
    by_chance = agreement(np.column_stack([coin, 20 - coin]))
    assert abs(by_chance.alpha) < 0.02
    rows = np.array([[7, 2], [1, 5], [4, 4], [9, 0]])
    swapped = agreement(rows[:, ::-1])
    assert swapped.alpha == pytest.approx(agreement(rows).alpha)
    assert agreement([[3, 1]]) is None and agreement([[1, 0], [0, 1]]) is None


def test_the_interval_covers_the_populations_values_with_careless_voters():
    """300 studies of 250 pairs voted by 30 voters, a fifth of the population clicking at
    random (benchmarks/agreement.py runs more, and other designs): counting the voters, the
    intervals cover new pairs voted by new voters; over the pairs alone they do not."""
    rng = np.random.default_rng(2026)
    truth = population(rng, careless=0.2)
    covered, alone, replicates = np.zeros(2), np.zeros(2), 300
    for _ in range(replicates):
        pair, voter, first = study(rng, 250, voters=30, careless=0.2)
        found = agreement_of_votes(pair, voter, first)
        covered += [found.alpha_low <= truth[0] <= found.alpha_high,
                    found.majority_low <= truth[1] <= found.majority_high]
        only = agreement(np.column_stack([np.bincount(pair, first), np.bincount(pair, ~first)]))
        alone += [only.alpha_low <= truth[0] <= only.alpha_high,
                  only.majority_low <= truth[1] <= only.majority_high]
    assert ((covered / replicates >= 0.92) & (covered / replicates <= 0.98)).all(), (
        covered, truth)
    assert (alone / replicates < 0.8).all(), alone  # (the design is hard: pairs alone fail)
    assert 0.15 < truth[0] < 0.5 and 0.65 < truth[1] < 0.85  # (room both ways)


def test_every_vote_a_new_voters_and_too_few_voters():
    """A vote per voter: the same intervals as over the pairs alone. Fifteen voters: no
    interval, and the note says why."""
    rng = np.random.default_rng(4)
    pair, voter, first = study(rng, 200, careless=0.2)
    counts = np.column_stack([np.bincount(pair, first), np.bincount(pair, ~first)])
    fresh, only = agreement_of_votes(pair, voter, first), agreement(counts)
    assert fresh.alpha == pytest.approx(only.alpha)
    assert fresh.alpha_high - fresh.alpha_low == pytest.approx(
        only.alpha_high - only.alpha_low, rel=0.02)
    assert fresh.voters == len(pair) and only.voters is None
    pair, voter, first = study(rng, 200, voters=15)
    few = agreement_of_votes(pair, voter, first)
    assert few.alpha_low is None and few.majority_high is None and few.voters == 15
    assert "15 voters are worth" in few.note and few.alpha > 0.2


def test_the_benchmark_prints_its_table():
    done = subprocess.run([sys.executable, "benchmarks/agreement.py", "--studies", "5",
                           "--designs", "40x30"], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=seconds(120))
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\s+40\s+30\s+\d+\.\d%\s+\d+\.\d%\s+\d+%\s+\d+\.\d%, \d+\.\d%$",
                     done.stdout, re.M), done.stdout

def test_every_ranking_carries_the_agreement_of_the_votes_it_counts(any_app):
    """The agreement beside a ranking is that of its votes, each with its comparison, voter
    and side (read here apart from the service); the public board shows the figures the
    timer took for the period, none before it ran; a public slice the period's figures."""
    from sqlalchemy import select

    from arena.analysis import rollups
    from arena.analysis.agreement import criterion_agreement
    from arena.analysis.leaderboard import rank_models
    from arena.analysis.tallies import Slice
    from arena.campaigns import demo
    from arena.campaigns.progress import take_public_figures
    from arena.extensions import db
    from arena.models import Comparison, PublishedFigures, Vote

    def by_hand(*where, min_voters=5):
        rows = np.array(db.session.execute(
            select(Vote.comparison_id, Vote.voter_id, Vote.winner_image_id == Comparison.image_a_id)
            .join(Comparison, Comparison.id == Vote.comparison_id)
            .where(Vote.criterion == "preference", Vote.is_validation.is_(False),
                   Vote.flags == 0, Vote.winner_model_id.is_not(None), *where)).all(), dtype=int)
        return agreement_of_votes(rows[:, 0], rows[:, 1], rows[:, 2].astype(bool),
                                  min_voters=min_voters)

    # (a small demo: its slice shown, its intervals given)
    any_app.config.update(MIN_CLUSTERS=5, PUBLIC_SLICE_MIN_VOTERS=5)
    with any_app.app_context():
        demo.load_demo(n_prompts=1, images_per_model=2)
        demo.simulate_votes(150, np.random.default_rng(5))
        rollups.refresh()
        demo.simulate_votes(60, np.random.default_rng(6))  # (past the watermark)
        whole = criterion_agreement("preference")
        assert alike(whole, by_hand()) and whole.voters > 5 and whole.votes > 30
        assert whole.alpha_low < whole.alpha < whole.alpha_high
        english = criterion_agreement("preference", Slice(language="en"))
        assert alike(english, by_hand(Vote.language == "en")) and english.votes < whole.votes
        # the public board: the figures the timer took for the period, none before it ran
        assert rank_models("preference", intervals="instant", public=True).agreement is None
        take_public_figures()
        ranking = rank_models("preference", intervals="instant", public=True)
        assert alike(ranking.agreement, by_hand(Vote.public_at < ranking.as_of))
        assert ranking.agreement.votes > 0
        # a rolled-up public slice: the period's figures, worked out by its first reading
        sliced = rank_models("preference", intervals="instant", public=True,
                             slice_=Slice(language="en"))
        assert alike(sliced.agreement, by_hand(Vote.public_at < ranking.as_of,
                                               Vote.language == "en"))
        # a later reading in the same period reads them back (stored, not counted again)
        import json

        from sqlalchemy import update

        from arena.analysis.agreement import KIND, figures_key

        stored = db.session.execute(select(PublishedFigures.key, PublishedFigures.payload).where(
            PublishedFigures.kind == KIND,
            PublishedFigures.key == figures_key("preference", Slice(language="en")))).one()
        marked = {**json.loads(stored.payload), "alpha": 0.123}
        db.session.execute(update(PublishedFigures).where(PublishedFigures.key == stored.key)
                           .values(payload=json.dumps(marked)))
        db.session.commit()
        again = rank_models("preference", intervals="instant", public=True,
                            slice_=Slice(language="en"))
        assert again.agreement.alpha == 0.123 and again.agreement.votes == sliced.agreement.votes
        # ... and every export of it: the same figures on each row of a file, a line of the table
        import csv
        import io

        import pyarrow.parquet as pq

        from arena.analysis import exports

        found = ranking.agreement
        rows = list(csv.DictReader(io.StringIO(exports.to_csv(ranking))))
        assert len(rows) == len(ranking.models)
        for r in rows:  # (written to 6 significant digits)
            assert (float(r["agreement_alpha"]), float(r["agreement_majority_low"]),
                    int(r["agreement_pairs"])) == (pytest.approx(found.alpha, rel=1e-5),
                                                   pytest.approx(found.majority_low, rel=1e-5),
                                                   found.pairs)
        table = pq.read_table(io.BytesIO(exports.to_parquet(ranking))).to_pylist()
        assert {(r["agreement_alpha_high"], r["agreement_pairs"]) for r in table} == {
            (found.alpha_high, found.pairs)}
        assert f"Krippendorff's alpha {found.alpha:.2f}" in exports.to_table(ranking)
        none = rank_models("preference", intervals="instant", slice_=Slice(language="ar"))
        assert none.agreement is None and "voters agree" not in exports.to_table(none)
        assert {r["agreement_alpha"] for r in csv.DictReader(
            io.StringIO(exports.to_csv(none)))} <= {""}
