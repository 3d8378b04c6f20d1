"""What one request of the vote path costs the server, without a network or a load generator.

    .venv/bin/python benchmarks/request_cost.py [--postgres URL] [--cycles 300] [--warmup 30]
                                                [--prompts 24]
                                                [--html] [--set KEY=VALUE]

benchmarks/ingest.py measures throughput under load, but on a 2-core machine the load
generator shares the CPU and the figures move by a third from run to run. This benchmark
isolates the server's own work: a fresh demo instance (``--prompts`` prompts, its gold supply
made ahead with ``arena campaign fill-gold``) is driven in-process through Flask's test
client, one phone voter at a time through the JSON API: a session, the caption
confirmations, three votes (``--cycles`` times, after ``--warmup`` sessions uncounted); with
``--html``
through the htmx pages instead (the start form and the session page once, each card's
confirmation and vote answered with the next card, each next session the end card's "Next
session" answered with its first card). In the same run, the
bare-INSERT app of benchmarks/ceiling.py is driven the same way on the same database. It
prints per endpoint the median and p99 time and the SQL statements per request, and the
votes one core could take per second against the inserts it could take: the ceiling's ratio
with no load generator in the way (a session and a caption confirmation are requests too,
so a vote costs more than its own request). The API flow is driven against the protocol
floor of benchmarks/ceiling.py as well (the same requests, answered by a minimal correct
implementation of the protocol's records): the server time per vote without what Arena adds
beyond them, and Arena's share of it (run after Arena and the ceiling, not alternating).

``--paired KEY=VALUE`` measures what one setting costs instead: the same flow with and without
it, alternating (eight rounds of ``--cycles``/8 sessions each, each round in a process of its
own after its warm-up, so drift of a noisy machine falls on both), e.g. ``--paired
RATELIMIT_ENABLED=false`` for the rate limiter, ``--paired DEVICES=...`` for what a
performance device earns (arena.infra.devices).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from functools import partial
from pathlib import Path

from harness import instance_env, scratch_dir

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
DEMO = "Demo: DrawBench"
STATEMENTS = re.compile(r'sql;desc="statements";dur=(\d+)')


def prepare(instance: Path, url: str | None, prompts: int, settings=()) -> dict:
    env = instance_env(instance, url, settings, ARENA_DEMO_PROMPTS=str(prompts))
    for command in (["demo", "--votes", "0"], ["campaign", "fill-gold", DEMO]):
        subprocess.run([str(BIN / "arena"), *command], env=env, cwd=ROOT, check=True,
                       capture_output=True)
    return env


def timed(times: dict, statements: dict, name: str, call):
    started = time.perf_counter()
    response = call()
    times[name].append((time.perf_counter() - started) * 1000)
    match = STATEMENTS.search(response.headers.get("Server-Timing", ""))
    if match:
        statements[name].append(int(match[1]))
    return response


WARMUP = 30  # sessions before the counted ones: connections, caches, the planner's statistics


def drive_arena(env: dict, cycles: int, client=None, warmup: int = WARMUP, measure=None
                ) -> tuple[dict, dict]:
    """The JSON API's voter flow against Arena (or ``client``'s app: the protocol floor).
    Each request goes through ``measure(name, call)`` when given (its ``clear()`` called
    after the warm-up), else is timed into the (times, statements) returned."""
    if client is None:
        os.environ.update(env)
        from arena import create_app

        client = create_app().test_client()
    times, statements = defaultdict(list), defaultdict(list)
    timed_here = measure or partial(timed, times, statements)
    token = None
    for n in range(warmup + cycles):
        if n == warmup:
            times.clear()
            statements.clear()
            if measure is not None:
                measure.clear()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = timed_here("session",
                         lambda h=headers: client.post("/api/v1/sessions", json={}, headers=h))
        if response.status_code != 201:
            raise SystemExit(f"session refused: {response.status_code} {response.text}")
        body = response.get_json()
        token = token or body["voter_token"]
        headers = {"Authorization": f"Bearer {token}"}
        for item in body["tasks"]:
            task = f"/api/v1/tasks/{item['task_id']}"
            if item["prompt"] is not None:
                timed_here("read",
                      lambda t=task, h=headers: client.post(f"{t}/read", headers=h))
            response = timed_here("vote", lambda t=task, h=headers: client.post(
                f"{t}/vote", headers=h, json={"choice": "left", "response_ms": 1500}))
            if response.status_code != 201:
                raise SystemExit(f"vote refused: {response.status_code} {response.text}")
    return times, statements


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
CARD = re.compile(r'hx-post="(/t/\d+)"')


def drive_html(env: dict, cycles: int, warmup: int = WARMUP) -> tuple[dict, dict]:
    """The htmx voter flow: the start form (its redirect to the session page timed as
    "page"), then each card's caption confirmation and vote posted as htmx does, the next
    card coming back in the vote's response, and each next session from the end card's
    "Next session" as htmx posts it, its first card coming back in place ("session" too)."""
    os.environ.update(env)
    from arena import create_app

    client = create_app().test_client()
    times, statements = defaultdict(list), defaultdict(list)
    html = client.get("/").text
    htmx = {"HX-Request": "true"}
    for n in range(warmup + cycles):
        if n == warmup:
            times.clear()
            statements.clear()
        token = CSRF.search(html)[1]
        if n:
            response = timed(times, statements, "session", lambda t=token: client.post(
                "/start", data={"csrf_token": t}, headers=htmx))
            if response.status_code != 200:
                raise SystemExit(f"session refused: {response.status_code} {response.text}")
            html = response.text
        else:
            response = timed(times, statements, "session", lambda t=token: client.post(
                "/start", data={"csrf_token": t}))
            if response.status_code != 303:
                raise SystemExit(f"session refused: {response.status_code} {response.text}")
            location = response.headers["Location"]
            html = timed(times, statements, "page", lambda url=location: client.get(url)).text
        while (card := CARD.search(html)) is not None:
            token = CSRF.search(html)[1]
            if "confirm-read" in html:
                html = timed(times, statements, "read", lambda c=card, t=token: client.post(
                    f"{c[1]}/read", data={"csrf_token": t}, headers=htmx)).text
            response = timed(times, statements, "vote", lambda c=card, t=token: client.post(
                c[1], data={"csrf_token": t, "choice": "left", "response_ms": "1500"},
                headers=htmx))
            if response.status_code != 200:
                raise SystemExit(f"vote refused: {response.status_code}")
            html = response.text
    return times, statements


def ceiling_app(url: str):
    os.environ["CEILING_DATABASE_URL"] = url
    sys.path.insert(0, str(ROOT))
    from benchmarks.ceiling import app

    return app


def drive_floor(url: str, cycles: int, warmup: int = WARMUP) -> dict:
    """The JSON API's voter flow against the protocol floor (benchmarks/ceiling.py)."""
    return drive_arena({}, cycles, ceiling_app(url).test_client(), warmup)[0]


def drive_ceiling(url: str, requests: int) -> list[float]:
    client = ceiling_app(url).test_client()
    times: dict = defaultdict(list)
    for n in range(100 + requests):
        if n == 100:
            times.clear()
        timed(times, defaultdict(list), "insert", lambda: client.post(
            "/vote", json={"choice": "left", "response_ms": 1500}))
    return times["insert"]


def report(label: str, times: dict, statements: dict, ceiling: list[float],
           cycles: int, floor: dict | None = None) -> None:
    print(f"\n{label}: {cycles} sessions of one voter after another, in-process")
    print(f"  {'request':10s} {'count':>6s} {'median':>8s} {'p99':>8s} {'SQL/req':>7s}"
          + (f" {'floor median':>12s}" if floor else ""))
    rows = {**times, "insert": ceiling}
    for name in ("session", "page", "read", "vote", "insert"):
        if not rows.get(name):
            continue
        values = sorted(rows[name])
        p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
        sql = statistics.median(statements[name]) if statements.get(name) else None
        at_floor = statistics.median(floor[name]) if floor and floor.get(name) else None
        print(f"  {name:10s} {len(values):6d} {statistics.median(values):7.2f}  {p99:7.2f} "
              f"{'-' if sql is None else f'{sql:7.0f}'}"
              + (f" {at_floor:12.2f}" if at_floor is not None else ""))
    per_vote = _per_vote(times)
    insert = statistics.mean(ceiling)
    print(f"  server time per vote, its session and caption confirmations included: "
          f"{per_vote:.2f} ms (mean); a bare INSERT request {insert:.2f} ms")
    print(f"  one core: {1000 / per_vote:.0f} votes/s against {1000 / insert:.0f} inserts/s: "
          f"ratio {insert / per_vote:.2f} (goal >= 0.5)")
    if floor:
        floor_vote = _per_vote(floor)
        print(f"  the protocol floor (the same flow, its records only): {floor_vote:.2f} ms per "
              f"vote, ratio {insert / floor_vote:.2f} to the bare INSERT; Arena at "
              f"{floor_vote / per_vote:.2f} of the floor")


def _per_vote(times: dict) -> float:
    """Server time per vote (ms): every request of the flow, summed, over its votes."""
    return sum(sum(values) for values in times.values()) / len(times["vote"])


def paired(env: dict, html: bool, cycles: int, key: str, value: str,
           warmup: int = WARMUP) -> None:
    """Server time per vote with the instance's settings and with ``key=value``, in
    alternating rounds, each in a process of its own (a setting read once per process, as
    the statements built once are, takes effect in its own rounds only)."""
    def round_in(variant: dict):
        def drive(n: int) -> float:
            done = subprocess.run(
                [sys.executable, __file__, "--one-round", str(n), "--warmup", str(warmup),
                 *(["--html"] if html else [])],
                env=variant, cwd=ROOT, check=True, capture_output=True, text=True)
            return float(done.stdout.split()[-1])
        return drive

    variants = {"as set": round_in(env), f"{key}={value}": round_in({**env,
                                                                      f"ARENA_{key}": value})}
    base, other = alternate(variants, cycles, " (htmx pages)" if html else "")
    print(f"  the settings as set cost {100 * (base / other - 1):+.1f}% against {key}={value}")


def alternate(variants: dict, cycles: int, label: str) -> tuple:
    """Eight alternating rounds of ``cycles``/8 sessions of each variant (a function of the
    session count returning the server time per vote); prints and returns the median of
    each."""
    per_vote: dict = defaultdict(list)
    for _ in range(8):
        for name, drive in variants.items():
            per_vote[name].append(drive(max(1, cycles // 8)))
    print(f"\nserver time per vote, median of 8 alternating rounds of {max(1, cycles // 8)} "
          f"sessions{label}:")
    for name in variants:
        print(f"  {name:30s} {statistics.median(per_vote[name]):6.2f} ms  "
              f"(rounds {min(per_vote[name]):.2f}-{max(per_vote[name]):.2f})")
    return tuple(statistics.median(per_vote[name]) for name in variants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="an empty PostgreSQL database URL (else SQLite)")
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=WARMUP,
                        help=f"uncounted sessions before each count (default {WARMUP})")
    parser.add_argument("--prompts", type=int, default=24, help="demo prompts (default 24)")
    parser.add_argument("--html", action="store_true",
                        help="the htmx voter pages instead of the JSON API")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        type=lambda text: tuple(text.split("=", 1)),
                        help="an Arena setting for the run, e.g. VALIDATION_RATE=0")
    parser.add_argument("--paired", metavar="KEY=VALUE",
                        type=lambda text: tuple(text.split("=", 1)),
                        help="the server time per vote with and without this setting")
    parser.add_argument("--one-round", type=int, metavar="SESSIONS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_round:  # (one of --paired's rounds, on the instance of its environment)
        times, _ = (drive_html if args.html else drive_arena)(dict(os.environ), args.one_round,
                                                              warmup=args.warmup)
        print(_per_vote(times))
        return
    instance = scratch_dir("arena-cost-")
    env = prepare(instance, args.postgres, args.prompts, args.set)
    if args.paired:
        paired(env, args.html, args.cycles, *args.paired, warmup=args.warmup)
        return
    times, statements = (drive_html if args.html else drive_arena)(env, args.cycles,
                                                                   warmup=args.warmup)
    ceiling_url = args.postgres or f"sqlite:///{instance / 'ceiling.sqlite3'}"
    ceiling = drive_ceiling(ceiling_url, 3 * args.cycles)
    floor = None if args.html else drive_floor(ceiling_url, args.cycles, args.warmup)
    report(("PostgreSQL" if args.postgres else "SQLite")
           + (", htmx pages" if args.html else ", JSON API"), times, statements, ceiling,
           args.cycles, floor)


if __name__ == "__main__":
    main()
