"""A farm against the demo: can patient identities buy a model a better public rank?

    .venv/bin/python benchmarks/farm.py [--honest 20000] [--identities 90] [--votes 60]
                                        [--models 8] [--hours 1] [--prompts 24]
                                        [--postgres URL]

A scratch instance with the demo campaign: its four models and, with ``--models 8``, four
more drawn as the demo draws (new images, their own strengths in between: the crowd's
log-strengths spread from 1.0 to -1.5), and ``--honest`` votes of arena demo's simulated
crowd, rolled up as the timer does. Then a farm: ``--identities`` identities
(three /24s' worth of 30: the new-identity limit's budget for an hour, each identity
recording its /24 as a new voter does) of ``--votes`` votes
each, within the hour before the cut-off (side by side, each on its own clock), cast
through the same session and vote services at a human pace (the pacing floor
respected), choosing the weakest model whenever it is shown, at random otherwise, and every
gold pair right (as a rule that worked would). Then the next period's timer run
(``arena votes rollup``: the farm screen, the rollups, the public figures). With
``--hours N`` the identities come in N hourly batches, the timer run after each: a patient
farm whose earlier hours are the crowd the later ones are screened against.

Prints the public ranking before the farm (ratings, rank sets, what each lead hinges on),
with the farm counted, and after the timer; the identities the screen held out and the
honest voters held with them; and three checks: no model's public rank left the rank set
published before the farm, every farm identity was held, and the lead the farm attacked was
marked fragile beforehand if the farm had moved it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
from harness import scratch_dir

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TARGET = "Dusk-0.3"
# the models --models 8 adds: name, the demo's drawing quality, the crowd's log-strength
MORE_MODELS = (("Ember-2", 0, 0.8), ("Flint-1", 1, 0.2), ("Grit-0.5", 2, -0.8),
               ("Haze-0.1", 3, -1.5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--honest", type=int, default=20_000)
    parser.add_argument("--identities", type=int, default=90)
    parser.add_argument("--votes", type=int, default=60, help="votes per farm identity")
    parser.add_argument("--models", type=int, choices=(4, 8), default=8)
    parser.add_argument("--hours", type=int, default=1,
                        help="spread the identities over this many hours, the timer run "
                             "after each (a patient farm)")
    parser.add_argument("--prompts", type=int, default=24, help="demo prompts")
    parser.add_argument("--postgres", help="an empty PostgreSQL database URL (else SQLite)")
    args = parser.parse_args()
    folder = scratch_dir("arena-farm-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(ARENA_INSTANCE_PATH=str(folder), ARENA_SECRET_KEY="farm",
               ARENA_PSEUDONYM_KEY="farm", ARENA_DEMO_PROMPTS=str(args.prompts),
               ARENA_GOLD_MAX_DAMAGED="40", ARENA_PRESENT_SIZES="[384]",
               ARENA_DEMO_IMAGE_SIZE="384", ARENA_DEMO_IMAGES_PER_MODEL="4")
    if args.postgres:
        env["ARENA_DATABASE_URL"] = args.postgres
    started = time.perf_counter()
    subprocess.run([str(BIN / "arena"), "demo", "--votes", "0"], env=env, cwd=ROOT,
                   check=True, capture_output=True)
    os.environ.update(env)
    run(args, started)


def run(args, started: float) -> None:
    from sqlalchemy import select

    from arena import create_app
    from arena.analysis import published
    from arena.analysis.leaderboard import rank_models
    from arena.campaigns.demo import SIMULATED_STRENGTH, simulate_votes
    from arena.extensions import db
    from arena.models import Voter

    app = create_app()
    timer = app.test_cli_runner()
    with app.app_context():
        strengths = dict(SIMULATED_STRENGTH)
        if args.models == 8:
            _more_models()
            strengths.update({name: strength for name, _, strength in MORE_MODELS})
        rng = np.random.default_rng(0)
        honest = simulate_votes(args.honest, rng, strengths=strengths)
        _a_period_earlier(app.config["PUBLISHED_PERIOD_S"])
        print(f"{honest:,d} honest votes cast ({time.perf_counter() - started:.0f} s)")
    assert timer.invoke(args=["votes", "rollup"]).exit_code == 0
    with app.app_context():
        before = _board(rank_models)
        _print("public ranking before the farm", before)
    farm: set[str] = set()
    rng, per_hour = np.random.default_rng(1), -(-args.identities // args.hours)
    for hour in range(args.hours):
        with app.app_context():
            if hour:  # (the hour before is over: its votes, and all before, a period back)
                _a_period_earlier(app.config["PUBLISHED_PERIOD_S"])
            start = hour * per_hour
            farm |= _farm(range(start, min(start + per_hour, args.identities)), args.votes,
                          rng)
            published.forget()  # (a page asking now: the farm's votes are before the cut-off)
            bought = _board(rank_models)
            published.forget()  # (the next period: its timer run screens again)
        done = timer.invoke(args=["votes", "rollup"])
        assert done.exit_code == 0, done.output
        with app.app_context():
            held = set(db.session.scalars(select(Voter.public_id).where(
                Voter.held_at.is_not(None))))
        if args.hours > 1:
            print(f"hour {hour + 1}: farm identities so far {len(farm)}, held "
                  f"{len(held & farm)}")
    with app.app_context():
        _print(f"with the farm counted ({len(farm)} identities x {args.votes} votes"
               f"{', the last hour' if args.hours > 1 else ''})", bought)
        after = _board(rank_models)
        _print("after the timer's run", after)
    named = len(held & farm)
    print(f"\nfarm identities held out: {named} of {len(farm)}; honest voters held with them: "
          f"{len(held - farm)}")

    def left(board):
        out = [m for m, row in board.items() if not before[m][1] <= row[0] <= before[m][2]]
        return "yes" if not out else "no: " + ", ".join(out)

    above = min((m for m in before if before[m][0] == before[TARGET][0] - 1), default=None)
    lead = before[above][3] if above else None
    print(f"check: no public rank left its published rank set after the timer: "
          f"{left(after)} (with the farm counted: {left(bought)})")
    print(f"check: every farm identity held within the period: "
          f"{'yes' if named == len(farm) else 'no'}")
    print(f"check: the lead over {TARGET} ({above}) hinged on {lead} voters before the farm"
          f"{'; the farm moved ' + TARGET if bought[TARGET][0] < before[TARGET][0] else ''}")


def _more_models() -> None:
    """:data:`MORE_MODELS` join the demo campaign, each with its images of every prompt
    drawn as the demo draws its models' (other variants: no image repeats another)."""
    from flask import current_app
    from sqlalchemy import select

    from arena.campaigns import campaigns
    from arena.campaigns.demo import DEMO_CAMPAIGN, render
    from arena.catalog import images
    from arena.extensions import db
    from arena.models import GenModel, Image, Prompt
    from arena.voting.votes import ensure_ratings

    config = current_app.config
    campaign = campaigns.get_campaign(DEMO_CAMPAIGN)
    prompts = db.session.scalars(select(Prompt).where(Prompt.id.in_(
        select(Image.prompt_id).where(Image.model_id.is_not(None))))).all()
    for name, quality, _ in MORE_MODELS:
        model = GenModel(name=name, description="Farm benchmark: a demo model's look.")
        db.session.add(model)
        db.session.flush()
        ensure_ratings([model.id])
        for prompt in prompts:
            for k in range(config["DEMO_IMAGES_PER_MODEL"]):
                images.store(render(prompt.text, quality, 100 + k, config["DEMO_IMAGE_SIZE"]),
                             model_id=model.id, prompt_id=prompt.id)
        db.session.commit()
        campaigns.add_model(campaign, name)


def _a_period_earlier(seconds: float) -> None:
    """The crowd's votes a period back: the campaign ran before the farm came."""
    from sqlalchemy import update

    from arena.analysis import published
    from arena.extensions import db
    from arena.models import Vote

    back = timedelta(seconds=float(seconds))
    db.session.execute(update(Vote).values(created_at=Vote.created_at - back,
                                           public_at=Vote.public_at - back))
    db.session.commit()
    published.forget()


def _board(rank_models) -> dict[str, tuple]:
    ranking = rank_models("preference", intervals="instant", public=True, include_idle=False)
    return {m.model: (m.rank, m.rank_best or m.rank, m.rank_worst or m.rank, m.lead_voters,
                      m.rating, m.ci_low, m.ci_high) for m in ranking.models}


def _print(title: str, board: dict) -> None:
    print(f"\n{title}")
    print(f"  {'model':12} {'rank':>4} {'set':>5} {'rating':>7} {'95% CI':>13} "
          f"{'lead holds unless':>18}")
    for model, (rank, best, worst, lead, rating, low, high) in sorted(
            board.items(), key=lambda item: item[1][0]):
        ci = f"{low:.0f}-{high:.0f}" if low is not None else "-"
        holds = f"{lead} voters" if lead is not None else "-"
        print(f"  {model:12} {rank:>4} {best}-{worst:<3} {rating:7.1f} {ci:>13} {holds:>18}")


def _farm(identities: range, per_identity: int, rng) -> set[str]:
    """The votes of these farm identities (numbered across hours: 30 to a /24), through
    the services, within the hour before the cut-off: they vote side by side, each on its
    own clock at a human pace, their starts spread over the hour."""
    from flask import current_app

    from arena.analysis import published
    from arena.extensions import db
    from arena.infra.network import network_hash
    from arena.models import Task
    from arena.voting import matchmaking, tasks, voters, votes

    hour = timedelta(seconds=float(current_app.config["PUBLISHED_PERIOD_S"]))
    first = published.cutoff() - hour + timedelta(seconds=30)
    spread = max(hour - timedelta(seconds=2.5 * per_identity + 60), timedelta(0))
    ids = set()
    for k in identities:  # (30 to a /24: the new-identity budget of an hour)
        clock = [first + spread * (k - identities.start) / max(len(identities) - 1, 1)]
        network = network_hash(current_app.config["SECRET_KEY"], f"198.51.{k // 30}.7")
        voter, _ = voters.create_voter({}, network=network)
        db.session.commit()
        ids.add(voter.public_id)
        cast = 0
        while cast < per_identity:
            try:
                session = matchmaking.start_session(voter, rng, "preference")
            except matchmaking.NoTasksAvailable:
                break
            for task_id in [t.id for t in session.tasks]:
                task = db.session.get(Task, task_id)
                tasks.present([task], now=clock[0])
                comparison = task.comparison
                if comparison.is_validation:  # gold: right, as a working rule would
                    choice = "left" if comparison.correct_image_id == task.left_image_id \
                        else "right"
                elif task.left_image.model and task.left_image.model.name == TARGET:
                    choice = "left"
                elif task.right_image.model and task.right_image.model.name == TARGET:
                    choice = "right"
                else:
                    choice = "left" if rng.random() < 0.5 else "right"
                clock[0] += timedelta(milliseconds=int(rng.integers(1200, 2500)))
                votes.cast_vote(voter, task.id, choice, 1500, now=clock[0])
                cast += 1
    return ids


if __name__ == "__main__":
    main()
