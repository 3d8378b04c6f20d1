"""`arena votes export` against psycopg + pyarrow on the same PostgreSQL log, by turns.

    .venv/bin/python benchmarks/exports.py [--votes 1000000] [--rounds 2]
                                           [--postgres URL] [--models 20]

Builds a throwaway database (``benchmarks/scale.py``'s log: voters of 40 votes over random
pairs), then runs, alternately and each in a new process: the command (the vote log as a
Parquet dataset partitioned by campaign, criterion and month, streamed from one snapshot)
and a reference script that reads the same columns with psycopg's server-side cursor, keys
the voters with the same HMAC, and writes the same dataset with pyarrow. Prints each one's
wall time, CPU time (user + system, from the process's own rusage) and peak memory, and
Arena's ratio to the reference (goal: within 2x in CPU and memory).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from harness import scratch_dir
from scale import build_campaign, grow

from arena import create_app
from arena.analysis import published
from arena.extensions import db
from arena.infra.instance import upgrade_schema

ARENA = str(Path(sys.executable).with_name("arena"))
KEY = "bench-pseudonyms"

# the reference: the vote log's columns straight from the driver into Arrow batches
REFERENCE = r'''
import hashlib, hmac, itertools, sys
import psycopg, pyarrow as pa, pyarrow.dataset as ds
url, folder, key = sys.argv[1:4]
SQL = """
SELECT v.id, v.created_at, v.criterion, c.prompt_id, p.category, t.left_image_id,
       t.right_image_id, lm.name, rm.name, v.choice, v.response_ms, v.server_ms, v.flags,
       r.public_id, r.age_group, r.gender, r.country, r.continent, v.is_validation,
       v.correct, v.language, c.campaign_id
FROM vote v JOIN task t ON t.id = v.task_id JOIN comparison c ON c.id = v.comparison_id
LEFT JOIN prompt p ON p.id = c.prompt_id JOIN voter r ON r.id = v.voter_id
JOIN image li ON li.id = t.left_image_id JOIN image ri ON ri.id = t.right_image_id
LEFT JOIN model lm ON lm.id = li.model_id LEFT JOIN model rm ON rm.id = ri.model_id
ORDER BY v.id"""
NAMES = ["vote_id", "created_at", "criterion", "prompt_id", "prompt_category",
         "left_image_id", "right_image_id", "left_model", "right_model", "winner",
         "response_ms", "server_ms", "flags", "voter", "age_group", "gender", "country",
         "continent", "is_validation", "validation_correct", "language", "campaign_id"]
secret = key.encode()
def batches():
    with psycopg.connect(url) as conn, conn.cursor(name="log") as cur:
        cur.itersize = 50_000
        cur.execute(SQL)
        while rows := cur.fetchmany(50_000):
            cols = dict(zip(NAMES, map(list, zip(*rows))))
            cols["voter"] = [hmac.new(secret, p.encode(), hashlib.sha256).hexdigest()[:16]
                             for p in cols["voter"]]
            cols["winner_model"] = [l if w == "left" else r for w, l, r in
                                    zip(cols["winner"], cols["left_model"], cols["right_model"])]
            cols["flags"] = ["" if f == 0 else str(f) for f in cols["flags"]]
            cols["month"] = [t.strftime("%Y-%m") for t in cols["created_at"]]
            yield pa.RecordBatch.from_pydict(cols)
stream = batches()
first = next(stream)
ds.write_dataset(itertools.chain([first], stream), folder, schema=first.schema, format="parquet",
                 partitioning=["campaign_id", "criterion", "month"],
                 partitioning_flavor="hive", max_rows_per_group=50_000,
                 min_rows_per_group=10_000)
'''


def run(command: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak resident MB of ``command``, a process of its own."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        what = "the reference" if command[1] == "-c" else " ".join(command[1:3])
        raise SystemExit(f"{what} failed: {process.stderr.read().decode()[-2000:]}")
    process.returncode = 0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _read(folder: Path) -> list[tuple]:
    """The votes a dataset holds (id, voter, winner's model, partitions), in id order."""
    import pyarrow.dataset as ds

    table = ds.dataset(folder, format="parquet", partitioning="hive").to_table(
        columns=["vote_id", "voter", "winner_model", "criterion", "month"]).sort_by("vote_id")
    return list(zip(*(table[c].to_pylist() for c in table.column_names), strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--models", type=int, default=20)
    args = parser.parse_args()
    name = f"arena_exports_{os.getpid()}"
    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = args.postgres.rpartition("/")
    url = f"{base}/{name}"
    sa_url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    scratch = scratch_dir("arena-exports-")
    try:
        instance = scratch / "instance"
        app = create_app({"INSTANCE_PATH": str(instance), "SECRET_KEY": "bench",
                          "PSEUDONYM_KEY": KEY, "DATABASE_URL": sa_url}, web=False)
        with app.app_context():
            upgrade_schema()
            before = published.cutoff()
            build_campaign(args.models)
            db.engine.dispose()
        t0 = time.perf_counter()
        grow(url, args.votes, 40, before)
        print(f"\nPostgreSQL, {args.votes:,d} votes (log grown in {time.perf_counter() - t0:.0f} s)"
              f", {args.rounds} round(s) by turns")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("ARENA_")},
               "ARENA_INSTANCE_PATH": str(instance), "ARENA_DATABASE_URL": sa_url,
               "ARENA_SECRET_KEY": "bench", "ARENA_PSEUDONYM_KEY": KEY}
        figures: dict[str, list] = {"arena": [], "reference": []}
        for k in range(args.rounds):
            for who in ("arena", "reference"):
                folder = scratch / f"{who}-{k}"
                command = ([ARENA, "votes", "export", str(folder)] if who == "arena" else
                           [sys.executable, "-c", REFERENCE, url, str(folder), KEY])
                figures[who].append(run(command, env))
            same = _read(scratch / f"arena-{k}") == _read(scratch / f"reference-{k}")
            for who in ("arena", "reference"):
                shutil.rmtree(scratch / f"{who}-{k}")
            if not same:
                raise SystemExit("the command and the reference wrote different votes")
        best = {who: [min(f[i] for f in rows) for i in range(3)]
                for who, rows in figures.items()}
        print(f"{'':28}{'wall s':>9}{'CPU s':>9}{'peak MB':>9}   (best of the rounds)")
        for who, label in (("arena", "arena votes export"), ("reference", "psycopg + pyarrow")):
            wall, cpu, rss = best[who]
            print(f"{label:28}{wall:9.2f}{cpu:9.2f}{rss:9.0f}")
        ratio_cpu = best["arena"][1] / best["reference"][1]
        ratio_rss = best["arena"][2] / best["reference"][2]
        print(f"ratio (arena / reference)   CPU {ratio_cpu:.2f}x, memory {ratio_rss:.2f}x"
              f"   (goal within 2x); the same {args.votes:,d} votes written by both")
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
