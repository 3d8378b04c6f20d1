"""The vote path under load, against the hardware's ceiling, in one run.

    .venv/bin/pip install -e ".[bench]"          # locust
    .venv/bin/python benchmarks/ingest.py [--postgres URL] [--users 16] [--seconds 30]
                                          [--rounds 6] [--warmup 2] [--workers CORES] [--threads T]
                                          [--html] [--client requests|fast] [--against REV]
                                          [--paired KEY=VALUE]

For each database (SQLite, and PostgreSQL when ``--postgres`` names an empty database): a
fresh instance with the demo campaign as ``arena demo`` leaves it (its gold supply made) is
served by ``arena serve`` (rate limits counted in Redis when there are several workers,
``ARENA_BENCH_REDIS_URL``, else in memory, with limits no benchmark reaches, and the
vote-time floor off, so the load is not refused; ``SERVER_TIMING`` on, so every response
says how long the app worked and how many SQL statements it ran); beside it, with the same
worker and thread counts and the same database, a bare Flask app that INSERTs one
vote-shaped row per request (benchmarks/ceiling.py). Locust drives both with ``--users``
phone voters through the JSON API, without think time: a session, then its three votes
(alignment captions confirmed first). It prints requests/s, the app's own p50/p99 per
endpoint and its SQL statements per request, failures, and votes/s as a share of the
ceiling's inserts/s. The servers take turns (``--rounds``, 6 of ``--seconds``/6 each: Arena,
ceiling, floor, floor, ceiling, Arena, ...), because this machine's speed drifts within
seconds: three runs each of the same code in one hour gave ratios of 0.39, 0.31 and 0.28
with the ceiling measured after Arena in one turn each, 0.32, 0.38 and 0.36 in 2 rounds,
0.33, 0.34 and 0.33 in 6 (while the ratios of single 5 s rounds moved from 0.24 to 0.43).
The ratio of each round is printed too, and each round's p99 of a vote and of a session (in
one hour, two runs of identical code gave vote p99s of 8.18 and 11.10 ms: a p99 needs its
rounds beside it). ``--html`` drives the htmx voter pages instead of the API: the landing
page and its start form once per voter, then the cards, and each next session from the end
card's "Next session" as htmx posts it (endpoint "next").

The API flow is driven a third time, by turns with the other two, against the protocol floor
(benchmarks/ceiling.py's ``/api/v1``, in the ceiling's server: the same requests answered in
the same shape by a minimal correct implementation of the protocol's records, on the
driver's cursor): its votes/s is what this flow could reach without what Arena adds
(matchmaking, gold, pacing, rate limits, Elo, trust, blinded names), and Arena's share of it
is what those cost. Its ratio to the ceiling and Arena's to it are printed by round too.

``--against REV`` (SQLite) serves git revision REV beside the current code, on an instance its
own ``arena demo`` and ``arena campaign fill-gold`` made, and drives it by turns with the
others: the current code's votes/s as a share of REV's, in the same run. ``--paired
KEY=VALUE`` (SQLite) does the same with the current code under that setting, e.g. ``--paired
DEVICES=writer-queue`` for what the devices left out earn (arena.infra.devices).
"""

from __future__ import annotations

# locust patches the standard library with gevent: it has to come first
from gevent import monkey  # isort: skip

monkey.patch_all()

import argparse  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
import numpy as np  # noqa: E402
from harness import free_port, instance_env, scratch_dir  # noqa: E402
from locust import FastHttpUser, HttpUser, events  # noqa: E402
from locust.env import Environment  # noqa: E402

from arena.infra.serving import default_threads  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
DEMO = "Demo: DrawBench"
REDIS_URL = os.environ.get("ARENA_BENCH_REDIS_URL", "redis://127.0.0.1:6379")
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
CARD = re.compile(r'hx-post="(/t/(\d+))"')
TIMING = re.compile(r"app;dur=([\d.]+), sql;desc=\"statements\";dur=(\d+)"
                    r"(?:, writer;dur=([\d.]+), held;dur=([\d.]+))?")

server_ms: dict[str, list[float]] = defaultdict(list)
statements: dict[str, list[int]] = defaultdict(list)
writer_ms: dict[str, list[float]] = defaultdict(list)  # (SQLite: waiting to write)
held_ms: dict[str, list[float]] = defaultdict(list)  # (SQLite: holding the writer lock)


@events.request.add_listener
def _record(name, response=None, exception=None, **_):
    if exception is None and response is not None:
        match = TIMING.search(response.headers.get("Server-Timing", ""))
        if match:
            server_ms[name].append(float(match[1]))
            statements[name].append(int(match[2]))
            if match[3] is not None:
                writer_ms[name].append(float(match[3]))
                held_ms[name].append(float(match[4]))


HTMX = {"HX-Request": "true"}


class ApiVoter:
    """A phone app: one identity, then sessions of three votes back to back."""

    def on_start(self):
        self.token = None

    def session_and_votes(self):
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        with self.client.post("/api/v1/sessions", json={}, headers=headers,
                              name="session", catch_response=True) as response:
            if response.status_code != 201:
                response.failure(f"{response.status_code} {response.text[:80]}")
                return
            body = response.json()
        self.token = self.token or body["voter_token"]
        headers = {"Authorization": f"Bearer {self.token}"}
        for item in body["tasks"]:
            if item["prompt"] is not None:  # alignment: the caption is confirmed first
                self.client.post(f"/api/v1/tasks/{item['task_id']}/read", headers=headers,
                                 name="read")
            self.client.post(f"/api/v1/tasks/{item['task_id']}/vote", headers=headers,
                             json={"choice": "left", "response_ms": 1500}, name="vote")

    tasks = (session_and_votes,)


class HtmlVoter:
    """A phone browser with htmx: the landing page and its start form once (redirected to
    the session's page), then each card posted and swapped, and "Next session" on the end
    card posted as htmx does, the next session's first card coming back in its place."""

    def on_start(self):
        self.html = None  # the page as last swapped: the end of a session, after the first

    def session_and_votes(self):
        token = CSRF.search(self.html) if self.html else None
        if token is None:
            landing = self.client.get("/", name="landing").text
            html = self.client.post("/start", data={"csrf_token": CSRF.search(landing)[1]},
                                    name="start", allow_redirects=True).text
        else:
            html = self.client.post("/start", data={"csrf_token": token[1]}, headers=HTMX,
                                    name="next").text
        self.html = None
        for _ in range(3):
            card = CARD.search(html)
            token = CSRF.search(html)
            if card is None or token is None:
                return
            if "confirm-read" in html:
                html = self.client.post(f"{card[1]}/read", data={"csrf_token": token[1]},
                                        headers=HTMX, name="read").text
                token = CSRF.search(html) or token
            html = self.client.post(card[1], data={"csrf_token": token[1], "choice": "left",
                                                   "response_ms": "1500"},
                                    headers=HTMX, name="vote").text
        self.html = html

    tasks = (session_and_votes,)


class CeilingUser:
    def insert(self):
        self.client.post("/vote", json={"choice": "left", "response_ms": 1500}, name="insert")

    tasks = (insert,)


# the load generator's HTTP client: geventhttpclient's (locust's FastHttpUser), or python-requests
# (HttpUser: several times the CPU per request, on the cores the servers use)
CLIENTS = {"fast": FastHttpUser, "requests": HttpUser}


def user_class(behaviour: type, client: str) -> type:
    """A locust user that acts as ``behaviour`` through ``client``."""
    return type(behaviour.__name__, (behaviour, CLIENTS[client]), {})


def wait_up(url: str, process: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except Exception:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not come up")


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def drive(user, host: str, users: int, seconds: float, warmup: float = 2.0) -> dict:
    """Run ``users`` of ``user`` against ``host`` for ``seconds`` (after ``warmup`` seconds
    for connections and caches, uncounted); per
    endpoint what :func:`combined` sums over rounds: requests, failures, the app's own
    times (ms) and statements per request, and locust's entry (the client's times)."""
    server_ms.clear()
    statements.clear()
    writer_ms.clear()
    held_ms.clear()
    env = Environment(user_classes=[user], host=host, events=events)
    runner = env.create_local_runner()
    runner.start(users, spawn_rate=users)
    gevent.sleep(warmup)
    env.stats.reset_all()
    server_ms.clear()
    statements.clear()
    writer_ms.clear()
    held_ms.clear()
    gevent.sleep(seconds)
    runner.quit()
    for error in env.stats.errors.values():
        print(f"  failure x{error.occurrences} {error.name}: {str(error.error)[:160]}")
    return {name: {"requests": entry.num_requests, "failures": entry.num_failures,
                   "server_ms": list(server_ms.get(name, ())),
                   "statements": list(statements.get(name, ())),
                   "writer_ms": list(writer_ms.get(name, ())),
                   "held_ms": list(held_ms.get(name, ())), "client": entry}
            for (name, _method), entry in env.stats.entries.items()}


def combined(rounds: list[dict], seconds: float) -> dict:
    """Per endpoint over the ``rounds`` of :func:`drive` (``seconds`` of them in all):
    requests/s, failures, the app's own p50/p99 (ms), the median statements per request and
    the client's p50/p99 (which include the time a request queued before the app began it:
    a server shape that queues more can show a shorter app p99 for the same wait)."""
    out = {}
    for name in sorted({name for driven in rounds for name in driven}):
        parts = [driven[name] for driven in rounds if name in driven]
        times = [t for part in parts for t in part["server_ms"]]
        counts = [n for part in parts for n in part["statements"]]
        waits = [t for part in parts for t in part["writer_ms"]]
        held = [t for part in parts for t in part["held_ms"]]
        client = parts[0]["client"]
        for part in parts[1:]:
            client.extend(part["client"])
        out[name] = {
            "rps": sum(part["requests"] for part in parts) / seconds,
            "failures": sum(part["failures"] for part in parts),
            "p50": float(np.percentile(times, 50)) if times else None,
            "p99": float(np.percentile(times, 99)) if times else None,
            "statements": float(np.median(counts)) if counts else None,
            "client_p50": client.get_response_time_percentile(0.5),
            "client_p99": client.get_response_time_percentile(0.99),
            "writer_p99": float(np.percentile(waits, 99)) if waits else None,
            "held_p50": float(np.percentile(held, 50)) if held else None,
            "held_p99": float(np.percentile(held, 99)) if held else None,
        }
    return out


def alternate(drives: list, rounds: int) -> list[list]:
    """The servers' drives taken by turns, ``rounds`` times each, the order reversed every
    round (Arena, ceiling, floor, floor, ceiling, Arena, ...): this machine's speed drifts
    within seconds, and a drift that runs one way through the run then falls on all alike.
    Returns each drive's rounds, in the order given."""
    results: list[list] = [[] for _ in drives]
    turns = list(zip(results, drives, strict=True))
    for number in range(rounds):
        for out, drive_one in (turns if number % 2 == 0 else turns[::-1]):
            out.append(drive_one())
    return results


def serve_demo(label: str, url: str | None, args, source: Path | None = None):
    """A fresh demo instance (``arena demo``, then ``arena campaign fill-gold`` for a
    revision whose demo left that to the operator) served by ``arena serve``, the code of
    ``source`` (an exported revision) when given: (port, process, log)."""
    instance = scratch_dir("arena-ingest-")
    settings = list(args.set)
    if args.workers > 1 and "RATELIMIT_STORAGE_URI" not in dict(settings):
        # (several processes count one limit only in a shared store, as deployed)
        settings += [("RATELIMIT_STORAGE_URI", REDIS_URL),
                     ("RATELIMIT_KEY_PREFIX", f"bench-{instance.name}")]
    env = instance_env(instance, url, settings)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    started = time.perf_counter()
    for command in (["demo", "--votes", "0"], ["campaign", "fill-gold", DEMO]):
        subprocess.run([str(BIN / "arena"), *command], env=env, cwd=source or ROOT,
                       check=True, capture_output=True)
    print(f"{label}: demo set up in {time.perf_counter() - started:.0f} s", flush=True)
    port, log = free_port(), instance / "serve.log"
    # (the servers log to files: a pipe nobody reads fills up and blocks their access log)
    server = ["--server", args.server] if source is None else []  # (a revision's own default)
    process = subprocess.Popen(
        [str(BIN / "arena"), "serve", *server, "--port", str(port), "--workers",
         str(args.workers), "--threads", str(args.threads)], env=env, cwd=source or ROOT,
        stdout=log.open("w"), stderr=subprocess.STDOUT)
    return port, process, log


def exported(rev: str) -> Path:
    """Git revision ``rev`` of this repository, its files in a scratch folder."""
    folder = scratch_dir("arena-rev-")
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def run(label: str, url: str | None, args) -> None:
    # (both servers with arena serve's default threads for the database, unless given)
    args = argparse.Namespace(**{**vars(args), "threads": args.threads
                                 or default_threads(url or "sqlite://")})
    port, serve, serve_log = serve_demo(label, url, args)
    against, other = None, args.against or ("=".join(args.paired) if args.paired else None)
    if args.against and url is None:
        against = serve_demo(f"{label} at {args.against}", url, args, exported(args.against))
    elif args.paired and url is None:
        against = serve_demo(f"{label} with {other}", url,
                             argparse.Namespace(**{**vars(args), "set": [*args.set,
                                                                         args.paired]}))
    instance = scratch_dir("arena-ceiling-")
    ceiling_log = instance / "ceiling.log"
    ceiling_url = url or f"sqlite:///{instance / 'ceiling.sqlite3'}"
    ceiling_port = free_port()
    ceiling_env = {**os.environ, "CEILING_DATABASE_URL": ceiling_url}
    # its table made once, before the workers: two workers creating it at once met
    # "database is locked" on SQLite (a read transaction turned writer does not wait)
    subprocess.run([sys.executable, "-c", "import benchmarks.ceiling"], env=ceiling_env,
                   cwd=ROOT, check=True)
    ceiling = subprocess.Popen(
        [str(BIN / "gunicorn"), "--workers", str(args.workers), "--threads", str(args.threads),
         "--access-logfile", "-",  # as arena serve does
         "--bind", f"127.0.0.1:{ceiling_port}", "benchmarks.ceiling:app"],
        env=ceiling_env, cwd=ROOT, stdout=ceiling_log.open("w"), stderr=subprocess.STDOUT)
    try:
        wait_up(f"http://127.0.0.1:{port}/api/v1/health", serve, serve_log)
        wait_up(f"http://127.0.0.1:{ceiling_port}/healthz", ceiling, ceiling_log)
        if against:
            wait_up(f"http://127.0.0.1:{against[0]}/api/v1/health", against[1], against[2])
        user = user_class(HtmlVoter if args.html else ApiVoter, args.client)
        bare_user = user_class(CeilingUser, args.client)
        each = args.seconds / args.rounds
        ceiling_host = f"http://127.0.0.1:{ceiling_port}"
        turn = {"users": args.users, "seconds": each, "warmup": args.warmup}
        drives = [lambda: drive(user, f"http://127.0.0.1:{port}", **turn),
                  lambda: drive(bare_user, ceiling_host, **turn)]
        if against:
            drives.append(lambda: drive(user, f"http://127.0.0.1:{against[0]}", **turn))
        if not args.html:  # the protocol floor: the same API flow, its records only
            drives.append(lambda: drive(user, ceiling_host, **turn))
        arena, bare, *others = alternate(drives, args.rounds)
    finally:
        stop(serve)
        stop(ceiling)
        if against:
            stop(against[1])
    before, floor = (others[0], others[1:]) if against else (None, others)
    # (each round's turns are equally long: its ratio is of the request counts)
    by_round = [_count(a, "vote") / _count(b, "insert")
                for a, b in zip(arena, bare, strict=True) if _count(b, "insert")]
    floor_by_round = [(_count(f, "vote") / _count(b, "insert"),
                       _count(a, "vote") / _count(f, "vote"))
                      for a, b, f in zip(arena, bare, *floor, strict=True)
                      if _count(b, "insert") and _count(f, "vote")] if floor else []
    report(label, combined(arena, args.seconds), combined(bare, args.seconds), args, by_round,
           combined(floor[0], args.seconds) if floor else None, floor_by_round,
           [p99s(driven) for driven in arena])
    if before is not None:
        report_against(other, arena, before, args.seconds)
    if url:
        report_updates(url)


def report_against(other: str, arena: list, before: list, seconds: float) -> None:
    """The current code's votes/s against ``other``'s (a revision, or KEY=VALUE), driven by
    turns, with each round's vote p99 of both."""
    now, then = combined(arena, seconds), combined(before, seconds)
    print(f"  {other}, by turns with the rest:")
    for name in ("session", "read", "vote", "next"):
        if name in then:
            _print_row(f"{other[:7]} {name}", then[name])
    votes, votes_then = (row.get("vote", {}).get("rps", 0.0) for row in (now, then))
    print(f"  votes/s {votes:.1f} against {votes_then:.1f} with {other}: ratio "
          f"{votes / votes_then if votes_then else float('nan'):.2f}")
    rounds = [p99s(driven).get("vote") for driven in before]
    if len(rounds) > 1 and None not in rounds:
        print(f"  app p99 of a vote by round with {other}: "
              + ", ".join(f"{ms:.2f}" for ms in rounds) + " ms")
    by_round = [_count(a, "vote") / _count(b, "vote") for a, b in zip(arena, before, strict=True)
                if _count(b, "vote")]
    if len(by_round) > 1:
        print("  ratio by round: " + ", ".join(f"{ratio:.2f}" for ratio in by_round))


P99_BY_ROUND = ("vote", "session", "next")  # endpoints whose p99 is printed per round


def p99s(driven: dict) -> dict[str, float]:
    """One round's app p99 (ms) per endpoint of :data:`P99_BY_ROUND` it served: how far the
    run's p99 moves from round to round (two runs of identical code have differed by 3 ms
    in the vote's; a difference within that spread says nothing)."""
    return {name: float(np.percentile(driven[name]["server_ms"], 99)) for name in P99_BY_ROUND
            if name in driven and driven[name]["server_ms"]}


def _count(driven: dict, name: str) -> int:
    return driven[name]["requests"] if name in driven else 0


def report(label: str, arena: dict, bare: dict, args, by_round: list[float],
           floor: dict | None = None, floor_by_round: list[tuple] = (),
           p99_by_round: list[dict] = ()) -> None:
    flow = "htmx pages" if args.html else "JSON API"
    print(f"\n{label} ({args.server}): {args.users} voters ({flow}, {args.client} client), "
          f"{args.workers} "
          f"worker(s) x {args.threads} threads, {args.seconds:.0f} s each in {args.rounds} "
          f"alternating round(s); gold supply made by arena demo")
    print(f"  {'endpoint':13s} {'req/s':>8s} {'fail':>5s} {'app p50':>8s} {'app p99':>8s} "
          f"{'SQL/req':>7s} {'client p50/p99':>14s} {'writer p99':>10s} {'held p50/p99':>13s}")
    for name, row in sorted({**arena, **bare}.items()):
        if not row["rps"] and not row["failures"]:
            continue  # (htmx: the landing and start form, each voter's first, before the count)
        _print_row(name, row)
    votes = arena.get("vote", {}).get("rps", 0.0)
    ceiling = bare.get("insert", {}).get("rps", 0.0)
    print(f"  votes/s {votes:.1f} against the bare INSERT's {ceiling:.1f}/s: ratio "
          f"{votes / ceiling if ceiling else float('nan'):.2f} (goal >= 0.5)")
    if len(by_round) > 1:
        print("  ratio by round: " + ", ".join(f"{ratio:.2f}" for ratio in by_round))
    for name in P99_BY_ROUND:
        rounds = [p99[name] for p99 in p99_by_round if name in p99]
        if len(rounds) > 1:
            print(f"  app p99 of a {name} by round: "
                  + ", ".join(f"{ms:.2f}" for ms in rounds) + " ms")
    if floor:
        print("  the protocol floor (benchmarks/ceiling.py: the same flow, its records only):")
        for name in ("session", "read", "vote"):
            if name in floor:
                _print_row(f"floor {name}", floor[name])
        at_floor = floor.get("vote", {}).get("rps", 0.0)
        print(f"  floor votes/s {at_floor:.1f}: ratio "
              f"{at_floor / ceiling if ceiling else float('nan'):.2f} to the bare INSERT; Arena "
              f"at {votes / at_floor if at_floor else float('nan'):.2f} of the floor")
        if len(floor_by_round) > 1:
            print("  by round, the floor's ratio / Arena's share of it: " + ", ".join(
                f"{of_ceiling:.2f}/{share:.2f}" for of_ceiling, share in floor_by_round))


def _print_row(name: str, row: dict) -> None:
    fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
    print(f"  {name:13s} {row['rps']:8.1f} {row['failures']:5d} {fmt(row['p50'], '8.2f')} "
          f"{fmt(row['p99'], '8.2f')} {fmt(row['statements'], '7.0f')} "
          f"{fmt(row['client_p50'], '7.0f')}/{fmt(row.get('client_p99'), '<6.0f')} "
          f"{fmt(row.get('writer_p99'), '10.2f')}"
          + (f" {row['held_p50']:6.2f}/{row['held_p99']:<6.2f}"
             if row.get("held_p50") is not None else ""))


UPDATED = ("comparison", "task", "voter", "elo_rating")


def report_updates(url: str) -> None:
    """How PostgreSQL stored the run's updates of the rows a vote or a session changes: the
    share updated in place (HOT, no index entry written) and the dead row versions left for
    vacuum, from pg_stat_user_tables."""
    import psycopg  # (the PostgreSQL driver; only this run needs it)

    time.sleep(1.0)  # the statistics collector publishes what the servers counted
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        rows = conn.execute(
            "SELECT s.relname, n_tup_upd, n_tup_hot_upd, n_dead_tup, n_live_tup,"
            " coalesce(array_to_string(reloptions, ' '), '') FROM pg_stat_user_tables s"
            " JOIN pg_class c ON c.oid = s.relid WHERE s.relname = ANY(%s)"
            " ORDER BY s.relname", (list(UPDATED),)).fetchall()
    print(f"  {'table':10s} {'updates':>8s} {'in place':>8s} {'dead':>7s} {'live':>7s}  options")
    for name, updates, hot, dead, live, options in rows:
        share = f"{hot / updates:.0%}" if updates else "-"
        print(f"  {name:10s} {updates:8d} {share:>8s} {dead:7d} {live:7d}  {options}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="an empty PostgreSQL database URL")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="uncounted seconds at the start of each turn (default 2)")
    parser.add_argument("--rounds", type=int, default=6,
                        help="split each server's seconds into this many turns, alternating "
                             "with the others' (Arena, ceiling, floor, floor, ceiling, ...)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="processes of each server (default: one per core, as arena serve)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per process of each server (default: arena serve's "
                             "for the database, 2 on SQLite and 4 on PostgreSQL)")
    parser.add_argument("--server", choices=("embedded", "gunicorn"), default="embedded",
                        help="arena serve's server (embedded: one process with workers x "
                             "threads threads; gunicorn: workers processes)")
    parser.add_argument("--html", action="store_true", help="drive the htmx voter pages")
    parser.add_argument("--against", metavar="REV",
                        help="serve git revision REV too (SQLite), driven by turns with the "
                             "current code")
    parser.add_argument("--paired", metavar="KEY=VALUE",
                        type=lambda text: tuple(text.split("=", 1)),
                        help="serve the current code with this setting too (SQLite), driven "
                             "by turns with the rest, e.g. DEVICES=... (arena.infra.devices)")
    parser.add_argument("--only", choices=("sqlite", "postgres"))
    parser.add_argument("--client", choices=tuple(CLIENTS), default="requests",
                        help="the load generator's HTTP client (default: requests)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        type=lambda text: tuple(text.split("=", 1)),
                        help="an Arena setting for the run, e.g. VALIDATION_RATE=0")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.only != "postgres":
        run("SQLite", None, args)
    if args.postgres and args.only != "sqlite":
        run("PostgreSQL", args.postgres, args)


if __name__ == "__main__":
    main()
