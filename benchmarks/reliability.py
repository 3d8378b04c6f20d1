"""Rankings weighted by the voters' reliability, from a known truth.

    .venv/bin/python benchmarks/reliability.py [--studies 100] [--voters 400]

Each study draws a crowd (:func:`simulation.attentive_crowd`): 8 models, attentive voters
of the crowd's taste, a minority of attentive voters with two neighbouring models swapped,
and blind tappers; heavy voters; answers from a probit curve (not the logistic one the
ranking fits) or the logistic one; a tenth of each voter's tasks gold, or none. Per design
it prints how often the voter-clustered 95% intervals cover the attentive crowd's
population value (its minority included) unweighted and weighted by reliability
(``arena rank --weights reliability``), the mean error of the log-strengths, and the mean
reliability of each kind of voter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ranking.reliability import fit, weighted
from benchmarks.simulation import attentive_crowd, covered

DESIGNS = [  # (blind, minority, probit curve, gold)
    (0.0, 0.15, True, True),
    (0.1, 0.15, True, True),
    (0.3, 0.15, True, True),
    (0.3, 0.15, True, False),
    (0.3, 0.15, False, False),
    (0.3, 0.3, True, True),
    (0.5, 0.15, True, True),
]


def study(design, studies: int, voters: int, seed: int) -> dict:
    blind, minority, probit, gold = design
    rng = np.random.default_rng(seed)
    cover, error, r = [[], []], [[], []], [[], [], []]
    for _ in range(studies):
        data, right, wrong, kind, _, truth = attentive_crowd(
            rng, voters=voters, blind=blind, minority=minority, probit=probit, gold=gold)
        found, _ = fit(data, right, wrong)
        for k, counts in enumerate((data, weighted(data, found.r))):
            inside, err = covered(counts, truth)
            cover[k].append(inside.mean())
            error[k].append(err)
        for c in range(3):
            r[c] += found.r[kind == c].tolist()
    return {"cover": [float(np.mean(c)) for c in cover],
            "error": [float(np.mean(e)) for e in error],
            "r": [float(np.mean(v)) if v else float("nan") for v in r]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=100)
    parser.add_argument("--voters", type=int, default=400)
    args = parser.parse_args()
    print(f"{args.studies} studies per design, {args.voters} voters, 8 models")
    print(f"{'blind':>5} {'minority':>8} {'curve':>8} {'gold':>4} | {'coverage':>17} | "
          f"{'error (log-strength)':>20} | reliability: crowd minority blind")
    print(f"{'':>30}| {'plain':>8} {'weighted':>8} | {'plain':>9} {'weighted':>10} |")
    for seed, design in enumerate(DESIGNS):
        blind, minority, probit, gold = design
        found = study(design, args.studies, args.voters, seed)
        print(f"{blind:5.0%} {minority:8.0%} {'probit' if probit else 'logistic':>8} "
              f"{'yes' if gold else 'no':>4} | {found['cover'][0]:8.1%} "
              f"{found['cover'][1]:8.1%} | {found['error'][0]:9.3f} {found['error'][1]:10.3f}"
              f" | {found['r'][0]:5.2f} {found['r'][1]:8.2f} {found['r'][2]:5.2f}")


if __name__ == "__main__":
    main()
