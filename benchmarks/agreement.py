"""How often agreement's intervals cover the population's values (arena.ranking.agreement).

    .venv/bin/python benchmarks/agreement.py [--studies 400] [--sizes 60,250,2000]

Each study: ``size`` image pairs, a third of them near-certain (95% for one image), the rest
drawn from Beta(2, 2) (a coin toss to a clear call), 2 to 30 votes each. The population's
Krippendorff alpha comes from the expected sums over 2M pairs, its majority share from 2M
pairs' votes. Prints, per size, the share of studies whose 95% interval held each value.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ranking.agreement import agreement


def study(rng: np.random.Generator, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's chance that a vote goes to its first image, and its votes."""
    certain = rng.random(pairs) < 1 / 3
    p = np.where(certain, rng.choice([0.05, 0.95], pairs), rng.beta(2, 2, pairs))
    return p, rng.integers(2, 31, pairs)


def population(rng: np.random.Generator) -> tuple[float, float]:
    p, n = study(rng, 2_000_000)
    mean_n, mean_first = n.mean(), (n * p).mean()
    alpha = 1 - mean_n * (n * p * (1 - p)).mean() / (mean_first * (mean_n - mean_first))
    votes = rng.binomial(n, p)
    return float(alpha), float(np.maximum(votes, n - votes).sum() / n.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--sizes", default="60,250,2000")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    alpha, majority = population(rng)
    print(f"population: alpha {alpha:.3f}, majority share {majority:.3f}; "
          f"{args.studies} studies per size")
    print(f"{'pairs':>7} {'alpha covered':>14} {'majority covered':>17}")
    for size in (int(s) for s in args.sizes.split(",")):
        held = np.zeros(2)
        for _ in range(args.studies):
            p, n = study(rng, size)
            first = rng.binomial(n, p)
            found = agreement(np.column_stack([first, n - first]))
            held += [found.alpha_low <= alpha <= found.alpha_high,
                     found.majority_low <= majority <= found.majority_high]
        print(f"{size:>7,d} {held[0] / args.studies:>14.1%} {held[1] / args.studies:>17.1%}")


if __name__ == "__main__":
    main()
