"""Checks every registered ranking method passes (arena.analysis.methods), in the spirit of
scikit-learn's check_estimator: a method added to the table is run through them with no
test of its own to write. Each ranks vote files through the public path (arena rank
--votes)."""

from __future__ import annotations

import numpy as np
import pytest

from arena.analysis import methods
from arena.analysis.leaderboard import rank_votes_file

NAMES = ["Ant", "Bee", "Cat", "Dog"]
FILE_METHODS = list(methods.METHODS)


@pytest.fixture(autouse=True)
def _context(app):
    with app.app_context():  # (Elo reads its K and scale from the settings)
        yield


def _votes(rng, n=400, names=NAMES, strength=(1.0, 0.5, 0.0, -0.5)):
    rows = []
    for k in range(n):
        i, j = rng.choice(len(names), 2, replace=False)
        p = 1 / (1 + np.exp(strength[j] - strength[i]))
        winner = "left" if rng.random() < p else "right"
        rows.append((names[i], names[j], winner, f"v{k % 40}"))
    return rows


def _write(tmp_path, rows, name="votes.csv"):
    path = tmp_path / name
    path.write_text("left,right,winner,voter\n"
                    + "".join(f"{a},{b},{w},{v}\n" for a, b, w, v in rows))
    return path


def _rank(path, method):
    return rank_votes_file(path, method=method, rounds=60, rng=np.random.default_rng(0),
                           cluster="voter")


def _by_model(ranking):
    return {m.model: m for m in ranking.models}


@pytest.mark.parametrize("method", FILE_METHODS)
def test_intervals_hold_the_point_and_ratings_are_finite(tmp_path, method):
    ranking = _rank(_write(tmp_path, _votes(np.random.default_rng(1))), method)
    for m in ranking.models:
        assert np.isfinite(m.rating), m
        if m.ci_low is not None:
            assert m.ci_low <= m.rating <= m.ci_high, m
    assert ranking.models[0].model == "Ant"


@pytest.mark.parametrize("method", FILE_METHODS)
def test_one_sided_and_disconnected_votes_give_finite_ratings(tmp_path, method):
    one_sided = [("Ant", "Bee", "left", f"v{k}") for k in range(30)]
    apart = one_sided + [("Cat", "Dog", "right", f"w{k}") for k in range(30)]
    for rows in (one_sided, apart):
        ranking = _rank(_write(tmp_path, rows), method)
        assert all(np.isfinite(m.rating) for m in ranking.models if m.rating is not None)


@pytest.mark.parametrize("method", FILE_METHODS)
def test_renaming_the_models_renames_the_results(tmp_path, method):
    rows = _votes(np.random.default_rng(2))
    other = {"Ant": "Zed", "Bee": "Yak", "Cat": "Xen", "Dog": "Wol"}
    first = _by_model(_rank(_write(tmp_path, rows), method))
    renamed = _by_model(_rank(_write(tmp_path, [(other[a], other[b], w, v)
                                                for a, b, w, v in rows], "b.csv"), method))
    for name, row in first.items():
        assert renamed[other[name]].rating == pytest.approx(row.rating, abs=1e-6)


@pytest.mark.parametrize("method", FILE_METHODS)
def test_swapping_left_and_right_changes_nothing(tmp_path, method):
    rows = _votes(np.random.default_rng(3))
    swapped = [(b, a, "right" if w == "left" else "left", v) for a, b, w, v in rows]
    first = _by_model(_rank(_write(tmp_path, rows), method))
    second = _by_model(_rank(_write(tmp_path, swapped, "b.csv"), method))
    for name, row in first.items():
        assert second[name].rating == pytest.approx(row.rating, abs=1e-6)


@pytest.mark.parametrize("method", FILE_METHODS)
def test_only_an_order_dependent_method_hears_the_votes_order(tmp_path, method):
    rows = _votes(np.random.default_rng(4))
    first = _by_model(_rank(_write(tmp_path, rows), method))
    later = _by_model(_rank(_write(tmp_path, rows[::-1], "b.csv"), method))
    moved = max(abs(later[n].online_elo - r.online_elo) if r.online_elo is not None
                else abs(later[n].rating - r.rating) for n, r in first.items())
    if methods.METHODS[method].order_dependent:
        assert moved > 1e-6
    else:
        assert moved < 1e-6


def test_every_method_in_the_table_has_its_adapter():
    from arena.analysis.leaderboard import FITS

    assert set(FITS) == set(methods.METHODS)


@pytest.mark.parametrize("method", FILE_METHODS)
def test_every_method_ranks_the_databases_votes(method, app):
    from arena.analysis.leaderboard import rank_models
    from tests.factories import answer, make_campaign, start

    app.config["VALIDATION_RATE"] = 0.0
    make_campaign()
    for seed in range(4):
        voter, session = start(seed=seed)
        for task in session.tasks:
            answer(voter, task, "left")
    ranking = rank_models("preference", method=method, rounds=20, intervals="instant",
                          include_idle=False, rng=np.random.default_rng(0))
    assert ranking.method == method and ranking.total_votes == 12
    assert ranking.models and all(np.isfinite(m.rating) for m in ranking.models)
    assert [m.rank for m in ranking.models] == list(range(1, len(ranking.models) + 1))
