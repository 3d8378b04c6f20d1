"""The ranking per prompt from known truth: how often each prompt's intervals cover its
true strengths, and how far the shrunk strengths miss them against each prompt's own fit.

    .venv/bin/python benchmarks/per_prompt.py [--studies 200]

Each study is :func:`benchmarks.simulation.prompt_study`: six models whose strengths move
from prompt to prompt by a normal effect per model and prompt. Prints per design the
intervals' coverage (95% asked), the root mean squared error of the shrunk strengths and of
the prompt's own one-step fit (log units), and the effects' spread found against the true.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.ranking.per_prompt import per_prompt
from benchmarks.simulation import prompt_study

# (effect sd per model, prompts, votes)
DESIGNS = ((0.4, 40, 8000), (0.3, 80, 4000), (0.3, 24, 2000), (0.6, 60, 20000),
           (0.2, 100, 3000), (0.0, 40, 4000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    args = parser.parse_args()
    print(f"{'effect':>6} {'prompts':>7} {'votes':>6} {'votes/prompt':>12} {'covered':>8} "
          f"{'± MC':>6} {'RMSE':>6} {'own fit':>8} {'tau':>6} {'true':>6} {'seconds':>8}")
    for effect, prompts, votes in DESIGNS:
        started, covered, shrunk, raw, taus = time.perf_counter(), [], [], [], []
        for seed in range(args.studies):
            data, truth = prompt_study(seed, effect, prompts, votes)
            found = per_prompt(data)
            low, high = (found.log_strengths + s * 1.959964 * found.std for s in (-1, 1))
            covered.append(np.mean((low <= truth) & (truth <= high)))
            shrunk.append(np.sqrt(np.mean((found.log_strengths - truth) ** 2)))
            raw.append(np.sqrt(np.mean((found.raw - truth) ** 2)))
            taus.append(found.tau)
        se = np.std(covered, ddof=1) / np.sqrt(len(covered)) if len(covered) > 1 else np.nan
        print(f"{effect:6.1f} {prompts:7d} {votes:6d} {votes // prompts:12d} "
              f"{np.mean(covered):8.1%} {se:6.1%} {np.mean(shrunk):6.3f} {np.mean(raw):8.3f} "
              f"{np.mean(taus):6.3f} {effect:6.3f} "
              f"{time.perf_counter() - started:8.1f}")


if __name__ == "__main__":
    main()
