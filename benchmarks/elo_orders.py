"""How often the public Elo table puts a model outside its published rank set: one keyed
order of the votes against the mean over ``ELO_PUBLIC_ORDERS`` keyed orders, for an honest
crowd and with a patient farm of a few percent of the votes.

    .venv/bin/python benchmarks/elo_orders.py [--studies 300] [--votes 8000]
                                              [--farm 0.08] [--orders 32] [--seed 0]
                                              [--cost VOTES]

Each study: the farm benchmark's eight models and crowd log-strengths (benchmarks/farm.py),
``--votes`` honest votes on pairs drawn at random, and the rank sets the public page
publishes from them (Bradley-Terry with normal-approximation simultaneous sets,
:func:`arena.ranking.ranks.from_normal`). Then a farm adds ``--farm`` as many votes again,
on pairs drawn the same way: its model (the 6th, Grit-0.5) wins every game it plays, every
other pair is drawn as the crowd draws (so its record looks like any newcomer's). Counted:
the studies where some model's place on the Elo table (``ELO_K`` 4, the votes in keyed
orders from their ids) falls outside its pre-farm rank set, before and after the farm, with
one keyed order and with the mean over ``--orders``; and where the farm's model passed its
upper neighbour on each. Pure numpy: the same functions the public Elo replay calls
(:func:`arena.ranking.elo.keyed_mean`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from arena.ranking import bradley_terry
from arena.ranking.elo import keyed_mean
from arena.ranking.ranks import from_normal

# benchmarks/farm.py's crowd: the demo's four models and the four it adds, best first
STRENGTHS = np.array([1.0, 0.8, 0.6, 0.2, -0.4, -0.8, -1.2, -1.5])
TARGET = 5


def votes(n: int, rng, favour: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` games on random pairs, won as the crowd's strengths say (``favour`` winning
    each game it plays)."""
    a = rng.integers(0, STRENGTHS.size, n)
    b = (a + rng.integers(1, STRENGTHS.size, n)) % STRENGTHS.size
    a_wins = rng.random(n) < 1 / (1 + np.exp(STRENGTHS[b] - STRENGTHS[a]))
    if favour is not None:
        a_wins = np.where(a == favour, True, np.where(b == favour, False, a_wins))
    return np.where(a_wins, a, b), np.where(a_wins, b, a)


def rank_sets(winners, losers):
    """The page's rank sets: best and worst place of each model."""
    n = STRENGTHS.size
    wins = np.zeros((n, n))
    np.add.at(wins, (winners, losers), 1)
    fit = bradley_terry(wins)
    theta = fit.log_strengths
    games = wins + wins.T
    p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    weight = games * p * (1 - p)
    information = np.diag(weight.sum(axis=1)) - weight
    sets = from_normal(theta, np.linalg.pinv(information))
    return sets.best, sets.worst


def places(ratings) -> np.ndarray:
    return np.argsort(np.argsort(-ratings, kind="stable"), kind="stable") + 1


def cost(n: int, orders: int) -> None:
    """CPU seconds of the public Elo's replay of ``n`` votes: one keyed order, and the mean
    of ``orders`` (what the timer's run spends on it once a period)."""
    rng = np.random.default_rng(0)
    winners, losers = votes(n, rng)
    ids = np.arange(1, n + 1)
    taken = []
    for m in (1, orders):
        started = time.process_time()
        keyed_mean(ids, winners, losers, STRENGTHS.size, 12345, m)
        taken.append(time.process_time() - started)
    print(f"the replay of {n:,d} votes: one keyed order {taken[0]:.2f} s CPU, the mean of "
          f"{orders} {taken[1]:.2f} s ({taken[1] / taken[0]:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=300)
    parser.add_argument("--votes", type=int, default=8000, help="honest votes a study")
    parser.add_argument("--farm", type=float, default=0.08, help="the farm's votes, as a "
                        "share of the honest ones")
    parser.add_argument("--orders", type=int, default=32, help="keyed orders averaged")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cost", type=int, default=0, metavar="VOTES",
                        help="also time the replay of VOTES votes: one order, and the mean")
    args = parser.parse_args()
    if args.cost:
        cost(args.cost, args.orders)
    rng = np.random.default_rng(args.seed)
    n = STRENGTHS.size
    outside = {(orders, when): 0 for orders in (1, args.orders) for when in ("honest", "farm")}
    passed = dict.fromkeys((1, args.orders, "bt"), 0)
    started = time.perf_counter()
    for _ in range(args.studies):
        winners, losers = votes(args.votes, rng)
        best, worst = rank_sets(winners, losers)
        farm_w, farm_l = votes(int(args.farm * args.votes), rng, favour=TARGET)
        both_w, both_l = np.r_[winners, farm_w], np.r_[losers, farm_l]
        key = int(rng.integers(0, 2**63))
        for orders in (1, args.orders):
            for when, (w, lo) in (("honest", (winners, losers)), ("farm", (both_w, both_l))):
                ids = np.arange(1, w.size + 1)
                place = places(keyed_mean(ids, w, lo, n, key, orders))
                outside[orders, when] += bool(((place < best) | (place > worst)).any())
                if when == "farm":
                    passed[orders] += bool(place[TARGET] < TARGET + 1)
        wins = np.zeros((n, n))
        np.add.at(wins, (both_w, both_l), 1)
        passed["bt"] += bool(places(bradley_terry(wins).ratings)[TARGET] < TARGET + 1)
    took = time.perf_counter() - started
    print(f"{args.studies} studies of {args.votes:,d} honest votes, a farm of "
          f"{args.farm:.0%} more for the 6th model ({took:.0f} s)")
    print("studies with an Elo table place outside its published rank set:")
    for orders in (1, args.orders):
        label = "one keyed order" if orders == 1 else f"mean of {orders} keyed orders"
        print(f"  {label:28} honest {outside[orders, 'honest'] / args.studies:6.1%}   "
              f"with the farm {outside[orders, 'farm'] / args.studies:6.1%}   "
              f"farm's model past its neighbour {passed[orders] / args.studies:6.1%}")
    print(f"  {'Bradley-Terry (the page)':28} {'':20}farm's model past its neighbour "
          f"{passed['bt'] / args.studies:6.1%}")


if __name__ == "__main__":
    main()
