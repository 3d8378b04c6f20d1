"""Can gold pairs be told by how often they are served? A long simulation from known truth.

    .venv/bin/python benchmarks/gold_frequency.py [--prompts 32] [--sessions 6000]
        [--every 1000] [--rate 0.5] [--supply-rate R]

A published alignment campaign of 4 models x 4 images per prompt (96 ordinary pairs per
prompt, a first supply of swapped gold pairs sized for the rate: a fifth as many at 0.5),
voted on by simulated voters through the real services (tests/security/frequency.py: each
opens 1 to 12 sessions and answers them as the demo's voters do; the gold check after each
gold answer makes new pairs as a live instance would). Every ``--every`` sessions it reads
how many sessions each pair was put in (what every voter together could count) and prints:

* the share of sessions that carried a gold pair, against ``--rate`` (VALIDATION_RATE);
* gold's mean and largest count against the ordinary pairs';
* the AUC of the count for telling gold from ordinary (0.5: it tells nothing; above, gold
  is served more; below, less) and the held-out balanced accuracy of the best rule on the
  exact count (0.5 is a coin), each with the band a random labelling of as many pairs stays
  in (99.9%, permutations);
* the lift: gold's share among the 5% most-served pairs over its share of all pairs.

``--supply-rate`` sizes the first supply for another rate, to watch the check grow a supply
that is too small (a supply too large is never taken back). The smoke test is
tests/security/test_gold.py's ``test_gold_cannot_be_told_by_how_often_it_is_served``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from harness import scratch_dir
from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena import create_app
from arena.extensions import db
from arena.infra.instance import upgrade_schema
from arena.models import Comparison
from arena.voting import matchmaking
from tests.security.frequency import Snapshot, build, simulate


def print_row(row: Snapshot) -> None:
    print(f"  {row.sessions:>8,d} {row.gold_rate:>9.3f} {row.gold:>5,d} "
          f"{row.gold_mean:>6.2f} / {row.regular_mean:<6.2f} {row.gold_max:>3d} / "
          f"{row.regular_max:<3d} {row.auc:>6.3f} ({row.auc_band[0]:.3f}-{row.auc_band[1]:.3f})"
          f" {row.lookup:>6.3f} ({row.lookup_band[0]:.3f}-{row.lookup_band[1]:.3f})"
          f" {row.lift:>5.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--sessions", type=int, default=6000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=0.5, help="VALIDATION_RATE")
    parser.add_argument("--supply-rate", type=float, help="the rate the first supply is for")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 0 < args.rate <= 1 or not 0 < (args.supply_rate or args.rate) <= 1:
        parser.error("--rate and --supply-rate are probabilities above 0: with no gold there "
                     "is nothing to tell apart")
    rng = np.random.default_rng(args.seed)
    app = create_app({"INSTANCE_PATH": str(scratch_dir("arena-gold-")), "SECRET_KEY": "bench",
                      "PSEUDONYM_KEY": "bench", "RATELIMIT_ENABLED": False,
                      "VALIDATION_RATE": args.rate, "REVEAL_WORD_MS": 0})
    with app.app_context():
        upgrade_schema()
        t0 = time.perf_counter()
        campaign_id = build(args.prompts, rng, args.supply_rate)
        pairs = db.session.scalar(select(func.count()).select_from(Comparison))
        slack = getattr(matchmaking, "GOLD_SLACK", None)  # (None: the code before it)
        print(f"{args.prompts} prompts: {pairs:,d} pairs ({time.perf_counter() - t0:.1f} s); "
              f"VALIDATION_RATE {args.rate}, first supply for {args.supply_rate or args.rate}; "
              f"gold window {matchmaking.GOLD_SAMPLE}, slack {slack}")
        print(f"  {'sessions':>8} {'gold rate':>9} {'gold':>5} {'mean gold/ord.':>15} "
              f"{'max g/o':>9} {'AUC (chance band)':>21} {'lookup (chance band)':>21} "
              f"{'lift':>5}")
        t0 = time.perf_counter()
        simulate(campaign_id, args.sessions, args.every, rng, report=print_row)
        print(f"simulated in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
