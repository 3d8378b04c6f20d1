"""A capacity model on paper: what one vote costs the app server and PostgreSQL, measured here,
and what that means for the app servers and PostgreSQL cores a vote rate needs.

    .venv/bin/python benchmarks/capacity.py [--postgres URL] [--cycles 300] [--prompts 24]
                                            [--headroom 0.7] [--set KEY=VALUE]

A fresh demo instance (``--prompts`` prompts, its gold made ahead) in a scratch database on
the PostgreSQL server of ``--postgres`` (dropped at the end) is driven in-process through the
JSON API, one phone voter at a time, as in benchmarks/request_cost.py: a session, the caption
confirmations, three votes, ``--cycles`` times after 30 uncounted. Per kind of request, and
per vote (a third of a cycle, its session and confirmations included), it measures:

* the app's CPU: this process's CPU time (``time.process_time``), the Flask app and the
  database driver, without an HTTP server in front (gunicorn and the proxy cost more:
  benchmarks/ingest.py measures the whole stack under load);
* PostgreSQL's CPU: the CPU time of the server processes serving this database, read from
  ``/proc/<pid>/stat`` around each request (in clock ticks of 10 ms: a sum over hundreds of
  requests, not a single one), and that of the server's own processes (WAL writer,
  checkpointer, autovacuum) over the whole run;
* the transactions, statements and WAL bytes per vote (WAL is the whole server's: run on a
  quiet one; the run says when another database was busy).

From them it prints the votes per second one core of each takes at ``--headroom`` (0.7) of
its CPU, and for a few rates the PostgreSQL cores, app servers (of 8 cores, 8 processes of 4
threads) and connections they need. PostgreSQL's own per-query figures
(``pg_stat_statements``) need the module preloaded at the server's start; CPU time needs
nothing, so it is what this reads.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

import psycopg
from harness import scratch_dir
from request_cost import STATEMENTS, WARMUP, drive_arena, prepare

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
SERVER = {"cores": 8, "processes": 8, "threads": 4}  # one app server, as sized below
RATES = (100, 1_000, 10_000)


def cpu_ticks(pids) -> int:
    """User and system CPU time of the processes ``pids`` (clock ticks), those gone aside."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def server_processes(conn, name: str) -> list[int]:
    """The PostgreSQL processes this run costs: the backends serving database ``name`` and
    the server's own (WAL writer, checkpointer, autovacuum, ...)."""
    return [pid for (pid,) in conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s OR backend_type <> 'client backend'",
        (name,))]


def others_busy(conn, name: str) -> int:
    """Backends of other databases running a statement (their WAL would count here)."""
    return conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND datname <> %s "
        "AND backend_type = 'client backend' AND pid <> pg_backend_pid()", (name,)).fetchone()[0]


class Meter:
    """Per kind of request: the app's CPU (ms), PostgreSQL backends' CPU (ticks), the SQL
    statements (from the Server-Timing header)."""

    def __init__(self, backends):
        self.backends = backends
        self.app, self.db, self.statements = (defaultdict(list) for _ in range(3))

    def clear(self) -> None:
        for kept in (self.app, self.db, self.statements):
            kept.clear()

    def __call__(self, name: str, call):
        app, db = time.process_time(), cpu_ticks(self.backends())
        response = call()
        self.db[name].append(cpu_ticks(self.backends()) - db)
        self.app[name].append((time.process_time() - app) * 1000)
        match = STATEMENTS.search(response.headers.get("Server-Timing", ""))
        if match:
            self.statements[name].append(int(match[1]))
        return response


def database_totals(conn, name: str) -> dict:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT xact_commit, pg_current_wal_lsn() FROM pg_stat_database WHERE datname = %s",
        (name,)).fetchone()
    return {"commits": row[0], "wal": row[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--prompts", type=int, default=24)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        type=lambda text: tuple(text.split("=", 1)),
                        help="an Arena setting for the run, e.g. VALIDATION_RATE=0")
    parser.add_argument("--headroom", type=float, default=0.7,
                        help="the share of a core's CPU to plan for (default 0.7)")
    args = parser.parse_args()
    name = f"arena_capacity_{os.getpid()}"
    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    url = f"{args.postgres.rpartition('/')[0]}/{name}"
    try:
        env = prepare(scratch_dir("arena-capacity-"), url, args.prompts, args.set)
        os.environ.update(env)
        from arena import create_app

        app = create_app()
        client = app.test_client()
        def backends():
            return [pid for (pid,) in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s", (name,))]

        client.get("/api/v1/health/ready")
        pids = backends()  # (the app's pooled connections, after its first request)
        meter = Meter(lambda: pids)
        drive_arena(env, 0, client, warmup=args.warmup, measure=meter)
        pids[:] = backends()
        everything = server_processes(admin, name)
        busy = others_busy(admin, name)
        before_all, before = cpu_ticks(everything), database_totals(admin, name)
        started = time.perf_counter()
        drive_arena(env, args.cycles, client, warmup=0, measure=meter)
        elapsed = time.perf_counter() - started
        busy += others_busy(admin, name)
        # (a busy backend reports its transactions to the statistics within 1 s of them, an
        # idle one within 10 s)
        deadline, last = time.monotonic() + 12, None
        after = database_totals(admin, name)
        while time.monotonic() < deadline and (after["commits"] == before["commits"]
                                               or after["commits"] != last):
            last = after["commits"]
            time.sleep(1.0)
            after = database_totals(admin, name)
        all_ms = (cpu_ticks(everything) - before_all) * TICK_MS
        wal = admin.execute("SELECT pg_wal_lsn_diff(%s, %s)",
                            (after["wal"], before["wal"])).fetchone()[0]
        connections = len(backends())
        limit = int(admin.execute("SHOW max_connections").fetchone()[0])
        if busy:
            print("note: other databases were busy during the run; WAL is the server's")
        report(args, meter, elapsed, all_ms, after["commits"] - before["commits"], float(wal),
               connections, limit)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def report(args, meter: Meter, elapsed: float, all_ms: float, commits: int, wal: float,
           connections: int, limit: int) -> None:
    votes = len(meter.app["vote"])
    print(f"PostgreSQL, JSON API, {args.cycles} sessions of 3 votes "
          f"({elapsed:.1f} s, one voter at a time)")
    print(f"{'request':<10}{'count':>7}{'app CPU ms':>12}{'PG CPU ms':>11}{'statements':>12}")
    for kind in ("session", "read", "vote"):
        if not meter.app[kind]:
            continue
        print(f"{kind:<10}{len(meter.app[kind]):>7}"
              f"{statistics.mean(meter.app[kind]):>12.2f}"
              f"{statistics.mean(meter.db[kind]) * TICK_MS:>11.2f}"
              f"{statistics.median(meter.statements[kind] or [0]):>12.0f}")
    app_ms = sum(map(sum, meter.app.values())) / votes
    backend_ms = sum(map(sum, meter.db.values())) * TICK_MS / votes
    own_ms = max(all_ms / votes - backend_ms, 0.0)
    pg_ms = backend_ms + own_ms
    print(f"\nper vote (its session and confirmations included): app {app_ms:.2f} ms CPU; "
          f"PostgreSQL {pg_ms:.2f} ms CPU ({backend_ms:.2f} serving, {own_ms:.2f} its own "
          f"processes); {commits / votes:.1f} transactions (read-only ones too); "
          f"{wal / votes / 1024:.1f} KiB WAL")
    per_app_core = args.headroom * 1000 / app_ms
    per_pg_core = args.headroom * 1000 / pg_ms
    print(f"one core at {args.headroom:.0%}: app {per_app_core:,.0f} votes/s, "
          f"PostgreSQL {per_pg_core:,.0f} votes/s; connections held here: {connections}")
    per_server = per_app_core * SERVER["cores"]
    print(f"\n{'votes/s':>8}{'PG cores':>10}{'app servers':>13}{'connections':>13}"
          f"{'WAL MB/s':>10}")
    for rate in RATES:
        servers = math.ceil(rate / per_server)
        print(f"{rate:>8,d}{math.ceil(rate / per_pg_core):>10}{servers:>13}"
              f"{servers * SERVER['processes'] * SERVER['threads']:>13}"
              f"{rate * wal / votes / 1e6:>10.1f}")
    print(f"(an app server: {SERVER['cores']} cores, {SERVER['processes']} processes x "
          f"{SERVER['threads']} threads, one connection per thread at most; this PostgreSQL "
          f"takes {limit} connections: beyond, a pooler such as PgBouncer in transaction mode)")


if __name__ == "__main__":
    main()
