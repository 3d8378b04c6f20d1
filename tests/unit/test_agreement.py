"""Agreement per criterion (arena.ranking.agreement): alpha equals the reference package's,
behaves at its ends, and its bootstrap interval covers the population's alpha in a
simulation from a known truth with pairs of very different difficulty and vote counts."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ranking.agreement import agreement
from benchmarks.agreement import population, study

counts_st = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=2,
                     max_size=30).filter(lambda rows: sum(a + b >= 2 for a, b in rows) >= 2)



def alike(a, b) -> bool:
    """Two agreements alike to the last bits a database's order of summing moves."""
    return (a is None) == (b is None) and (a is None or asdict(a) == pytest.approx(
        asdict(b), rel=1e-12, abs=1e-15))


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


def test_the_interval_covers_the_populations_alpha():
    """300 studies of 250 pairs (benchmarks/agreement.py runs more, and other sizes)."""
    rng = np.random.default_rng(2026)
    truth_alpha, truth_majority = population(rng)
    covered, replicates = np.zeros(2), 300
    for _ in range(replicates):
        p, n = study(rng, 250)
        a = rng.binomial(n, p)
        result = agreement(np.column_stack([a, n - a]))
        covered += [result.alpha_low <= truth_alpha <= result.alpha_high,
                    result.majority_low <= truth_majority <= result.majority_high]
    assert ((covered / replicates >= 0.92) & (covered / replicates <= 0.98)).all(), (
        covered, truth_alpha, truth_majority)
    assert 0.3 < truth_alpha < 0.7 and 0.7 < truth_majority < 0.9  # (room both ways)


def test_the_benchmark_prints_its_table():
    done = subprocess.run([sys.executable, "benchmarks/agreement.py", "--studies", "5",
                           "--sizes", "40"], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\s+40\s+\d+\.\d%\s+\d+\.\d%$", done.stdout, re.M), done.stdout

def test_the_rollup_gives_the_logs_counts_and_every_ranking_carries_them(any_app):
    """Each comparison's votes for either image, from the rollup plus the votes past its
    watermark (some of them back-dated), equal the log's; a slice reads the log; every
    ranking, the public one included, carries the agreement of the votes it counts."""
    from arena.analysis import rollups
    from arena.analysis.agreement import criterion_agreement, sides
    from arena.analysis.leaderboard import rank_models
    from arena.analysis.tallies import Slice
    from arena.campaigns import demo
    from arena.campaigns.progress import take_public_figures
    from arena.models import utcnow

    def ordered(rows):
        return sorted(map(tuple, np.asarray(rows).tolist()))

    with any_app.app_context():
        demo.load_demo(n_prompts=1, images_per_model=2)
        demo.simulate_votes(150, np.random.default_rng(5))
        assert rollups.comparison_sides("preference") is None  # (no rollup yet)
        rollups.refresh()
        demo.simulate_votes(60, np.random.default_rng(6))  # (past the watermark, by id)
        log = sides("preference", Slice())
        assert log.sum() > 30 and ordered(rollups.comparison_sides("preference")) == ordered(
            log[log.sum(axis=1) > 0])
        # the next period's refresh adds those votes to the comparisons' rolled-up counts
        assert sum(r.votes for r in rollups.refresh(utcnow() + timedelta(hours=1))) > 10
        assert ordered(rollups.comparison_sides("preference")) == ordered(
            log[log.sum(axis=1) > 0])
        whole = criterion_agreement("preference")
        assert alike(whole, agreement(log))
        english = Slice(language="en")  # (a slice: read from the log)
        assert alike(criterion_agreement("preference", english),
                     agreement(sides("preference", english)))
        assert sides("preference", english).sum() < log.sum()
        # the public board: the figures the timer took for the period, none before it ran
        assert rank_models("preference", intervals="instant", public=True).agreement is None
        take_public_figures()
        ranking = rank_models("preference", intervals="instant", public=True)
        assert alike(ranking.agreement, criterion_agreement(
            "preference", Slice(as_of=ranking.as_of))) and ranking.agreement.votes > 0
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
