"""The cohort screen from known truth: how often an honest crowd's newcomers are flagged, and
how large a farm spread thin over identities it flags.

    .venv/bin/python benchmarks/cohorts.py [--studies 200] [--farms 20,40,80,120]

Each study is a :class:`benchmarks.simulation.CohortStudy`: 600 voters of 8 models casting
20,000 votes, the last tenth of the voters new; the line is the timer's (Bonferroni over four
cohorts' statistics at ``SCREEN_COHORT_ALPHA`` 0.001). Prints, per honest design, the
statistics' standard deviation, the share past |z| 3 (a normal's: 0.27%) and the studies
flagged; then, per farm shape and size (14 votes an identity, 4 of them for its aim, the
crowd's majority on the rest), the studies flagged and the farm's and the honest newcomers'
voters sent to waiting.
"""

from __future__ import annotations

import argparse
import sys
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
from scipy.special import ndtri

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ranking import bradley_terry
from arena.ranking.cohorts import cohort_test, count
from benchmarks.simulation import CohortStudy

HONEST = {
    "tastes and prompt effects": CohortStudy(),
    "heavy voters (lognormal sd 2)": CohortStudy(activity_sd=2.0),
    "Zipf voters": CohortStudy(zipf=True),
    "strong tastes (sd 1)": CohortStudy(taste=1.0),
    "newcomers served four models' pairs": CohortStudy(cohort_models=(0, 1, 2, 3)),
    "newcomers served a quarter of the prompts": CohortStudy(cohort_prompts=0.25),
    "newcomers five times as active": CohortStudy(cohort_heavy=5.0),
    "newcomers 2% of the voters": CohortStudy(cohort=0.02),
    "newcomers 40% of the voters": CohortStudy(cohort=0.4),
    "6 prompts, strong effects": CohortStudy(prompts=6, prompt_sd=0.8),
    "a small study (150 voters, 3,000 votes)": CohortStudy(voters=150, votes=3000),
}


def fitted_gaps(data) -> list[tuple[int, int]]:
    """The adjacent gaps of the order all the votes give, as the timer takes them."""
    order = np.argsort(-bradley_terry(data.matrix()).log_strengths, kind="stable")
    return [(int(i), int(j)) for i, j in pairwise(order)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--farms", default="20,40,80,120")
    args = parser.parse_args()
    level = float(ndtri(1 - 0.001 / (4 * count(8, 7))))
    pivotal = float(ndtri(1 - 0.001 / (4 * 7)))
    print(f"line: |z| {level:.2f}; a gap the cohort reversed: z {pivotal:.2f}")
    print(f"\n{'honest design':44} {'sd of z':>8} {'|z|>3':>7} {'flagged':>9} {'seconds':>8}")
    for name, design in HONEST.items():
        started, zs, flagged = time.perf_counter(), [], 0
        for seed in range(args.studies):
            data, new, _, _ = design.draw(10_000 + seed)
            found = cohort_test(data, new, fitted_gaps(data), level, pivotal_level=pivotal)
            zs += [s.z for s in found.statistics]
            flagged += found.flagged
        zs = np.array(zs)
        print(f"{name:44} {zs.std():8.3f} {np.mean(np.abs(zs) > 3):7.2%} "
              f"{flagged:>4}/{args.studies:<4} {time.perf_counter() - started:8.0f}")
    studies = max(args.studies // 10, 1)
    print(f"\n{'farm':34} {'flagged':>9} {'farm waiting':>13} {'honest waiting':>15}")
    for omnipresent in (False, True):
        for size in (int(s) for s in args.farms.split(",")):
            design = CohortStudy(farm=size, omnipresent=omnipresent)
            flagged, farm_out, honest_out = 0, [], []
            for seed in range(studies):
                data, new, _, farm = design.draw(20_000 + seed)
                found = cohort_test(data, new | farm, fitted_gaps(data), level,
                                    pivotal_level=pivotal)
                flagged += found.flagged
                out = np.isin(found.removed, np.flatnonzero(farm))
                farm_out.append(out.sum())
                honest_out.append((~out).sum())
            label = f"{size} x 14 votes, {'omnipresent' if omnipresent else 'direct'}"
            print(f"{label:34} {flagged:>4}/{studies:<4} {np.mean(farm_out):>8.1f}/{size:<4} "
                  f"{np.mean(honest_out):>9.1f}/{int(600 * 0.1)}")


if __name__ == "__main__":
    main()
