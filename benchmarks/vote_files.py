"""Ranking a file of votes, whole commands side by side: ``arena rank --votes`` without
intervals, with its default intervals, and evalica's Bradley-Terry on the same file.

    .venv/bin/pip install -e ".[bench]"      # evalica
    .venv/bin/python benchmarks/vote_files.py [--votes 2000000] [--models 100]
                                              [--voters 20000] [--repeats 3]

Writes a CSV of ``--votes`` synthetic votes (``left,right,winner,voter``: Bradley-Terry
strengths, 10% ties, ``--voters`` voters) and times, as medians of ``--repeats`` runs of each
whole command in a new process (start-up, reading, fitting, writing):

* ``arena rank --votes FILE --bootstrap 0`` (goal: at most evalica's time);
* ``arena rank --votes FILE`` (1,000 bootstrap rounds resampling voters; goal: at most twice
  evalica's);
* evalica: pandas reads the file, ``evalica.bradley_terry`` fits it, the scores printed.

It prints the reading alone too: ``read_votes`` (pyarrow) against the row-by-row reader.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from harness import instance_env, median_s, scratch_dir

ARENA = str(Path(sys.executable).with_name("arena"))
EVALICA = """
import sys
import evalica
import pandas as pd
votes = pd.read_csv(sys.argv[1], usecols=["left", "right", "winner"])
winners = votes["winner"].map({"left": evalica.Winner.X, "right": evalica.Winner.Y,
                               "tie": evalica.Winner.Draw})
result = evalica.bradley_terry(votes["left"], votes["right"], winners)
print(result.scores.sort_values(ascending=False).to_string())
"""


def write_votes(path: Path, n_votes: int, n_models: int, n_voters: int) -> None:
    rng = np.random.default_rng(0)
    strength = rng.normal(0, 1, n_models)
    a = rng.integers(0, n_models, n_votes)
    b = rng.integers(0, n_models - 1, n_votes)
    b = b + (b >= a)
    p = 1 / (1 + np.exp(strength[b] - strength[a]))
    draw = rng.random(n_votes)
    outcome = np.where(draw < 0.1, "tie", np.where(rng.random(n_votes) < p, "left", "right"))
    names = np.array([f"model-{k:03d}" for k in range(n_models)])
    voters = np.char.add("voter-", rng.integers(0, n_voters, n_votes).astype(str))
    rows = np.stack([names[a], names[b], outcome, voters], axis=1)
    with path.open("w") as out:
        out.write("left,right,winner,voter\n")
        np.savetxt(out, rows, fmt="%s", delimiter=",")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=2_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--voters", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3, help="runs per median (default 3)")
    args = parser.parse_args()
    folder = scratch_dir("arena-vote-files-")
    path = folder / "votes.csv"
    t0 = time.perf_counter()
    write_votes(path, args.votes, args.models, args.voters)
    print(f"{args.votes:,d} votes over {args.models} models by {args.voters:,d} voters "
          f"({path.stat().st_size / 1e6:.0f} MB CSV, written in {time.perf_counter() - t0:.0f} s)")
    env = instance_env(folder / "instance", None)

    def run(*command):
        return lambda: subprocess.run(command, env=env, check=True, capture_output=True)

    bare = median_s(run(ARENA, "rank", "--votes", str(path), "--bootstrap", "0",
                        "--format", "csv"), args.repeats)
    full = median_s(run(ARENA, "rank", "--votes", str(path), "--format", "csv"), args.repeats)
    evalica = None
    if importlib.util.find_spec("evalica") is None:
        print("  evalica not installed: pip install -e '.[bench]' (no ratios)")
    else:
        evalica = median_s(run(sys.executable, "-c", EVALICA, str(path)), args.repeats)
    from arena.analysis.vote_files import _read_rows, read_votes

    fast = median_s(lambda: read_votes(path), args.repeats)
    rows = median_s(lambda: _read_rows(path), 1)
    for label, seconds, goal in (("no intervals     ", bare, 1), ("default intervals", full, 2)):
        ratio = f"   {seconds / evalica:4.2f} x evalica (goal <= {goal})" if evalica else ""
        print(f"  arena rank --votes, {label} {seconds:6.2f} s{ratio}")
    if evalica:
        print(f"  evalica (pandas read + bradley_terry) {evalica:6.2f} s")
    print(f"  reading alone: pyarrow {fast:.2f} s, row by row {rows:.2f} s")


if __name__ == "__main__":
    main()
