"""Votes through deploy/'s nginx in front of one app server and of two, on one PostgreSQL
database, one Redis and one S3 bucket: throughput, latency, and a server killed mid-load.

    .venv/bin/python benchmarks/servers.py [--seconds 15] [--rounds 2] [--threads 6]

Starts moto's S3 server on 127.0.0.1 and the deployment of the two-server tests
(:func:`benchmarks.deployment.deployed`: a new PostgreSQL database upgraded once, a small
demo loaded, two stock gunicorn servers of one process each, nginx listing both), and a
second nginx listing only the first server. ``--threads`` voters on the JSON API, without a
pause (a session, both images of each task, the caption confirmed, the vote), drive each
proxy in turn for ``--seconds``, ``--rounds`` times; per shape it prints the votes
acknowledged per second and the p50/p99 of a vote and of an image. Then two servers again,
the second killed (SIGKILL, master and worker) halfway: the votes acknowledged and stored,
those lost, the requests nginx could not answer, how long until votes were acknowledged
again, and whether the online Elo equals a replay of the log.

On this 2-core machine the servers, PostgreSQL, nginx and the voters share two cores: the
second server shows what the shape costs and keeps (votes, sessions, limits, images shared),
not what a second machine adds (docs/deployment.md's capacity model says that).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.deployment import Deployment, Ledger, Load, deployed
from benchmarks.harness import scratch_dir
from tests.security.test_slow_clients import _listening, _start_nginx
from tests.web.servers import free_port, stop

WARMUP = 1.0  # seconds of each drive not counted (connections, caches)


def drive(port: int, ledger: Ledger, threads: int, seconds: float) -> dict:
    """``threads`` voters through ``port`` for ``seconds``: votes acknowledged per second
    and the p50/p99 of votes and images (ms), over the drive after its warm-up."""
    with Load(port, ledger, threads) as load:
        start = time.monotonic()
        time.sleep(seconds)
    if load.errors:
        raise SystemExit(f"voters failed: {load.errors[:3]}")
    counted = [r for r in load.requests if r[0] >= start + WARMUP]
    window = max(max((r[0] + r[4] for r in counted), default=start) - start - WARMUP, 1e-9)
    votes = [r[4] for r in counted if r[1] == "POST" and r[2].endswith("/vote")
             and r[3] == 201]
    images = [r[4] for r in counted if r[1] == "GET" and r[3] == 200]
    return {"votes/s": len(votes) / window, "vote": np.array(votes) * 1000,
            "image": np.array(images) * 1000}


def killed(live: Deployment, port: int, threads: int, seconds: float) -> dict:
    """Two servers through ``port``, the second killed halfway through ``seconds``."""
    victim = live.servers[1]
    ledger = live.ledger
    with Load(port, ledger, threads) as load:
        time.sleep(seconds / 2)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        gone = time.monotonic()
        time.sleep(seconds / 2)
    after = [r[0] + r[4] for r in load.requests
             if r[0] >= gone and r[2].endswith("/vote") and r[3] == 201]
    stored = live.stored()
    acknowledged = set(ledger.acknowledged)
    try:
        live.check_votes()
        replayed = "yes"
    except AssertionError as exc:
        replayed = f"NO ({exc})"
    return {"acknowledged": len(acknowledged), "stored": len(stored),
            "lost": len(acknowledged - stored), "unanswered": sum(not r[3] for r in load.requests),
            "gap": (min(after) - gone) if after else float("nan"), "replay": replayed,
            "errors": load.errors}


def compare(live: Deployment, seconds: float, rounds: int, threads: int) -> None:
    """Print the figures for ``live`` (started by :func:`deployed`), one server against two,
    then the kill."""
    live.both_running()
    folder = live.folder / "nginx-one"
    folder.mkdir(exist_ok=True)
    one = free_port()
    nginx = _start_nginx(folder, one, live.ports[:1])
    try:
        _listening(one, nginx)
        shapes = {"1 server": one, "2 servers": live.proxy}
        runs: dict[str, list] = {name: [] for name in shapes}
        for _ in range(rounds):
            for name, port in shapes.items():
                runs[name].append(drive(port, live.ledger, threads, seconds))
    finally:
        stop(nginx)
    print(f"{threads} voters without a pause, {rounds} x {seconds:g} s per shape, "
          "through nginx")
    print(f"  {'':10} {'votes/s':>8}  {'vote p50/p99 ms':>16}  {'image p50/p99 ms':>17}")
    for name, done in runs.items():
        rate = [d["votes/s"] for d in done]
        vote = np.concatenate([d["vote"] for d in done])
        image = np.concatenate([d["image"] for d in done])
        print(f"  {name:10} {np.median(rate):8.1f}  "
              f"{np.percentile(vote, 50):7.1f} / {np.percentile(vote, 99):6.1f}  "
              f"{np.percentile(image, 50):8.1f} / {np.percentile(image, 99):6.1f}"
              f"   (rounds: {', '.join(f'{r:.1f}' for r in rate)})")
    kill = killed(live, live.proxy, threads, seconds)
    print(f"2 servers, the second killed after {seconds / 2:g} s:")
    print(f"  votes acknowledged in the whole run {kill['acknowledged']:,d}, stored "
          f"{kill['stored']:,d}, acknowledged but lost {kill['lost']}")
    print(f"  requests nginx could not answer {kill['unanswered']} (POSTs under way on the "
          "killed server: sent again by the voters)")
    print(f"  first vote acknowledged after the kill {kill['gap'] * 1000:.0f} ms later")
    print(f"  online Elo = replay of the log: {kill['replay']}")
    if kill["errors"]:
        print(f"  voters' errors: {kill['errors'][:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=6)
    args = parser.parse_args()
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # (moto's server logs each request)
    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    s3.start()
    host, port = s3.get_host_and_port()
    try:
        with deployed(scratch_dir("arena-servers-"), f"http://{host}:{port}") as live:
            compare(live, args.seconds, args.rounds, args.threads)
    finally:
        s3.stop()


if __name__ == "__main__":
    main()
