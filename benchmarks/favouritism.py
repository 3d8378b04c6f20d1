"""How large a farm the favouritism screen names, and how many honest voters it names too.

    .venv/bin/python benchmarks/favouritism.py [--studies 10] [--sizes 5,10,15,20,30]
                                               [--farm-votes 60]

Each study: 8 models 280 Elo points apart first to last, 600 honest voters with tastes of
their own (sd 0.5 log units per model) and unequal activity casting 20,000 votes, and a farm
of N identities casting ``--farm-votes`` votes each, voting the weakest model up whenever it is
shown and at random otherwise (:mod:`arena.ranking.favouritism`, alpha 0.01). The honest
voters are on networks of their own but for 10 shared by 10 to 40 of them; the farm is on one
more. Prints, per farm size, the studies where the weakest model was found targeted, the
identities the voter screen named, those it and the network screen named together, the honest
voters named with them, and how far the farm moved the weakest model (Elo points).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ranking import PairCounts, bradley_terry
from arena.ranking.favouritism import favouritism, groups
from benchmarks.simulation import farm_study, networks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=10)
    parser.add_argument("--sizes", default="5,10,15,20,30")
    parser.add_argument("--farm-votes", type=int, default=60)
    args = parser.parse_args()
    print(f"{'farm':>12}  {'targeted':>9}  {'named':>9}  {'+network':>9}  "
          f"{'honest named':>12}  {'moved':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        targeted = named = both = honest = 0
        moved = []
        for seed in range(args.studies):
            data, farm, target = farm_study(1000 + seed, farm=size, farm_votes=args.farm_votes)
            fit = bradley_terry(data.matrix())
            found = favouritism(data, fit)
            flagged = set(found.flagged.tolist())
            together = flagged | set(groups(found, networks(data.n_units, farm, 1000 + seed))
                                     .members)
            targeted += bool(found.targeted[target])
            named += len(flagged & set(farm.tolist()))
            both += len(together & set(farm.tolist()))
            honest += len(together - set(farm.tolist()))
            keep = ~np.isin(data.unit, farm)
            clean = PairCounts(data.n_items, data.unit[keep], data.a[keep], data.b[keep],
                               data.ab[keep], data.ba[keep], data.tie[keep], data.n_units)
            moved.append(fit.ratings[target] - bradley_terry(clean.matrix()).ratings[target])
        label = f"{size} x {args.farm_votes} votes"
        print(f"{label:>14}  {targeted:>4}/{args.studies:<4}  "
              f"{named:>4}/{size * args.studies:<4}  {both:>4}/{size * args.studies:<4}  "
              f"{honest / args.studies:>12.1f}  {np.mean(moved):>+6.0f}")


if __name__ == "__main__":
    main()
