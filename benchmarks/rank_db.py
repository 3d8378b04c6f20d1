"""`arena rank` over millions of stored votes, on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/rank_db.py [--votes 2000000] [--postgres URL]

Builds a throwaway database: 282 prompts x 4 models x 4 images (the source benchmark's size),
then ``--votes`` preference votes inserted with INSERT ... SELECT. Prints the time of the SQL
aggregation, of ``rank_models`` with 1,000 bootstrap rounds, and of the whole ``arena rank``
command as a user runs it (a new process: interpreter start and imports included); then,
the votes moved to yesterday, what the public pages cost: the leaderboard page's fit live
and to the hour's cut-off, and the online Elo replay of the hour's first request.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
from harness import scratch_dir
from sqlalchemy import update
from synthetic import fill_votes, grow_campaign, settle

from arena import create_app
from arena.analysis import published
from arena.analysis.leaderboard import rank_models
from arena.analysis.tallies import tally, win_matrix
from arena.extensions import db
from arena.infra.instance import upgrade_schema
from arena.models import GenModel, Vote, utcnow
from arena.voting.votes import ensure_ratings

ARENA = str(Path(sys.executable).with_name("arena"))


def median_s(fn, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(label: str, instance: Path, url: str | None, n_votes: int) -> None:
    config = {"INSTANCE_PATH": str(instance), "SECRET_KEY": "bench"}
    if url:
        config["DATABASE_URL"] = url
    app = create_app(config)
    with app.app_context():
        upgrade_schema()
        models = [GenModel(name=f"model-{k}") for k in range(4)]
        db.session.add_all(models)
        db.session.commit()
        ensure_ratings([m.id for m in models])
        db.session.commit()
        t0 = time.perf_counter()
        grow_campaign(282, criteria=("preference",))
        total = fill_votes(n_votes)
        settle("vote")  # (without statistics the planner expected 17 rows and sorted 2M on disk)
        build = time.perf_counter() - t0
        t_agg = median_s(lambda: win_matrix("preference"))
        t_voter = median_s(lambda: tally("preference"))
        t_rank = median_s(lambda: rank_models("preference", rounds=1000,
                                              rng=np.random.default_rng(0)), 1)
        public = public_pages()
    env = {**os.environ, "ARENA_INSTANCE_PATH": str(instance), "ARENA_SECRET_KEY": "bench"}
    if url:
        env["ARENA_DATABASE_URL"] = url
    cli = median_s(lambda: subprocess.run(
        [ARENA, "rank", "--criterion", "preference", "--format", "json"], env=env,
        check=True, capture_output=True), 3)
    print(f"\n{label}: {total:,d} stored votes (built in {build:.0f} s)")
    print(f"  SQL aggregation (GROUP BY winner, loser)   {t_agg * 1000:8.0f} ms")
    print(f"  per voter (GROUP BY voter, winner, loser)  {t_voter * 1000:8.0f} ms  "
          f"ratio {t_voter / t_agg:.1f}x")
    print(f"  rank_models, 1000 rounds resampling voters {t_rank * 1000:8.0f} ms")
    print(f"  `arena rank --criterion preference`, whole command, median of 3: "
          f"{cli:.2f} s (target < 1.5 s)")
    print("  public pages (votes before the hour's cut-off, arena.analysis.published):")
    print(f"    online Elo replayed to the cut-off (once an hour)  {public['elo'] * 1000:8.0f} ms")
    print(f"    leaderboard page's fit: live {public['live'] * 1000:.0f} ms, to the cut-off "
          f"{public['cut'] * 1000:.0f} ms (ratio {public['cut'] / public['live']:.2f}x), "
          f"the hour's first {public['first'] * 1000:.0f} ms")


def public_pages() -> dict[str, float]:
    """The leaderboard page's fit (instant intervals, as /leaderboard) live and to the public
    cut-off, and the online Elo replay the first request of an hour does. The votes are
    moved to yesterday first, so that the cut-off counts them all."""
    db.session.execute(update(Vote).values(created_at=utcnow() - timedelta(days=1)))
    db.session.commit()

    def board(public: bool):
        return rank_models("preference", intervals="instant", include_idle=False,
                           public=public)

    published.forget()
    t0 = time.perf_counter()
    board(True)
    first = time.perf_counter() - t0
    return {"elo": median_s(lambda: published._elo_before(published.cutoff()), 1),
            "live": median_s(lambda: board(False)), "cut": median_s(lambda: board(True)),
            "first": first}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--votes", type=int, default=2_000_000)
    parser.add_argument("--postgres", help="an empty PostgreSQL database URL")
    args = parser.parse_args()
    run("SQLite", scratch_dir("arena-rankdb-"), None, args.votes)
    if args.postgres:
        run("PostgreSQL", scratch_dir("arena-rankdb-pg-"), args.postgres,
            args.votes)


if __name__ == "__main__":
    main()
