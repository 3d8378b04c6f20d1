"""The cohort screen from known truth: how often an honest crowd's newcomers are flagged, and
how large a farm spread thin over identities it flags.

    .venv/bin/python benchmarks/cohorts.py [--studies 200] [--farms 20,40,80,120]

Each study is a :class:`benchmarks.simulation.CohortStudy`: 600 voters of 8 models casting
20,000 votes, the last tenth of the voters new; the new voters are tested as the timer tests a
window's, whole and their busier half (:func:`arena.ranking.cohorts.busier_half`), at the
timer's line (Bonferroni over eight cohorts' statistics at ``SCREEN_COHORT_ALPHA`` 0.001).
Prints, per honest design, the statistics' standard deviation, the share past |z| 3 (a
normal's: 0.27%) and the studies flagged; then, per farm shape and size (14 votes an
identity, 4 of them for its aim, the crowd's majority on the rest), the studies flagged and
the farm's and the honest newcomers' voters sent to waiting; then a farm hidden among many
light newcomers (2,000 voters casting 8,000 votes, 40% of them new; the target 57 Elo behind
its neighbour; half the aimed votes for it, half against the neighbour, the rest as the
crowd draws), flagged by the whole cohort and by either.
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
from arena.ranking.cohorts import busier_half, cohort_test, count
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
    "800 light newcomers among 2,000 voters": CohortStudy(
        voters=2000, votes=8000, cohort=0.4, spread=2.3),
    "the same, strong tastes (sd 1)": CohortStudy(voters=2000, votes=8000, cohort=0.4,
                                                   spread=2.3, taste=1.0),
    "the same, heavy voters (lognormal sd 2)": CohortStudy(
        voters=2000, votes=8000, cohort=0.4, spread=2.3, activity_sd=2.0),
}


def fitted_gaps(data) -> list[tuple[int, int]]:
    """The adjacent gaps of the order all the votes give, as the timer takes them."""
    order = np.argsort(-bradley_terry(data.matrix()).log_strengths, kind="stable")
    return [(int(i), int(j)) for i, j in pairwise(order)]


HIDDEN = {"48 x 14 votes, 4 aimed": {"farm": 48},
          "96 x 7 votes, 2 aimed": {"farm": 96, "farm_votes": 7, "on_target": 2},
          "192 x 4 votes, 1 aimed": {"farm": 192, "farm_votes": 4, "on_target": 1},
          "384 x 4 votes, 1 aimed": {"farm": 384, "farm_votes": 4, "on_target": 1}}


def screened(data, new, level, pivotal):
    """The timer's two tests of a window's new voters: (whole, busier half; None without)."""
    cast = np.bincount(data.ways[0][data.unit], data.ab + data.ba + data.tie,
                       minlength=new.size)
    busy = busier_half(cast, new)
    gaps = fitted_gaps(data)
    return (cohort_test(data, new, gaps, level, pivotal_level=pivotal),
            cohort_test(data, busy, gaps, level, pivotal_level=pivotal) if busy.any() else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--farms", default="20,40,80,120")
    args = parser.parse_args()
    level = float(ndtri(1 - 0.001 / (8 * count(8, 7))))
    pivotal = float(ndtri(1 - 0.001 / (8 * 7)))
    print(f"line: |z| {level:.2f}; a gap the cohort reversed: z {pivotal:.2f}")
    print(f"\n{'honest design':44} {'sd of z':>8} {'|z|>3':>7} {'flagged':>9} {'busy':>5} "
          f"{'seconds':>8}")
    for name, design in HONEST.items():
        started, zs, flagged, busy = time.perf_counter(), [], 0, 0
        for seed in range(args.studies):
            data, new, _, _ = design.draw(10_000 + seed)
            whole, half = screened(data, new, level, pivotal)
            zs += [s.z for found in (whole, half) if found for s in found.statistics]
            flagged += whole.flagged or bool(half and half.flagged)
            busy += bool(half and half.flagged)
        zs = np.array(zs)
        print(f"{name:44} {zs.std():8.3f} {np.mean(np.abs(zs) > 3):7.2%} "
              f"{flagged:>4}/{args.studies:<4} {busy:>5} {time.perf_counter() - started:8.0f}")
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
    print(f"\n{'hidden among 800 light newcomers':34} {'whole':>7} {'either':>7} "
          f"{'farm waiting':>13} {'honest waiting':>15}")
    for label, shape in HIDDEN.items():
        design = CohortStudy(voters=2000, votes=8000, cohort=0.4, both=True,
                             elsewhere_crowd=True, spread=2.3, **shape)
        whole_flagged, either, farm_out, honest_out = 0, 0, [], []
        for seed in range(studies):
            data, new, _, farm = design.draw(30_000 + seed)
            whole, half = screened(data, new | farm, level, pivotal)
            whole_flagged += whole.flagged
            either += whole.flagged or bool(half and half.flagged)
            removed = np.union1d(whole.removed, half.removed if half else [])
            out = np.isin(removed, np.flatnonzero(farm))
            farm_out.append(out.sum())
            honest_out.append((~out).sum())
        print(f"{label:34} {whole_flagged:>3}/{studies:<3} {either:>3}/{studies:<3} "
              f"{np.mean(farm_out):>8.1f}/{shape['farm']:<4} {np.mean(honest_out):>9.1f}/800")


if __name__ == "__main__":
    main()
