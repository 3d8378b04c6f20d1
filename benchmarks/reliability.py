"""Rankings weighted by the voters' reliability, from a known truth.

    .venv/bin/python benchmarks/reliability.py [--studies 100] [--voters 400]

Each study draws a crowd (:func:`simulation.attentive_crowd`): 8 models, attentive voters
of the crowd's taste, a minority of attentive voters with two neighbouring models swapped,
and blind tappers; heavy voters; answers from a probit curve (not the logistic one the
ranking fits) or the logistic one; a tenth of each voter's tasks gold, or none; and
minorities whose order is the crowd's reversed, which the weights take for blind. Per design
it prints how often the voter-clustered 95% intervals cover the attentive crowd's
population value (its minority included) unweighted and weighted by reliability
(``arena rank --weights reliability``), the mean error of the log-strengths, the mean
reliability of each kind of voter, how often the taste check reported that the voters
taken for blind agree with one another, and the coverage and error weighted by gold answers
alone (``--weights gold``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ranking.reliability import fit, taste_check, weighted
from benchmarks.simulation import attentive_crowd, covered

DESIGNS = [  # (blind, minority, probit curve, gold, the minority's order reversed)
    (0.0, 0.15, True, True, False),
    (0.1, 0.15, True, True, False),
    (0.3, 0.15, True, True, False),
    (0.3, 0.15, True, False, False),
    (0.3, 0.15, False, False, False),
    (0.3, 0.3, True, True, False),
    (0.5, 0.15, True, True, False),
    (0.0, 0.3, True, True, True),
    (0.2, 0.1, True, True, True),
]


def study(design, studies: int, voters: int, seed: int) -> dict:
    blind, minority, probit, gold, reverse = design
    rng = np.random.default_rng(seed)
    cover, error, r, reported = [[], [], []], [[], [], []], [[], [], []], 0
    for _ in range(studies):
        data, right, wrong, kind, _, truth = attentive_crowd(
            rng, voters=voters, blind=blind, minority=minority, probit=probit, gold=gold,
            reverse=reverse)
        found, strengths = fit(data, right, wrong)
        reported += taste_check(data, found.r, strengths).taste
        by_gold, _ = fit(data, right, wrong, votes=False)
        for k, counts in enumerate((data, weighted(data, found.r), weighted(data, by_gold.r))):
            inside, err = covered(counts, truth)
            cover[k].append(inside.mean())
            error[k].append(err)
        for c in range(3):
            r[c] += found.r[kind == c].tolist()
    return {"cover": [float(np.mean(c)) for c in cover],
            "error": [float(np.mean(e)) for e in error],
            "r": [float(np.mean(v)) if v else float("nan") for v in r],
            "reported": reported / studies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=100)
    parser.add_argument("--voters", type=int, default=400)
    args = parser.parse_args()
    print(f"{args.studies} studies per design, {args.voters} voters, 8 models")
    print(f"{'blind':>5} {'minority':>17} {'curve':>8} {'gold':>4} | {'coverage':>17} | "
          f"{'error (log-strength)':>20} | reliability: crowd minority blind | taste reported"
          f" | weighted by gold alone: coverage, error")
    print(f"{'':>39}| {'plain':>8} {'weighted':>8} | {'plain':>9} {'weighted':>10} |")
    for seed, design in enumerate(DESIGNS):
        blind, minority, probit, gold, reverse = design
        found = study(design, args.studies, args.voters, seed)
        order = "reversed" if reverse else "a swap"
        print(f"{blind:5.0%} {minority:5.0%} {order:>11} {'probit' if probit else 'logistic':>8} "
              f"{'yes' if gold else 'no':>4} | {found['cover'][0]:8.1%} "
              f"{found['cover'][1]:8.1%} | {found['error'][0]:9.3f} {found['error'][1]:10.3f}"
              f" | {found['r'][0]:5.2f} {found['r'][1]:8.2f} {found['r'][2]:5.2f} | "
              f"{found['reported']:.0%} | {found['cover'][2]:.1%}, {found['error'][2]:.3f}")


if __name__ == "__main__":
    main()
