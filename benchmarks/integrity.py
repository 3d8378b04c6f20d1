"""The integrity attack table: ballot stuffing, gold pairs, new identities, HYPE timing.

    .venv/bin/python benchmarks/integrity.py

Each attack is run against a throwaway instance with the production settings (the demo
campaign, rate limits on) and its outcome printed beside what the same attack gave before
the defence. benchmarks/blinding.py prints the blinding half of the table.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import numpy as np
from harness import scratch_dir
from sqlalchemy import func, select

from arena.infra.instance import upgrade_schema

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena import create_app
from arena.campaigns import demo
from arena.extensions import db
from arena.hype import runs, timing
from arena.models import Comparison, HypeTrial, Task, Vote, utcnow
from arena.voting import live_elo, matchmaking, voters, votes


def new_app(**config):
    tmp = scratch_dir("arena-integrity-")
    app = create_app({"INSTANCE_PATH": str(tmp), "SECRET_KEY": "bench",
                      "PSEUDONYM_KEY": "bench", **config})
    with app.app_context():
        upgrade_schema()
        demo.load_demo(n_prompts=6, images_per_model=2)
    return app


def stuffing(app) -> str:
    """A script answering every task the instant it arrives, through the API."""
    client = app.test_client()
    body = client.post("/api/v1/sessions", json={"criterion": "preference"}).json
    token = body["voter_token"]
    headers = {"Authorization": f"Bearer {token}"}
    with app.app_context():
        before = sum(n for _, n, _ in live_elo.every_rating().values())
    sent = 0
    for _ in range(40):
        for task in body["tasks"]:
            client.post(f"/api/v1/tasks/{task['task_id']}/vote", headers=headers,
                        json={"choice": "left", "response_ms": 2500})
            sent += 1
        body = client.post("/api/v1/sessions", json={"criterion": "preference"},
                           headers=headers).json
        if "tasks" not in body:
            break
    with app.app_context():
        stored = db.session.scalar(select(func.count()).select_from(Vote))
        counted = db.session.scalar(select(func.count()).select_from(Vote)
                                    .where(Vote.flags == 0))
        moved = sum(n for _, n, _ in live_elo.every_rating().values()) - before
        fastest = db.session.scalar(select(func.max(Vote.server_ms)))
    return (f"{sent} sent, {stored} stored, {counted} counted, online Elo moved by "
            f"{moved // 2} votes (slowest {fastest} ms)")


def gold_exposure(app, sessions: int = 96) -> str:
    """Fresh voters' sessions: are gold pairs the most served?"""
    rng = np.random.default_rng(1)
    with app.app_context():
        for _ in range(sessions):
            voter, _ = voters.create_voter()
            db.session.commit()
            matchmaking.start_session(voter, rng, "preference")
        served = Counter(db.session.scalars(select(Task.comparison_id)))
        gold = dict(db.session.execute(select(Comparison.id, Comparison.is_validation)).all())
    top3 = sum(gold[c] for c, _ in served.most_common(3))
    most_gold = max((n for c, n in served.items() if gold[c]), default=0)
    most_regular = max(n for c, n in served.items() if not gold[c])
    return (f"{top3} of the top 3 pairs are gold; the most-served gold pair {most_gold}x, "
            f"the most-served ordinary pair {most_regular}x")


def gold_for_life(app, sessions: int = 40) -> str:
    rng = np.random.default_rng(2)
    with app.app_context():
        voter, _ = voters.create_voter()
        db.session.commit()
        checks = 0
        for _ in range(sessions):
            session = matchmaking.start_session(voter, rng, "coherence")
            checks += sum(t.comparison.is_validation for t in session.tasks)
            for task in session.tasks:  # answered: a new gold pair is made after gold votes
                votes.cast_vote(voter, task.id, "left")
    return f"{checks} checks in {sessions} sessions at VALIDATION_RATE 0.5"


def new_identities(app, attempts: int = 100) -> str:
    client = app.test_client()
    codes = Counter(client.post("/api/v1/sessions").status_code for _ in range(attempts))
    return f"{codes[201]} of {attempts} new identities from one network in an hour"


def hype_claim(app, tmp: Path) -> str:
    from PIL import Image as PILImage

    reals = tmp / "reals"
    reals.mkdir()
    rng = np.random.default_rng(3)
    for k in range(60):
        PILImage.fromarray(rng.integers(0, 255, (48, 48, 3)).astype("uint8")).save(
            reals / f"{k}.png")
    with app.app_context():
        app.config.update(HYPE_QUALIFICATION_TRIALS=4, HYPE_QUALIFICATION_PASS=0.0,
                          HYPE_TIME_BLOCKS=1, HYPE_TIME_BLOCK_TRIALS=4)
        runs.import_reals(reals)
        run = runs.create_run("Timed", "time", ["Aurora-XL", "Dusk-0.3"])
        voter, _ = voters.create_voter()
        db.session.commit()
        qualification = runs.start_stage(run, voter, "qualification", rng)
        while runs.next_trial(qualification) is not None:
            trial = runs.stage_view(qualification, rng).trial
            runs.answer(qualification, trial.id, trial.is_real)
        stage = runs.start_stage(run, voter, "time", rng)
        later = db.session.scalars(select(HypeTrial).where(HypeTrial.stage_id == stage.id)
                                   .order_by(HypeTrial.position.desc())).first()
        try:  # the attack: answer a trial that was never shown
            runs.answer(stage, later.id, later.is_real, timing.Report(
                frames=30, frame_ms=16.667, actual_ms=500.0))
            unseen = "counted"
        except runs.TrialNotOnScreen:
            unseen = "refused"
        trial = runs.stage_view(stage, rng).trial
        trial.served_at = utcnow() - timedelta(seconds=12)
        db.session.commit()
        runs.answer(stage, trial.id, trial.is_real,
                    timing.Report(frames=600, frame_ms=16.667, actual_ms=9999.5))
        stored = db.session.get(HypeTrial, trial.id)
        return (f"requested {stored.requested_ms:.0f} ms, page claimed 9999.5 ms: "
                f"{'voided (' + stored.void_reason + ')' if stored.voided else 'counted'}, "
                f"recorded {stored.actual_ms}; an answer to a trial never shown: {unseen}")


def many_sessions(app, sessions: int = 20) -> str:
    """One voter opens many sessions, waits once, answers each back to back."""
    client = app.test_client()
    body = client.post("/api/v1/sessions", json={"criterion": "preference"}).json
    headers = {"Authorization": f"Bearer {body['voter_token']}"}
    firsts = [body["tasks"][0]["task_id"]]
    for _ in range(sessions - 1):
        more = client.post("/api/v1/sessions", json={"criterion": "preference"},
                           headers=headers).json
        firsts.append(more["tasks"][0]["task_id"])
    time.sleep(0.75)
    for task_id in firsts:
        client.post(f"/api/v1/tasks/{task_id}/vote", headers=headers, json={"choice": "left"})
    with app.app_context():
        counted = db.session.scalar(select(func.count()).select_from(Vote)
                                    .where(Vote.flags == 0))
    return f"{counted} of {len(firsts)} counted"


def bearer_bypass(app, attempts: int = 100) -> str:
    """Cookie routes with a made-up bearer token, one network."""
    created = 0
    for k in range(attempts):
        client = app.test_client()
        page = client.get("/").get_data(as_text=True)
        token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        response = client.post("/start", data={"csrf_token": token},
                               headers={"Authorization": f"Bearer made-up-{k}"})
        created += response.status_code == 303
    return f"{created} of {attempts} new voters"


def gold_timing(app, sessions: int = 120) -> str:
    """Session creation time, sessions with a gold pair against without; first fetches of
    gold images against ordinary ones (before: 50 vs 10 ms, 77 vs 1 ms)."""
    client = app.test_client()
    made, plain, gold_fetch, plain_fetch = [], [], [], []
    body = client.post("/api/v1/sessions", json={"criterion": "coherence"}).json
    headers = {"Authorization": f"Bearer {body['voter_token']}"}
    for _ in range(sessions):
        for task in body["tasks"]:
            with app.app_context():
                gold = db.session.get(Task, task["task_id"]).comparison.is_validation
            for side in ("left", "right"):
                t0 = time.perf_counter()
                client.get(task[side]["url"].replace("http://localhost", "")).close()
                (gold_fetch if gold else plain_fetch).append(time.perf_counter() - t0)
            vote = client.post(f"/api/v1/tasks/{task['task_id']}/vote", headers=headers,
                               json={"choice": "left"}, buffered=False)
            vote.close()  # deferred work (a new gold pair) runs after the response
        t0 = time.perf_counter()
        body = client.post("/api/v1/sessions", json={"criterion": "coherence"},
                           headers=headers).json
        elapsed = time.perf_counter() - t0
        if "tasks" not in body:
            break
        with app.app_context():
            has_gold = any(db.session.get(Task, t["task_id"]).comparison.is_validation
                           for t in body["tasks"])
        (made if has_gold else plain).append(elapsed)
    ms = lambda xs: 1000 * float(np.median(xs)) if xs else float("nan")  # noqa: E731
    return (f"session creation {ms(made):.1f} ms with gold vs {ms(plain):.1f} ms without "
            f"({len(made)}/{len(plain)} sessions); first image fetch {ms(gold_fetch):.1f} vs "
            f"{ms(plain_fetch):.1f} ms")


def main() -> None:
    rows = [
        ("votes < 200 ms after issue", "1,736 of 5,072 load-test votes, all counted",
         stuffing(new_app(RATELIMIT_ENABLED=False, VALIDATION_RATE=0.0))),
        ("gold among the most-served pairs", "top 3 of 96 fresh sessions all gold",
         gold_exposure(new_app(RATELIMIT_ENABLED=False, VALIDATION_RATE=0.5))),
        ("checks in a voter's life", "at most 12 (4 gold pairs per criterion)",
         gold_for_life(new_app(RATELIMIT_ENABLED=False, VALIDATION_RATE=0.5))),
        ("cost of a new identity", "one request",
         new_identities(new_app(RATELIMIT_ENABLED=True))),
    ]
    rows += [
        ("one voter, 20 sessions, one wait, answered back to back", "60 of 60 counted",
         many_sessions(new_app(RATELIMIT_ENABLED=False, VALIDATION_RATE=0.0,
                               MIN_VOTE_MS={"preference": 700}))),
        ("cookie route with a made-up bearer token", "100 of 100 new voters",
         bearer_bypass(new_app(RATELIMIT_ENABLED=True))),
        ("gold in the timing", "sessions 50 vs 10 ms, first fetches 77 vs 1 ms",
         gold_timing(new_app(RATELIMIT_ENABLED=False, VALIDATION_RATE=0.5))),
    ]
    tmp = scratch_dir("arena-integrity-hype-")
    rows.append(("HYPE-time exposure claim", "9999.5 ms accepted for a requested 500 ms",
                 hype_claim(new_app(RATELIMIT_ENABLED=False), tmp)))
    for what, before, after in rows:
        print(f"{what}\n  before: {before}\n  after:  {after}")


if __name__ == "__main__":
    main()
