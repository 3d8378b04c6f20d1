"""How `arena rank` starts: its CPU on an empty database against a minimal script that does
the same query and fit (SQLAlchemy Core over the vote log, the Bradley-Terry core), run by
turns so the ratio holds on a busy machine; and `arena --help`'s CPU.

    .venv/bin/python benchmarks/cli_start.py [--rounds 7]

Prints each command's median CPU seconds (user + system of the finished process), the
ratio of `arena rank` to the script (goal: 1.3), and `arena --help`'s (goal: 0.3 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

from harness import scratch_dir

BIN = Path(sys.executable).parent
# the same reading and fit as `arena rank --criterion preference` on the embedded database
MINIMAL = """
import sys
import numpy as np
import sqlalchemy as sa
from arena.ranking.bradley_terry import bradley_terry

engine = sa.create_engine(sys.argv[1])
with engine.connect() as connection:
    names = [r[0] for r in connection.execute(sa.text("SELECT name FROM model"))]
    rows = connection.execute(sa.text(
        "SELECT winner_model_id, loser_model_id, count(*) FROM vote "
        "WHERE criterion = 'preference' AND flags = 0 AND is_validation = 0 "
        "GROUP BY winner_model_id, loser_model_id")).all()
wins = np.zeros((max(len(names), 2), max(len(names), 2)))
for winner, loser, n in rows:
    wins[winner - 1, loser - 1] += n
print(len(names), bradley_terry(wins, prior=1e-3).log_strengths.round(3))
"""


def cpu(command: list[str], env: dict) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    folder = scratch_dir("arena-cli-start-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(ARENA_INSTANCE_PATH=str(folder), ARENA_SECRET_KEY="bench",
               ARENA_PSEUDONYM_KEY="bench")
    subprocess.run([str(BIN / "arena"), "db", "upgrade"], env=env, check=True,
                   capture_output=True)
    script = folder / "minimal.py"
    script.write_text(MINIMAL)
    rank = [str(BIN / "arena"), "rank", "--criterion", "preference"]
    minimal = [sys.executable, str(script), f"sqlite:///{folder / 'arena.sqlite3'}"]
    helps = [str(BIN / "arena"), "--help"]
    for command in (rank, minimal, helps):  # (a warm-up each: the page cache)
        cpu(command, env)
    times = {"rank": [], "minimal": [], "help": []}
    for _ in range(args.rounds):
        times["rank"].append(cpu(rank, env))
        times["minimal"].append(cpu(minimal, env))
        times["help"].append(cpu(helps, env))
    ratios = [r / m for r, m in zip(times["rank"], times["minimal"], strict=True)]
    print(f"{args.rounds} rounds by turns, CPU seconds (median):")
    print(f"  arena rank --criterion preference (empty database) "
          f"{statistics.median(times['rank']):.2f}")
    print(f"  the same query and fit as a script               "
          f"{statistics.median(times['minimal']):.2f}")
    print(f"  arena --help                                       "
          f"{statistics.median(times['help']):.2f} (goal 0.3)")
    print(f"ratio arena rank / script: {statistics.median(ratios):.2f} (goal 1.3)")


if __name__ == "__main__":
    main()
