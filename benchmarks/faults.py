"""Faults an operator meets, measured: slow clients, and processes killed under load.

    .venv/bin/python benchmarks/faults.py [--only slowloris|crash|disk-full] [--postgres URL]
                                         [--voters 8] [--phase 20] [--soak 600]
                                         [--restart-postgres 'pg_ctlcluster 15 main restart']

**slowloris**: a demo instance served by stock gunicorn (``gthread``, gunicorn.conf.py, meant
to sit behind a buffering proxy) and by ``arena serve``'s embedded server (waitress), 4
threads each; for 4, 64 and 512 clients that each sent half a request head (and as many
idle connections), the health check's median time over 5 tries (5 s timeout).

**crash**: ``arena serve`` on a fresh demo instance (SQLite, and PostgreSQL with
``--postgres``), ``--voters`` threads voting through the JSON API without pause. Phases of
``--phase`` seconds: steady (``--soak`` seconds when given: worker memory at its start and
end); after kill -9 of the worker (the master starts another); after
kill -9 of the master and a restart with the README's command; after a new release rolled
out with HUP to gunicorn's master (new workers, the old ones stopped gracefully); on
PostgreSQL, after ``--restart-postgres`` restarts the
database. Per phase: votes
acknowledged, request errors, the worker's memory; at the end, votes acknowledged against
votes stored (an acknowledged vote missing is a lost vote; a stored vote nobody heard back
about was in flight at a kill), and the online Elo against ``arena elo replay``.

**disk-full** (Linux, as root): the same on SQLite in a 256 MB tmpfs, which a file then
fills and, a phase later, frees: what voters get meanwhile (503, not a dead worker), what
readiness says, whether the log names the cause, and that voting resumes on its own.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from harness import free_port, instance_env

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def demo(env: dict) -> None:
    subprocess.run([str(BIN / "arena"), "demo", "--prompts", "4", "--images", "2", "--votes",
                    "0"], env=env, cwd=ROOT, check=True, capture_output=True)


def start(command: list[str], env: dict, log: Path, port: int) -> subprocess.Popen:
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log.open("a"),
                               stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        if not children(process.pid):  # (after a kill -9 of the master, an old worker
            time.sleep(0.2)            # can answer until it has closed its socket)
            continue
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health/live", timeout=2)
            return process
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("server did not come up")


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=40)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def health_time(port: int) -> float | None:
    """Seconds for one health check, None on a 5 s timeout."""
    started = time.monotonic()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health/live", timeout=5)
    except OSError:
        return None
    return time.monotonic() - started


# --- slowloris ----------------------------------------------------------------------------


def slowloris(workdir: Path) -> None:
    instance = workdir / "slow"
    env = instance_env(instance, None)
    demo(env)
    rows = {}
    for label, command in (("gunicorn gthread", [str(BIN / "gunicorn"), "-c",
                                                 str(ROOT / "gunicorn.conf.py"), "--workers",
                                                 "1", "--threads", "4", "--bind"]),
                           ("embedded (waitress)", [str(BIN / "arena"), "serve", "--threads",
                                                    "4", "--host", "127.0.0.1", "--port"])):
        port = free_port()
        address = f"127.0.0.1:{port}" if "--bind" in command else str(port)
        server = start([*command, address], env, workdir / f"slow-{label[:8]}.log", port)
        try:
            for clients in (0, 4, 64, 512):
                held = []
                for _ in range(clients):
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                    held[-1].sendall(b"GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\n")
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                time.sleep(0.5)
                times = [health_time(port) for _ in range(5)]
                for s in held:
                    s.close()
                answered = [t for t in times if t is not None]
                rows.setdefault(clients, {})[label] = (
                    f"{1000 * statistics.median(answered):.0f} ms" if len(answered) >= 3
                    else f"{5 - len(answered)} of 5 timed out")
                time.sleep(1)
        finally:
            stop(server)
    print("\nslow clients (half-sent requests + as many idle connections): health check, "
          "median of 5")
    labels = ["gunicorn gthread", "embedded (waitress)"]
    print(f"| clients | {' | '.join(labels)} |\n|---|---|---|")
    for clients, cells in rows.items():
        print(f"| {clients} + {clients} | {' | '.join(cells[x] for x in labels)} |")


# --- crash --------------------------------------------------------------------------------


class Voters:
    """Threads voting through the JSON API: sessions of three, no pause, counting every
    acknowledged vote by its task id."""

    def __init__(self, port: int, n: int):
        self.base = f"http://127.0.0.1:{port}"
        self.acknowledged: set[int] = set()
        self.errors = 0
        self.kinds: Counter = Counter()
        self.running = True
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._vote, daemon=True) for _ in range(n)]

    def _post(self, path: str, body: dict, token: str | None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                         headers=headers)
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())

    def _vote(self):
        token = None
        while self.running:
            try:
                _, session = self._post("/api/v1/sessions", {}, token)
                token = token or session["voter_token"]
                for task in session["tasks"]:
                    if task["prompt"] is not None:
                        self._post(f"/api/v1/tasks/{task['task_id']}/read", {}, token)
                    status, body = self._post(f"/api/v1/tasks/{task['task_id']}/vote",
                                              {"choice": "left", "response_ms": 1500}, token)
                    if status == 201 and body.get("accepted"):
                        with self.lock:
                            self.acknowledged.add(task["task_id"])
            except urllib.error.HTTPError as error:
                if error.code == 409 and token is not None:
                    token = None  # this voter has seen every pair: a new voter takes over
                    continue
                self._failed(f"HTTP {error.code}: {error.read()[:80]!r}")
            except (OSError, http.client.HTTPException, ValueError, KeyError) as error:
                self._failed(type(error).__name__)

    def _failed(self, kind: str) -> None:
        with self.lock:
            self.errors += 1
            self.kinds[kind] += 1
        time.sleep(0.2)

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.running = False
        for t in self.threads:
            t.join(timeout=15)

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return len(self.acknowledged), self.errors


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS"))
               .split()[1]) / 1024


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def check_database(env: dict, acknowledged: set[int]) -> dict:
    """Votes stored vs acknowledged, and the online Elo vs a replay of the vote log."""
    os.environ.update(env)
    from sqlalchemy import select

    from arena import create_app
    from arena.extensions import db
    from arena.models import Vote
    from arena.voting import live_elo, votes

    app = create_app()
    with app.app_context():
        stored = set(db.session.scalars(select(Vote.task_id)))

        online = live_elo.every_rating()
        votes.replay()
        db.session.expire_all()
        replayed = live_elo.every_rating()
        db.engine.dispose()
    return {"stored": len(stored), "lost": len(acknowledged - stored),
            "unacknowledged": len(stored - acknowledged),
            "elo_matches": online == replayed,
            "elo_max_diff": max(abs(online[k][0] - replayed[k][0]) for k in online)}


def measure(rows: list, voters: Voters, master: int, name: str, seconds: float) -> None:
    """One phase: votes acknowledged, request errors and the worker's memory (its first and
    last tenth: flat memory means no leak)."""
    before = voters.snapshot()
    memory = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(1)
        memory += [rss_mb(w) for w in children(master)]
    after = voters.snapshot()
    tenth = max(len(memory) // 10, 1)
    drift = (f"; {statistics.median(memory[:tenth]):.0f} -> "
             f"{statistics.median(memory[-tenth:]):.0f} MB" if len(memory) >= 20 else "")
    rows.append((name, after[0] - before[0], after[1] - before[1],
                 f"{min(memory):.0f}-{max(memory):.0f}{drift}" if memory else "-"))


def report(title: str, rows: list, voters: Voters, env: dict) -> None:
    result = check_database(env, voters.acknowledged)
    print(f"\n{title}")
    print("| phase | votes acknowledged | request errors | worker RSS (MB) |\n|---|---|---|---|")
    for name, acked, errors, memory in rows:
        print(f"| {name} | {acked:,} | {errors} | {memory} |")
    print(f"votes acknowledged {len(voters.acknowledged):,}, stored {result['stored']:,}: "
          f"{result['lost']} acknowledged votes lost, {result['unacknowledged']} stored "
          f"without an answer (in flight at a fault); online Elo "
          f"{'equals' if result['elo_matches'] else 'DIFFERS FROM'} the replay "
          f"(largest difference {result['elo_max_diff']:.2e})")
    print("request errors by kind: " + ", ".join(f"{kind} x{n}" for kind, n
                                                 in voters.kinds.most_common(6)))


def crash(workdir: Path, label: str, url: str | None, n_voters: int, phase: float,
          soak: float, restart_database: str | None = None) -> None:
    instance = workdir / f"crash-{label}"
    env = instance_env(instance, url)
    demo(env)
    port = free_port()
    log = workdir / f"crash-{label}.log"
    command = [str(BIN / "arena"), "serve", "--server", "gunicorn", "--port", str(port)]
    server = start(command, env, log, port)
    voters = Voters(port, n_voters)
    voters.start()
    rows = []
    try:
        measure(rows, voters, server.pid, f"steady, {soak or phase:.0f} s", soak or phase)
        os.kill(children(server.pid)[0], signal.SIGKILL)
        measure(rows, voters, server.pid, "kill -9 worker", phase)
        before = voters.snapshot()
        server.send_signal(signal.SIGKILL)
        server.wait()
        restarted_at = time.monotonic()
        server = start(command, env, log, port)
        restart = time.monotonic() - restarted_at
        after = voters.snapshot()  # (the window itself: refused connections until it binds)
        rows.append((f"kill -9 master, until the restart serves ({restart:.1f} s)",
                     after[0] - before[0], after[1] - before[1], "-"))
        measure(rows, voters, server.pid, "after the restart", phase)
        server.send_signal(signal.SIGHUP)  # a new release: gunicorn's graceful reload
        measure(rows, voters, server.pid, "HUP (a new release) and after", phase)
        if restart_database:
            began = time.monotonic()
            subprocess.run(restart_database, shell=True, check=True, capture_output=True)
            measure(rows, voters, server.pid,
                    f"database restarted ({time.monotonic() - began:.1f} s)", phase)
    finally:
        voters.stop()
        stop(server)
    report(f"{label}: {n_voters} voters through the JSON API, phases of {phase:.0f} s",
           rows, voters, env)


def disk_full(workdir: Path, n_voters: int, phase: float) -> None:
    """SQLite on a 256 MB tmpfs (Linux, as root) that a filler file fills up, then frees."""
    mount = workdir / "small-disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        print("\ndisk full: skipped (mounting a tmpfs needs root on Linux)")
        return
    try:
        env = instance_env(mount / "instance", None)
        demo(env)
        port = free_port()
        log = workdir / "disk-full.log"
        server = start([str(BIN / "arena"), "serve", "--port", str(port)], env, log, port)
        voters = Voters(port, n_voters)
        voters.start()
        rows = []
        filler = mount / "filler"
        try:
            measure(rows, voters, server.pid, "steady", phase)
            with filler.open("wb") as f:
                try:
                    while True:
                        f.write(b"\0" * 2**20)
                        f.flush()
                except OSError:
                    pass
            ready = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/health/ready")
            time.sleep(1)
            try:
                urllib.request.urlopen(ready, timeout=5)
                readiness = "200 (ready)"
            except urllib.error.HTTPError as error:
                readiness = f"{error.code} {error.read()[:80]!r}"
            measure(rows, voters, server.pid, f"disk full (readiness: {readiness})", phase)
            filler.unlink()
            measure(rows, voters, server.pid, "space freed", phase)
        finally:
            voters.stop()
            stop(server)
        named = sum("full" in line for line in log.read_text().splitlines())
        report(f"disk full (SQLite on a 256 MB tmpfs): {n_voters} voters, phases of "
               f"{phase:.0f} s; {named} log lines name the full disk", rows, voters, env)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("slowloris", "crash", "disk-full"))
    parser.add_argument("--postgres", help="an empty PostgreSQL database URL")
    parser.add_argument("--voters", type=int, default=8)
    parser.add_argument("--phase", type=float, default=20.0, help="seconds per phase")
    parser.add_argument("--restart-postgres", metavar="COMMAND",
                        help="restarts PostgreSQL under load, e.g. 'pg_ctlcluster 15 main "
                        "restart' (a phase more on PostgreSQL)")
    parser.add_argument("--postgres-only", action="store_true",
                        help="crash: skip the SQLite run")
    parser.add_argument("--soak", type=float, default=0.0,
                        help="seconds of the steady phase (default: --phase), e.g. 600")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arena-faults-") as tmp:
        workdir = Path(tmp)
        if args.only in (None, "slowloris"):
            slowloris(workdir)
        if args.only in (None, "crash"):
            if not args.postgres_only:
                crash(workdir, "SQLite", None, args.voters, args.phase, args.soak)
            if args.postgres:
                crash(workdir, "PostgreSQL", args.postgres, args.voters, args.phase,
                      args.soak, args.restart_postgres)
        if args.only in (None, "disk-full"):
            disk_full(workdir, args.voters, args.phase)


if __name__ == "__main__":
    main()
