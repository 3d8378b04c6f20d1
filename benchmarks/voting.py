"""Voting path benchmark: page weight of a task, time per request, matchmaking at scale.

    .venv/bin/python benchmarks/voting.py [--rounds 200] [--prompts 282[,1740]] [--postgres URL]

Prints medians measured in this one run (the machine is noisy: compare ratios, not runs).
Requests go through the Flask test client, so the times are the app's own work (routing,
database, templates) without network or WSGI server overhead.
"""

from __future__ import annotations

import argparse
import gzip
import re
import statistics
import time
from pathlib import Path

import numpy as np
from harness import scratch_dir
from sqlalchemy import select
from synthetic import grow_campaign, grow_gold, settle

from arena import create_app
from arena.campaigns import allocation, demo, gold
from arena.extensions import db
from arena.infra.instance import upgrade_schema
from arena.models import Campaign, Comparison
from arena.voting import matchmaking, voters
from arena.voting.votes import ensure_ratings

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def median_ms(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


BROWSER = "gzip, deflate, br, zstd"  # what Chromium sends


def page_weight(client) -> None:
    landing = client.get("/")
    token = CSRF.search(landing.get_data(as_text=True)).group(1)
    session_page = client.get(client.post("/start", data={"csrf_token": token})
                              .headers["Location"])
    html = session_page.data
    assets = re.findall(rb'(?:href|src)="(/static/[^"]+|/img/[^"]+)"', html)
    rows = [("session page HTML", html)]
    for url in assets:
        with client.get(url.decode()) as response:
            rows.append((url.decode().split("/")[-1][:40], response.data))
    # what the app itself sends to a browser that accepts compression (Flask-Compress)
    wire = [len(client.get(session_page.request.path,
                           headers={"Accept-Encoding": BROWSER}).data)]
    for url in assets:
        with client.get(url.decode(), headers={"Accept-Encoding": BROWSER}) as response:
            wire.append(len(response.get_data()))
    print("\nPage weight of one task (first visit, nothing cached):")
    total = total_gz = total_wire = 0
    for (name, data), sent in zip(rows, wire, strict=True):
        gz = len(gzip.compress(data))
        total += len(data)
        total_gz += gz
        total_wire += sent
        print(f"  {name:42s} {len(data):8,d} B   gzip {gz:8,d} B   sent {sent:8,d} B")
    print(f"  {'total':42s} {total:8,d} B   gzip {total_gz:8,d} B   sent {total_wire:8,d} B")
    images = sum(sent for (name, _), sent in zip(rows, wire, strict=True)
                 if name.endswith(".webp"))
    print(f"  sent before images: {total_wire - images:,d} B (Accept-Encoding: {BROWSER})")
    landing_gz = len(gzip.compress(landing.data))
    print(f"  landing page HTML {len(landing.data):,d} B (gzip {landing_gz:,d})")


def request_times(app, rounds: int) -> None:
    client = app.test_client()
    token = CSRF.search(client.get("/").get_data(as_text=True)).group(1)
    state = {}

    def start():
        state["location"] = client.post("/start", data={"csrf_token": token}).headers["Location"]

    def show():
        state["html"] = client.get(state["location"]).get_data(as_text=True)

    def read():  # alignment tasks: confirm the caption first (REVEAL_WORD_MS is 0 here)
        found = re.search(r'formaction="(/t/\d+/read)"', state["html"])
        if found:
            client.post(found.group(1), data={"csrf_token": token})

    def vote():
        task_id = re.search(r'action="/t/(\d+)"', state["html"]).group(1)
        response = client.post(f"/t/{task_id}", data={"csrf_token": token, "choice": "left",
                                                      "response_ms": "800"},
                               headers={"HX-Request": "true"})
        assert response.status_code == 200, response.status_code

    landing = median_ms(lambda: client.get("/"), rounds)
    starts, shows, votes = [], [], []
    for _ in range(rounds):
        starts.append(median_ms(start, 1))
        shows.append(median_ms(show, 1))
        read()
        votes.append(median_ms(vote, 1))
    print(f"\nTime per request, median of {rounds} (in-process):")
    print(f"  GET  /              landing            {landing:7.2f} ms")
    print(f"  POST /start         issue a session    {statistics.median(starts):7.2f} ms")
    print(f"  GET  /s/<id>        task page          {statistics.median(shows):7.2f} ms")
    print(f"  POST /t/<id> (htmx) vote + next card   {statistics.median(votes):7.2f} ms")


def matchmaking_scale(app, label: str, rounds: int, sizes=(282,)) -> None:
    """Issuing a session as the campaign grows from the demo's 24 prompts to each of
    ``sizes`` (282: the source benchmark's, 11.7-fold the comparisons): without a gold pair,
    with one (an alignment session: swapped gold pairs are the largest supply, a fifth of
    the ordinary ones), the gold check after a gold answer (matchmaking.gold_check) and the
    count of the campaign's damaged gold at its cap (gold._at_cap)."""
    rng = np.random.default_rng(1)
    rows, prompts = [], 24
    with app.app_context():
        campaign_id = db.session.scalar(select(Campaign.id).order_by(Campaign.id))

        def measure() -> dict:
            voter, _ = voters.create_voter()
            db.session.commit()

            def issue(rate: float, criterion=None):
                app.config["VALIDATION_RATE"] = rate
                matchmaking.start_session(voter, rng, criterion)
                db.session.commit()

            def check():
                matchmaking.gold_check(voter.id, "alignment", 0)
                db.session.commit()

            def cap():
                gold._at_cap(campaign_id, "preference")
                db.session.commit()
            return {"comparisons": db.session.scalar(
                        select(db.func.count()).select_from(Comparison)),
                    "gold": db.session.scalar(select(db.func.count()).select_from(
                        Comparison).where(Comparison.is_validation)),
                    "plain": median_ms(lambda: issue(0.0), rounds),
                    "gold_session": median_ms(lambda: issue(1.0, "alignment"), rounds),
                    "check": median_ms(check, rounds), "cap": median_ms(cap, rounds)}

        grow_gold()
        settle("comparison")
        rows.append(measure())
        for size in sizes:
            grow_campaign(size - prompts)
            prompts = size
            grow_gold()
            settle("comparison")
            rows.append(measure())
        # the same campaign allocated actively, early stopping on: a refresh's budget of its
        # comparisons open, the rest resting at the top level (arena.campaigns.allocation)
        campaign = db.session.get(Campaign, campaign_id)
        opened = sum(d.opened for d in allocation.configure(campaign, "active", True))
        settle("comparison")
        active = measure()
        app.config["VALIDATION_RATE"] = 0.0
    print(f"\nMatchmaking on {label} (median of {rounds}, one voter per size who accumulates "
          f"tasks; the gold supply as a published campaign's: a fifth for alignment, 400 "
          f"damaged for the others):")
    print(f"  {'comparisons (gold)':>22} {'session':>9} {'with gold':>10} {'gold check':>11}"
          f" {'cap count':>10}")
    for row in rows:
        print(f"  {row['comparisons']:>12,d} ({row['gold']:>6,d}) {row['plain']:7.2f} ms"
              f" {row['gold_session']:7.2f} ms {row['check']:8.2f} ms {row['cap']:7.2f} ms")
    small = rows[0]
    for large in rows[1:]:
        grew = large["comparisons"] / small["comparisons"]
        print(f"  ratio for {grew:.1f}x the comparisons: session "
              f"{large['plain'] / small['plain']:.2f}x, with gold "
              f"{large['gold_session'] / small['gold_session']:.2f}x, gold check "
              f"{large['check'] / small['check']:.2f}x, cap count "
              f"{large['cap'] / small['cap']:.2f}x")
    large = rows[-1]
    print(f"  active allocation, {opened:,d} comparisons open: session {active['plain']:.2f} ms"
          f" ({active['plain'] / large['plain']:.2f}x balanced), with gold "
          f"{active['gold_session']:.2f} ms "
          f"({active['gold_session'] / large['gold_session']:.2f}x)")


def make_app(tmp: Path, url: str | None):
    config = {"INSTANCE_PATH": str(tmp), "SECRET_KEY": "bench", "PSEUDONYM_KEY": "bench",
              "RATELIMIT_ENABLED": False, "VALIDATION_RATE": 0.0, "REVEAL_WORD_MS": 0}
    if url:
        config["DATABASE_URL"] = url
    app = create_app(config)
    with app.app_context():
        upgrade_schema()
        t0 = time.perf_counter()
        demo.load_demo()
        print(f"demo campaign loaded in {time.perf_counter() - t0:.1f} s")
        ensure_ratings([])
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--prompts", default="282", metavar="N[,N...]",
                        help="the campaign's prompts to grow to for matchmaking at scale, in "
                             "turn (default 282: 81,228 comparisons; 1740: about 500k)")
    parser.add_argument("--postgres", help="also measure matchmaking on this empty database")
    args = parser.parse_args()
    app = make_app(scratch_dir("arena-bench-"), None)
    page_weight(app.test_client())
    request_times(app, args.rounds)
    sizes = [int(n) for n in args.prompts.split(",")]
    matchmaking_scale(app, "SQLite", args.rounds, sizes)
    if args.postgres:
        pg_app = make_app(scratch_dir("arena-bench-pg-"), args.postgres)
        matchmaking_scale(pg_app, "PostgreSQL", args.rounds, sizes)


if __name__ == "__main__":
    main()
