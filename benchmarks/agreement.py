"""How often agreement's intervals cover the population's values (arena.ranking.agreement),
the population being new image pairs voted by new voters.

    .venv/bin/python benchmarks/agreement.py [--studies 400]
                                             [--designs 60x30,250x30,2000x100,250xfresh]
                                             [--careless 0.2] [--seed 2026]

Each study: ``pairs`` image pairs, a third of them near-certain (95% for one image), the rest
drawn from Beta(2, 2) (a coin toss to a clear call), 2 to 30 votes each, each vote from a
different one of ``voters`` voters (``fresh``: every vote a new voter's), of whom a share
``--careless`` click at random. The population's Krippendorff alpha comes from the expected
sums over 2M pairs, its majority share from 2M pairs' votes, both with the careless share of
the votes. Prints, per design, the share of studies whose 95% interval held each value (of
those given one: a design whose voters are worth fewer than 20 gets none), beside the
intervals over pairs alone (what a file without voters gets).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ranking.agreement import agreement, agreement_of_votes

FRESH = 0  # (voters: every vote a new one's)


def pairs_of(rng: np.random.Generator, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's chance that a careful vote goes to its first image, and its votes."""
    certain = rng.random(pairs) < 1 / 3
    p = np.where(certain, rng.choice([0.05, 0.95], pairs), rng.beta(2, 2, pairs))
    return p, rng.integers(2, 31, pairs)


def study(rng: np.random.Generator, pairs: int, voters: int = FRESH,
          careless: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One study's votes: (pair, voter, went to the first image) per vote."""
    p, n = pairs_of(rng, pairs)
    if voters == FRESH:
        pair = np.repeat(np.arange(pairs), n)
        voter = np.arange(len(pair))
        random = rng.random(len(pair)) < careless
    else:
        n = np.minimum(n, voters)
        pair = np.repeat(np.arange(pairs), n)
        # each pair's votes from different voters: the first n of a shuffle of them all
        voter = np.argsort(rng.random((pairs, voters)), axis=1)
        voter = voter[np.arange(voters) < n[:, None]]
        random = (rng.random(voters) < careless)[voter]
    chance = np.where(random, 0.5, p[pair])
    return pair, voter, rng.random(len(pair)) < chance


def population(rng: np.random.Generator, careless: float = 0.0) -> tuple[float, float]:
    p, n = pairs_of(rng, 2_000_000)
    q = (1 - careless) * p + careless * 0.5
    mean_n, mean_first = n.mean(), (n * q).mean()
    alpha = 1 - mean_n * (n * q * (1 - q)).mean() / (mean_first * (mean_n - mean_first))
    votes = rng.binomial(n, q)
    return float(alpha), float(np.maximum(votes, n - votes).sum() / n.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--designs", default="60x30,250x30,2000x100,250xfresh",
                        help="pairs x voters (fresh: a new voter each vote), comma-separated")
    parser.add_argument("--careless", type=float, default=0.2,
                        help="the share of voters who click at random")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    truth = np.array(population(rng, args.careless))
    print(f"population: alpha {truth[0]:.3f}, majority share {truth[1]:.3f} "
          f"({args.careless:.0%} of voters careless); {args.studies} studies per design")
    print(f"{'pairs':>7} {'voters':>7} {'alpha covered':>14} {'majority covered':>17} "
          f"{'no interval':>12} {'pairs alone: alpha, majority':>29}")
    for design in args.designs.split(","):
        size, _, who = design.partition("x")
        voters = FRESH if who == "fresh" else int(who)
        held, alone, none = np.zeros(2), np.zeros(2), 0
        for _ in range(args.studies):
            pair, voter, first = study(rng, int(size), voters, args.careless)
            found = agreement_of_votes(pair, voter, first)
            counts = np.column_stack([np.bincount(pair, first), np.bincount(pair, ~first)])
            only = agreement(counts)
            alone += [only.alpha_low <= truth[0] <= only.alpha_high,
                      only.majority_low <= truth[1] <= only.majority_high]
            if found.alpha_low is None:
                none += 1
                continue
            held += [found.alpha_low <= truth[0] <= found.alpha_high,
                     found.majority_low <= truth[1] <= found.majority_high]
        given = max(args.studies - none, 1)
        shown = [f"{h / given:.1%}" if none < args.studies else "-" for h in held]
        print(f"{int(size):>7,d} {who:>7} {shown[0]:>14} {shown[1]:>17} "
              f"{none / args.studies:>12.0%} "
              f"{alone[0] / args.studies:>14.1%}, {alone[1] / args.studies:.1%}")


if __name__ == "__main__":
    main()
