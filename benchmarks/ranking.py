"""Ranking benchmark: 2,000,000 synthetic votes over 100 models.

    .venv/bin/pip install -e ".[bench]"      # evalica, the comparison library
    .venv/bin/python benchmarks/ranking.py [--votes N] [--models M]

Prints, from one run: aggregation time, BT fit time, 1,000-round bootstrap time (resampling
single votes, and resampling 20,000 voters), the instant sandwich intervals, and the same fit
by choix.ilsr_pairwise and evalica.bradley_terry on the raw votes, with ratios and a check that
the rankings agree. Medians over repeats where a step is fast enough to repeat.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from arena.ranking import PairCounts, aggregate, bootstrap, bradley_terry, instant_intervals


def timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--votes", type=int, default=2_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--voters", type=int, default=20_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, votes = args.models, args.votes
    strength = rng.normal(0, 1, n)
    a = rng.integers(0, n, votes)
    b = rng.integers(0, n - 1, votes)
    b = b + (b >= a)
    a_wins = rng.random(votes) < 1 / (1 + np.exp(strength[b] - strength[a]))
    winners, losers = np.where(a_wins, a, b), np.where(a_wins, b, a)
    print(f"{votes:,d} synthetic votes over {n} models\n")

    t_agg, wins = timed(lambda: aggregate(winners, losers, n), 5)
    t_fit, result = timed(lambda: bradley_terry(wins), 5)
    t_end, _ = timed(lambda: bradley_terry(aggregate(winners, losers, n)), 5)
    t_boot, boot = timed(lambda: bootstrap(wins, rounds=args.rounds,
                                           rng=np.random.default_rng(1)), 1)
    voter = rng.integers(0, args.voters, votes)
    t_units, units = timed(lambda: PairCounts.from_outcomes(winners, losers, n, units=voter), 1)
    t_unit_boot, by_voter = timed(lambda: bootstrap(units, rounds=args.rounds, fit=result,
                                                    rng=np.random.default_rng(1)), 1)
    t_instant, instant = timed(lambda: instant_intervals(units, result), 3)
    ours = np.argsort(-result.scores)
    print(f"aggregation (bincount)          {t_agg * 1000:9.1f} ms")
    print(f"BT fit on the matrix            {t_fit * 1000:9.1f} ms  ({result.iterations} "
          f"iterations, converged={result.converged})")
    print(f"aggregation + fit, end to end   {t_end * 1000:9.1f} ms  (target < 50 ms)")
    print(f"bootstrap {args.rounds} rounds, single votes {t_boot:7.2f} s   (target < 2 s)")
    print(f"per-voter rows ({units.a.size:,d} rows)      {t_units:7.2f} s")
    print(f"bootstrap {args.rounds} rounds, {args.voters:,d} voters {t_unit_boot:6.2f} s   "
          f"ratio {t_unit_boot / t_boot:4.1f}x single votes")
    print(f"instant (clustered sandwich)    {t_instant * 1000:9.1f} ms")
    width = {name: np.median(r.rating_high - r.rating_low)
             for name, r in (("votes", boot), ("voters", by_voter), ("instant", instant))}
    print("  median 95% CI width, Elo points: " + ", ".join(f"{k} {v:.1f}"
                                                          for k, v in width.items()))

    import choix

    pairs = np.column_stack([winners, losers])
    t_choix, params = timed(lambda: choix.ilsr_pairwise(n, pairs, tol=1e-10), 1)
    params = params - params.mean()
    print(f"\nchoix.ilsr_pairwise on raw votes {t_choix * 1000:9.1f} ms   ratio "
          f"{t_choix / t_end:6.1f}x   max |log p diff| "
          f"{np.max(np.abs(params - result.log_strengths)):.1e}   same ranking: "
          f"{np.array_equal(np.argsort(-params), ours)}")
    try:
        import evalica
    except ImportError:
        print("evalica not installed: pip install -e '.[bench]'")
        return
    # evalica takes a list of Winner values (built outside the timing)
    outcome = [evalica.Winner.X if w else evalica.Winner.Y for w in a_wins.tolist()]

    def run_evalica():
        return evalica.bradley_terry(a, b, outcome, tolerance=1e-10, limit=10_000)

    t_ev, ev = timed(run_evalica, 1)
    ev_scores = ev.scores.reindex(range(n)).to_numpy()
    ev_log = np.log(ev_scores)
    ev_log -= ev_log.mean()
    print(f"evalica.bradley_terry raw votes {t_ev * 1000:9.1f} ms   ratio "
          f"{t_ev / t_end:6.1f}x   max |log p diff| "
          f"{np.max(np.abs(ev_log - result.log_strengths)):.1e}   same ranking: "
          f"{np.array_equal(np.argsort(-ev_scores), ours)}   (target >= 10x)")


if __name__ == "__main__":
    main()
