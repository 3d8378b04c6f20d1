"""Farms against the demo: can identities shaped to the screen's thresholds buy a model a
better public rank, and what would one rank cost?

    .venv/bin/python benchmarks/farm.py [--honest 20000] [--period 2000] [--models 8]
                                        [--prompts 24] [--shapes direct,omnipresent,both]
                                        [--sizes 30,60,120,240] [--votes 14]
                                        [--on-target 4] [--per-network 3] [--earn-trust]
                                        [--hours 1] [--target Dusk-0.3]
                                        [--elsewhere majority|crowd] [--elo-orders N]
                                        [--seed 0]

A scratch instance with the demo campaign: its four models and, with ``--models 8``, four
more drawn as the demo draws (the crowd's log-strengths spread from 1.0 to -1.5), ``--honest``
votes of arena demo's simulated crowd days before, and ``--period`` more from new voters in
the hour before the cut-off. The public boards (Bradley-Terry with rank sets; the online Elo
table) after the timer's run over that are the ones published before any farm.

Then, for each shape and size, from a copy of that instance: a farm of N identities
(``--per-network`` to a /24, as the new-identity limit allows) of ``--votes`` votes each, side
by side in the hour before the cut-off, each on its own clock at a human pace (1.5-4 s a
vote), every gold pair answered right (as a rule that worked would), and the next timer run
(``arena votes rollup``: the farm screen, the cohort screen, the rollups, the public
figures). Shapes, each with the crowd's majority on every other pair (agreeing with the crowd
elsewhere, as a farm that wants full weight would; ``--elsewhere crowd``: drawn as the crowd
draws, so its record looks like any newcomer's):

The farm works for ``--target`` (Dusk-0.3 by default; "Dusk-0.3" below).

* ``direct``: Dusk-0.3's image whenever shown, up to ``--on-target`` times an identity (a
  voter's score needs five games with a model);
* ``omnipresent``: against Dusk-0.3's upper neighbour whenever it meets a model other than
  Dusk-0.3, up to ``--on-target`` times (Min et al. 2025: votes on pairs without the target);
* ``both``: half of each;
* ``control``: no aim: every pair answered as the crowd answers (Bradley-Terry draws from the
  crowd's strengths): how far the same number of honest newcomers' votes moves the tables.

The farm has earned trust already (the hardest case for the screens: ``--earn-trust`` makes
each identity earn it on the simulated clock first, a visit 21 hours before the attack).
With ``--hours N`` the identities come in N hourly batches, the timer run after each: a
patient farm, each batch screened against a crowd that holds the ones before it (its day's
and week's cohorts hold them all).

Prints per shape and size: the farm's votes and share of the period's; Dusk-0.3's public rank
(Bradley-Terry; the Elo table) before, counted live, and after the timer; whether every
model's public rank after the timer (on both tables) stayed in its published rank set; the
identities held (farm / honest) and waiting on a cohort review (farm / honest); then, per
shape, the cost of moving Dusk-0.3 one public rank: the smallest farm tried that did.
"""

from __future__ import annotations

import argparse
import os
import shutil
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
SHAPES = ("direct", "omnipresent", "both", "control")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--honest", type=int, default=20_000, help="the crowd's votes, "
                        "days before")
    parser.add_argument("--period", type=int, default=2_000,
                        help="honest votes of new voters in the farm's hour")
    parser.add_argument("--models", type=int, choices=(4, 8), default=8)
    parser.add_argument("--prompts", type=int, default=24, help="demo prompts")
    parser.add_argument("--shapes", default=",".join(SHAPES[:3]))
    parser.add_argument("--sizes", default="30,60,120,240", help="identities per farm")
    parser.add_argument("--votes", type=int, default=14, help="votes per farm identity")
    parser.add_argument("--on-target", type=int, default=4,
                        help="most votes an identity casts for the farm's aim")
    parser.add_argument("--per-network", type=int, default=3, help="identities per /24")
    parser.add_argument("--earn-trust", action="store_true",
                        help="each identity earns trust on the simulated clock first")
    parser.add_argument("--image-size", type=int, default=384,
                        help="pixels a side of the demo's images (and the size served)")
    parser.add_argument("--hours", type=int, default=1,
                        help="a patient farm: the identities come in this many hourly "
                             "batches, the timer run after each")
    parser.add_argument("--target", default=TARGET, help="the model the farm works for")
    parser.add_argument("--elsewhere", choices=("majority", "crowd"), default="majority",
                        help="how the farm answers pairs outside its aim: the crowd's "
                             "majority, or drawn as the crowd draws")
    parser.add_argument("--elo-orders", type=int, default=None,
                        help="keyed orders the public Elo averages (ELO_PUBLIC_ORDERS)")
    parser.add_argument("--seed", type=int, default=0, help="the crowd's and the farms' draws")
    args = parser.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    if set(shapes) - set(SHAPES):
        parser.error(f"--shapes: one of {', '.join(SHAPES)}")
    folder = scratch_dir("arena-farm-")
    base = folder / "base"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update(ARENA_INSTANCE_PATH=str(base), ARENA_SECRET_KEY="farm",
               ARENA_PSEUDONYM_KEY="farm", ARENA_DEMO_PROMPTS=str(args.prompts),
               ARENA_GOLD_MAX_DAMAGED="40", ARENA_PRESENT_SIZES=f"[{args.image_size}]",
               ARENA_ZOOM_SIZES="[]", ARENA_DEMO_IMAGE_SIZE=str(args.image_size),
               ARENA_DEMO_IMAGES_PER_MODEL="4",
               ARENA_EARN_TRUST_GOLD="2" if args.earn_trust else "0")
    if args.elo_orders is not None:
        env["ARENA_ELO_PUBLIC_ORDERS"] = str(args.elo_orders)
    started = time.perf_counter()
    subprocess.run([str(BIN / "arena"), "demo", "--votes", "0"], env=env, cwd=ROOT,
                   check=True, capture_output=True)
    os.environ.update(env)
    crowd(args)
    print(f"{args.honest:,d} honest votes days before, {args.period:,d} in the farm's hour "
          f"({time.perf_counter() - started:.0f} s)")
    before = boards(base, folder / "published")
    _print("published before any farm (Bradley-Terry; the online Elo table's rank)", before)
    rows, costs = [], {}
    for shape in shapes:
        for size in sorted(int(s) for s in args.sizes.split(",")):
            row = attack(args, folder, base, before, shape, size)
            rows.append(row)
            report(row)
            if row["moved"] and shape not in costs and shape != "control":
                costs[shape] = row
    print(f"\ncost to move {args.target} one public rank (after the timer, either table):")
    largest = max(int(s) for s in args.sizes.split(","))
    for shape in (s for s in shapes if s != "control"):
        row = costs.get(shape)
        print(f"  {shape:12} " + (
            f"{row['size']} identities on {row['networks']} /24s, {row['votes']:,d} votes "
            f"({row['share']:.0%} of the period's)" if row else
            f"not bought by any farm tried (up to {largest} identities, "
            f"{largest * args.votes:,d} votes)"))
    control = [r for r in rows if r["shape"] == "control"]
    if control:
        print(f"control: the same numbers of honest newcomers' votes kept every public rank in "
              f"its published rank set: {sum(r['kept'] for r in control)} of {len(control)}")
    farms = [r for r in rows if r["shape"] != "control"]
    fine = [r for r in farms if r["share"] <= 0.25]
    kept = ('yes' if all(r['kept'] for r in fine) else 'no') if fine else "no farm that small tried"
    print(f"check: no farm of up to 25% of the period's votes moved a public rank out of its "
          f"published rank set after the timer: {kept} ({len(fine)} farms)")
    print(f"check: honest voters held (in the farms' periods): "
          f"{sum(r['honest_held'] for r in farms)} of {sum(r['honest_voters'] for r in farms)}")


def crowd(args) -> None:
    """The demo's crowd days before, and new voters in the hour before the cut-off."""
    from arena import create_app
    from arena.analysis import published
    from arena.campaigns.demo import SIMULATED_STRENGTH, seed_shuffle_keys, simulate_votes
    from arena.extensions import db

    app = create_app()
    with app.app_context():
        strengths = dict(SIMULATED_STRENGTH)
        if args.models == 8:
            _more_models()
            strengths.update({name: strength for name, _, strength in MORE_MODELS})
        seed_shuffle_keys(args.seed)
        rng = np.random.default_rng(args.seed)
        simulate_votes(args.honest, rng, strengths=strengths)
        _shift(timedelta(days=3))
        simulate_votes(args.period, rng, strengths=strengths)
        hour = timedelta(seconds=float(app.config["PUBLISHED_PERIOD_S"]))
        _into_the_hour(hour)
        db.session.commit()
        published.forget()
        db.session.remove()
        db.engine.dispose()


def _shift(back: timedelta) -> None:
    """Every vote's and voter's stamps ``back`` earlier (in Python: SQLite has no datetime
    arithmetic SQLAlchemy can write)."""
    from sqlalchemy import select

    from arena.extensions import db
    from arena.models import Vote, Voter

    for vote in db.session.scalars(select(Vote)):
        vote.created_at -= back
        vote.public_at = vote.public_at and vote.public_at - back
    for voter in db.session.scalars(select(Voter)):
        voter.created_at -= back
        voter.earned_at = voter.earned_at and voter.earned_at - back
    db.session.commit()


def _into_the_hour(hour: timedelta, after_id: int = 0) -> None:
    """The votes after the crowd's (the period's new voters), which the simulated clock ran
    one after another over hours, spread over the hour before the cut-off (order kept),
    their voters first seen at their first vote."""
    from sqlalchemy import func, select

    from arena.analysis import published
    from arena.extensions import db
    from arena.models import Vote, Voter

    cut = published.cutoff()
    recent = db.session.scalars(select(Vote).where(
        Vote.id > after_id, Vote.created_at > cut - timedelta(days=1)).order_by(Vote.id)).all()
    if not recent:
        return
    first, last = recent[0].created_at, recent[-1].created_at
    span = max((last - first).total_seconds(), 1.0)
    start = cut - hour + timedelta(seconds=30)
    for vote in recent:
        at = start + (vote.created_at - first) * ((hour.total_seconds() - 90) / span)
        vote.created_at = at
        vote.public_at = vote.public_at and at
    db.session.flush()
    for voter_id, seen in db.session.execute(
            select(Vote.voter_id, func.min(Vote.created_at)).where(
                Vote.id >= recent[0].id).group_by(Vote.voter_id)).all():
        voter = db.session.get(Voter, voter_id)
        voter.created_at = voter.earned_at = seen
    db.session.commit()


def _honest_hour(args, rng) -> None:
    """Another hour's honest newcomers (``--period`` votes), in the hour before the cut-off."""
    from flask import current_app
    from sqlalchemy import func, select

    from arena.analysis import published
    from arena.campaigns.demo import SIMULATED_STRENGTH, simulate_votes
    from arena.extensions import db
    from arena.models import Vote

    strengths = dict(SIMULATED_STRENGTH) | {name: s for name, _, s in MORE_MODELS}
    last = db.session.scalar(select(func.max(Vote.id))) or 0
    simulate_votes(args.period, rng, strengths=strengths)
    _into_the_hour(timedelta(seconds=float(current_app.config["PUBLISHED_PERIOD_S"])), last)
    published.forget()


def boards(source: Path, target: Path) -> dict:
    """The public boards after the timer's run on a copy of ``source``: {model: (rank, best,
    worst, rating, elo rank)}."""
    _copy(source, target)
    app = _app(target)
    done = app.test_cli_runner().invoke(args=["votes", "rollup"])
    assert done.exit_code == 0, (done.output, done.exception)
    with app.app_context():
        return _board()


def attack(args, folder: Path, base: Path, before: dict, shape: str, size: int) -> dict:
    from sqlalchemy import func, select

    from arena.analysis import published
    from arena.extensions import db
    from arena.models import Vote, Voter

    place = folder / f"{shape}-{size}"
    _copy(base, place)
    app = _app(place)
    started = time.perf_counter()
    target = args.target
    above = next(m for m, row in before.items() if row[0] == before[target][0] - 1)
    farm, period, votes, honest = [], 0, 0, 0
    per_hour = -(-size // args.hours)
    for hour in range(args.hours):
        with app.app_context():
            if hour:  # (an hour on: the hour before, and everything before it, a period back;
                # new honest voters in this one)
                _shift(timedelta(seconds=float(app.config["PUBLISHED_PERIOD_S"])))
                _honest_hour(args, np.random.default_rng([args.seed, 1000 + hour]))
            batch = range(hour * per_hour, min(size, (hour + 1) * per_hour))
            farm += _farm(args, batch, shape, above, np.random.default_rng([args.seed, size, hour]))
            published.forget()
            counted = _live()
            ordinary = Vote.is_validation.is_(False)
            recent = Vote.created_at >= published.cutoff() - timedelta(hours=1)
            period += db.session.scalar(select(func.count()).where(ordinary, recent))
            votes = db.session.scalar(select(func.count()).where(ordinary,
                                                                 Vote.voter_id.in_(farm)))
            honest += db.session.scalar(select(func.count(func.distinct(
                Vote.voter_id))).where(recent, Vote.voter_id.not_in(farm)))
            db.session.remove()
        done = app.test_cli_runner().invoke(args=["votes", "rollup"])
        assert done.exit_code == 0, done.output
    with app.app_context():
        after = _board()
        held = set(db.session.scalars(select(Voter.id).where(Voter.held_at.is_not(None))))
        waiting = set(db.session.scalars(select(Voter.id).where(Voter.review_id.is_not(None))))
    farm = set(farm)
    kept = all(before[m][1] <= after[m][0] <= before[m][2]
               and before[m][1] <= after[m][4] <= before[m][2] for m in before if m in after)
    shutil.rmtree(place, ignore_errors=True)
    return {
        "shape": shape, "size": size, "networks": -(-size // args.per_network),
        "votes": votes, "share": votes / max(period, 1), "before": before[target],
        "counted": counted.get(target), "after": after[target], "kept": kept,
        "moved": after[target][0] < before[target][0] or after[target][4] < before[target][4],
        "target": target,
        "farm_held": len(held & farm), "honest_held": len(held - farm),
        "farm_waiting": len(waiting & farm), "honest_waiting": len(waiting - farm),
        "honest_voters": honest, "seconds": time.perf_counter() - started,
        "hours": args.hours,
    }


def report(row: dict) -> None:
    b, c, a = row["before"], row["counted"], row["after"]
    hours = f" in {row['hours']} hourly batches" if row["hours"] > 1 else ""
    print(f"\n{row['shape']}, {row['size']} identities on {row['networks']} /24s x "
          f"{row['votes'] // max(row['size'], 1)} votes{hours} ({row['votes']:,d}, "
          f"{row['share']:.0%} of the period's votes; {row['seconds']:.0f} s)")
    print(f"  {row['target']}: Bradley-Terry rank {b[0]} ({b[1]}-{b[2]}) -> counted live "
          f"{c[0] if c else '-'} -> after the timer {a[0]} (rating {b[3]:.0f} -> {a[3]:.0f}); "
          f"Elo table rank {b[4]} -> counted live {c[2] if c else '-'} -> after the timer "
          f"{a[4]}")
    print(f"  every public rank in its published rank set after the timer: "
          f"{'yes' if row['kept'] else 'NO'}; held: farm {row['farm_held']} of {row['size']}, "
          f"honest {row['honest_held']} of {row['honest_voters']}; waiting on a cohort "
          f"review: farm {row['farm_waiting']}, honest {row['honest_waiting']}")


def _copy(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)


def _app(instance: Path):
    from arena import create_app

    os.environ["ARENA_INSTANCE_PATH"] = str(instance)
    return create_app()


def _board() -> dict[str, tuple]:
    """{model: (BT rank, rank set best, worst, rating, Elo table rank)} as the public sees."""
    from arena.analysis.leaderboard import elo_table, rank_models

    ranking = rank_models("preference", intervals="instant", public=True, include_idle=False)
    elo = {row.model: row.rank for row in elo_table("preference").rows}
    return {m.model: (m.rank, m.rank_best or m.rank, m.rank_worst or m.rank, m.rating,
                      elo.get(m.model)) for m in ranking.models}


def _live() -> dict[str, tuple]:
    """{model: (BT rank, rating, online Elo rank)} of every vote now (no screen, no timer)."""
    from arena.analysis.leaderboard import online_elo, rank_models

    ranking = rank_models("preference", intervals="instant", include_idle=False)
    elo = sorted(online_elo("preference").items(), key=lambda item: -item[1])
    place = {name: k for k, (name, _) in enumerate(elo, start=1)}
    return {m.model: (m.rank, m.rating, place.get(m.model)) for m in ranking.models}


def _print(title: str, board: dict) -> None:
    print(f"\n{title}")
    print(f"  {'model':12} {'rank':>4} {'set':>5} {'rating':>7} {'Elo rank':>9}")
    for model, (rank, best, worst, rating, elo) in sorted(board.items(),
                                                          key=lambda item: item[1][0]):
        print(f"  {model:12} {rank:>4} {best}-{worst:<3} {rating:7.1f} {elo or '-':>9}")


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


def _farm(args, identities: range, shape: str, above: str, rng) -> list[int]:
    """The farm's votes through the services, within the hour before the cut-off: its
    identities vote side by side, each on its own clock at a human pace."""
    from flask import current_app

    from arena.analysis import published
    from arena.campaigns.demo import SIMULATED_STRENGTH
    from arena.extensions import db
    from arena.infra.network import network_hash
    from arena.models import Task
    from arena.voting import matchmaking, tasks, voters, votes

    strength = dict(SIMULATED_STRENGTH) | {name: s for name, _, s in MORE_MODELS}
    hour = timedelta(seconds=float(current_app.config["PUBLISHED_PERIOD_S"]))
    first = published.cutoff() - hour + timedelta(seconds=30)
    spread = max(hour - timedelta(seconds=4 * args.votes + 60), timedelta(0))
    ids = []
    for k in identities:
        clock = [first + spread * (k - identities.start) / max(len(identities) - 1, 1)]
        network = network_hash(current_app.config["SECRET_KEY"],
                               f"198.51.{k // args.per_network}.7")
        voter, _ = voters.create_voter({}, network=network)
        voter.created_at = clock[0]
        db.session.commit()
        ids.append(voter.id)
        if args.earn_trust:
            _earn(voter, rng, clock[0] - timedelta(hours=21))
        aims = {"direct": ["target"], "omnipresent": ["above"], "both": ["target", "above"],
                "control": []}[shape]
        used = dict.fromkeys(aims, 0)
        budget = {aim: args.on_target // len(aims) or 1 for aim in aims}
        cast = 0
        while cast < args.votes:
            try:
                session = matchmaking.start_session(voter, rng, "preference")
            except matchmaking.NoTasksAvailable:
                break
            for task_id in [t.id for t in session.tasks]:
                task = db.session.get(Task, task_id)
                tasks.present([task], now=clock[0])
                left, right = task.left_image, task.right_image
                choice = _choice(task, left, right, strength, used, budget,
                                 (args.target, above),
                                 rng if shape == "control" or args.elsewhere == "crowd"
                                 else None)
                clock[0] += timedelta(milliseconds=int(rng.integers(1500, 4000)))
                votes.cast_vote(voter, task.id, choice, 1500, now=clock[0])
                cast += not task.comparison.is_validation
    return ids


def _choice(task, left, right, strength, used, budget, aims, crowd=None) -> str:
    """The farm's answer: gold right; its aims within their budgets; elsewhere the crowd's
    majority, or drawn as the crowd draws with ``crowd`` (a generator)."""
    comparison = task.comparison
    if comparison.is_validation:  # gold: right, as a working rule would
        return "left" if comparison.correct_image_id == left.id else "right"
    target, above = aims
    names = (left.model.name, right.model.name)
    if "target" in used and target in names and used["target"] < budget["target"]:
        used["target"] += 1
        return "left" if names[0] == target else "right"
    if ("above" in used and above in names and target not in names
            and used["above"] < budget["above"]):
        used["above"] += 1
        return "right" if names[0] == above else "left"
    if crowd is not None:  # as the crowd votes
        odds = strength.get(names[1], 0) - strength.get(names[0], 0)
        return "left" if crowd.random() < 1.0 / (1.0 + np.exp(odds)) else "right"
    return "left" if strength.get(names[0], 0) >= strength.get(names[1], 0) else "right"


def _earn(voter, rng, at) -> None:
    """A visit long before the attack with its gold answered right (trust's first half)."""
    from arena.extensions import db
    from arena.models import Task
    from arena.voting import matchmaking, tasks, votes

    for _ in range(4):
        session = matchmaking.start_session(voter, rng, "preference")
        for task_id in [t.id for t in session.tasks]:
            task = db.session.get(Task, task_id)
            tasks.present([task], now=at)
            at += timedelta(seconds=3)
            if task.comparison.is_validation:
                right = "left" if task.comparison.correct_image_id == task.left_image_id \
                    else "right"
                votes.cast_vote(voter, task.id, right, 2000, now=at)
                return
            votes.cast_vote(voter, task.id, "left", 2000, now=at)


if __name__ == "__main__":
    main()
