"""The coverage harness: every interval Arena publishes, checked against known truth.

    .venv/bin/python benchmarks/coverage.py [--replicates 400] [--rounds 400] [--only TEXT]
                                            [--methods bootstrap,instant,...]

For each design of ``benchmarks.simulation.designs()`` (balanced and unbalanced pairs, 2k
and 20k votes, 40% ties from Davidson's model and from a threshold, careless voters with
tastes of their own, prompt effects, a few heavy voters, unequal post-stratification cells
against the population value, 15 and 30 models spread as on a public leaderboard) it
simulates ``--replicates`` studies from known strengths and prints, per method, the share of
models whose 95% interval covered the truth (target 93-97%) with its Monte Carlo standard
error,
the mean width in Elo points, the share of studies where every interval of the table covered
at once, the share where every model's true rank was inside its rank set, the share where
some "surely ahead" call was wrong, and the share where a tier put a truly worse model above
a better one. "old bootstrap" (single votes resampled)
and "instant normal" (the sandwich with the normal's quantiles, not Student's t with the
effective units) are shown for comparison. Elo's intervals are checked on the same designs
(against Elo averaged over orders), Davidson's on the tie designs (against the generating
strengths), then HYPE-infinity (two-way bootstrap, against evaluators only) and HYPE-time
(the isotonic threshold, against the paper's figure: coverage, width and bias; evaluators
of one curve family and of three). One run,
seeded; the Monte Carlo error of a coverage near 95% over R replicates of n models is about
sqrt(0.05 * 0.95 / (R n)).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.simulation import (
    DAVIDSON,
    ELO,
    METHODS,
    NORMAL,
    OLD,
    coverage,
    designs,
    hype_coverage,
    hype_designs,
)


def _pct(value: float, width: int) -> str:
    """A share, or "-" where no study showed an interval."""
    return f"{'-':>{width}s}" if math.isnan(value) else f"{value:{width}.1%}"


def _num(value: float, width: int) -> str:
    return f"{'-':>{width}s}" if math.isnan(value) else f"{value:{width}.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--slow-replicates", type=int, default=200,
                        help="for Elo, Davidson and HYPE-time, whose rounds refit or replay")
    parser.add_argument("--only", help="run the designs whose name contains this")
    everything = (*METHODS, NORMAL, OLD, ELO, DAVIDSON)
    parser.add_argument("--methods", default=",".join(everything),
                        help=f"comma-separated, among: {', '.join(everything)} (default all)")
    args = parser.parse_args()
    chosen = [m.strip() for m in args.methods.split(",")]
    if set(chosen) - set(everything):
        parser.error(f"--methods: choose among {', '.join(everything)}")
    names = [design.name for design in (*designs(), *hype_designs())]
    if args.only and not any(args.only in name for name in names):
        parser.error(f"--only {args.only!r} matches no design; the designs are: "
                     + "; ".join(names))
    print(f"{args.replicates} replicates per design, {args.rounds} bootstrap rounds\n")
    print(f"{'design':58s} {'method':14s} {'covered':>8s} {'± MC':>5s} {'width':>7s} "
          f"{'all at once':>11s} "
          f"{'rank sets':>9s} {'wrong calls':>11s} {'tier order':>10s} {'withheld':>8s}")
    worst = {}
    for design in designs():
        if args.only and args.only not in design.name:
            continue
        t0 = time.perf_counter()
        fast = [m for m in (*METHODS, NORMAL, OLD) if m in chosen]
        # (no fast method chosen: the studies are drawn for the slow ones alone)
        result = coverage(design, args.replicates if fast else 0, args.rounds, methods=fast)
        slow = [ELO] if not design.cells and ELO in chosen else []
        # (Davidson's target is the strengths that generated the votes: its own model's)
        slow += [DAVIDSON] if (design.tie_rate and design.ties == "davidson"
                               and DAVIDSON in chosen) else []
        for method in slow:  # Elo: 1,000 replays; Davidson: 200 refits
            extra = coverage(design, args.slow_replicates, 1000 if method == ELO else 200,
                             methods=(method,), seed=1)
            for field in ("covered", "covered_se", "width", "all_covered", "rank_sets",
                          "tier_errors", "tier_order", "withheld"):
                getattr(result, field).update(getattr(extra, field))
        for method in (*fast, *slow):
            print(f"{design.name:58s} {method:14s} {_pct(result.covered[method], 8)} "
                  f"{_pct(result.covered_se[method], 5)} {_num(result.width[method], 7)} "
                  f"{_pct(result.all_covered[method], 11)} "
                  f"{_pct(result.rank_sets[method], 9)} {_pct(result.tier_errors[method], 11)} "
                  f"{_pct(result.tier_order[method], 10)} {result.withheld[method]:8.1%}")
            if method not in (OLD, NORMAL) and result.withheld.get(method, 0) < 1:
                worst[(design.name, method)] = result.covered[method]
        print(f"{'':58s} ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"\n{'HYPE design':46s} {'method':16s} {'truth':>7s} {'covered':>8s} {'± MC':>5s} "
          f"{'width':>7s} {'bias':>7s}")
    for design in hype_designs():
        if args.only and args.only not in design.name:
            continue
        t0 = time.perf_counter()
        reps = args.replicates if design.mode == "infinity" else args.slow_replicates
        result = hype_coverage(design, reps, rounds=2000)
        for method, covered in result.covered.items():
            se = math.sqrt(covered * (1 - covered) / reps)  # (one interval per study)
            print(f"{design.name:46s} {method:16s} {result.estimand:7.1f} {covered:8.1%} "
                  f"{se:5.1%} {result.width[method]:7.1f} {result.bias[method]:+7.2%}")
            if method in ("two-way", "threshold") and "bias" not in design.name:
                worst[(design.name, method)] = covered
        print(f"{'':46s} ({time.perf_counter() - t0:.0f} s)", flush=True)
    inside = sum(0.93 <= c <= 0.97 for c in worst.values())
    print(f"\n{inside} of {len(worst)} published intervals inside 93-97%; lowest "
          f"{min(worst.values()):.1%}, highest {max(worst.values()):.1%}")


if __name__ == "__main__":
    main()
