"""How many votes a confident ranking needs, per allocation strategy: a campaign simulator.

    .venv/bin/python benchmarks/allocation.py [--models 4,12,30] [--bad 0,0.2] [--seeds 2]
        [--prompts 60] [--prompt-sd 0.3] [--check 300] [--max-votes 120000]
        [--strategies ...]

Each run is a fresh instance (SQLite in a scratch folder) holding one published alignment
campaign of ``--models`` models, one image per model and prompt, its swapped gold pairs made
at publishing. Simulated voters answer sessions through the real services (matchmaking, the
caption confirmed, the vote, the gold check), each opening 1 to 12 sessions. The truth:

* models' strengths spread as on a public leaderboard (normal quantiles, sd 0.45 log units:
  a few stand apart, most sit close to a neighbour), plus a model x prompt effect
  (``--prompt-sd``, 0.3) and a per-image one (sd 0.1);
* good voters choose by that truth and answer gold right 90% of the time; a ``--bad`` share
  of the voters are bad, a third each: random clickers, always-left, and too fast (flagged
  by pacing); their gold answers are a coin.

The target is the ranking of the population the campaign asks about: the Bradley-Terry fit of
the good voters' expected choices averaged over the campaign's prompts. Every ``--check``
votes the run ranks the models as the leaderboard does (Bradley-Terry, instant two-way
intervals) and, for the active and early-stopping strategies, refreshes the allocation as
production's timer does (arena.campaigns.allocation). It stops once Kendall's tau against the
target is at least 0.95 and each of the top three models is surely ahead of every model below
it (the leaderboard's rank set of one rank each: the intervals of the differences), and
prints the votes cast by then (gold and bad voters' included: what the campaign paid for),
whether each final interval covered the target, the ratio to balanced, and the AUC of the
sessions each pair was put in for telling gold from ordinary pairs (what every voter
together could count: tests/security/frequency.py), beside the band chance keeps it in.

Strategies: ``balanced`` (every comparison to its target, least-served first: today),
``balanced+stop`` (the same, but a model pair whose order is settled gets no more votes),
``active`` (the pairs adjacent in the current order and not settled, with exploration) and
``active+stop``. The smoke test is tests/web/test_allocation_benchmark.py.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import kendalltau, norm
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena import create_app
from arena.analysis.leaderboard import rank_models
from arena.campaigns import allocation
from arena.extensions import db
from arena.infra.instance import upgrade_schema
from arena.models import Campaign, Comparison, GenModel, Image, Task, utcnow
from arena.ranking.bradley_terry import ELO_SCALE, LOG10, bradley_terry
from arena.voting import matchmaking, tasks, votes
from benchmarks.harness import scratch_dir
from tests.factories import new_voter
from tests.security import frequency

STRATEGIES = ("balanced", "balanced+stop", "active", "active+stop")
IMAGE_SD = 0.1
KINDS = ("good", "random", "left", "fast")


def strengths(n: int) -> np.ndarray:
    """Leaderboard-like true strengths, best first: normal quantiles, sd 0.45 log units."""
    return 0.45 * norm.ppf((n - np.arange(n) - 0.5) / n)


@dataclass
class Run:
    strategy: str
    models: int
    bad: float
    seed: int
    votes: int | None  # cast when the ranking was first confident (None: never, by the cap)
    cast: int  # cast in all
    tau: float
    covered: float  # share of the final intervals covering the target
    gold_auc: float  # how well the sessions each pair was put in tell gold (0.5: not at all)
    gold_band: tuple[float, float]  # where the AUC of a random labelling stays (99.9%)
    seconds: float
    stopped: bool = False  # the campaign stopped itself (every order settled) before that


@dataclass
class World:
    """The truth of one run: each image's strength per prompt, and the target."""

    image_strength: dict[int, float]  # image id -> strength on its prompt
    model_index: dict[int, int]  # model id -> row of the target
    target: np.ndarray  # Elo scale, mean 1000, by model row


def build(n_models: int, n_prompts: int, prompt_sd: float, rng: np.random.Generator
          ) -> tuple[int, World]:
    """The published campaign (tests/security/frequency.py's, models named model-<row>) and
    its truth."""
    campaign_id = frequency.build(n_prompts, rng, n_models=n_models, images=1)
    index = {m.id: int(m.name.split("-")[1]) for m in db.session.scalars(select(GenModel))}
    truth = strengths(n_models)
    effect = rng.normal(0, prompt_sd, (n_models, n_prompts))
    prompts: dict[int, int] = {}
    strength = {}
    by_prompt = np.zeros((n_models, n_prompts))
    for image_id, model_id, prompt_id in db.session.execute(
            select(Image.id, Image.model_id, Image.prompt_id)).all():
        k, p = index[model_id], prompts.setdefault(prompt_id, len(prompts))
        strength[image_id] = truth[k] + effect[k, p] + rng.normal(0, IMAGE_SD)
        by_prompt[k, p] = strength[image_id]
    # the population value: good voters' expected choices, averaged over the prompts
    expected = expit(by_prompt[:, None, :] - by_prompt[None, :, :]).mean(axis=2)
    np.fill_diagonal(expected, 0)
    fit = bradley_terry(expected * 1000)
    target = 1000 + ELO_SCALE / LOG10 * (fit.log_strengths - fit.log_strengths.mean())
    return campaign_id, World(strength, index, target)


def _choose(kind: str, task: Task, world: World, rng) -> tuple[str, int]:
    """A voter's choice and response time."""
    left, right = task.left_image_id, task.right_image_id
    gold, correct = db.session.execute(
        select(Comparison.is_validation, Comparison.correct_image_id)
        .where(Comparison.id == task.comparison_id)).one()
    thinking = int(rng.integers(80, 300) if kind == "fast" else rng.integers(900, 6000))
    if kind == "left":
        return "left", thinking
    if kind == "random" or (gold and kind != "good"):
        return ("left" if rng.random() < 0.5 else "right"), thinking
    if gold:
        right_answer = "left" if correct == left else "right"
        wrong = "right" if right_answer == "left" else "left"
        return (right_answer if rng.random() < 0.9 else wrong), thinking
    gap = world.image_strength[left] - world.image_strength[right]
    return ("left" if rng.random() < expit(gap) else "right"), thinking


def answer(voter, task: Task, kind: str, world: World, rng, clock: list) -> None:
    """``voter`` of ``kind`` answers ``task`` through the services, on the simulated
    ``clock`` (the caption confirmed once revealed)."""
    tasks.present([task], now=clock[0])
    caption = tasks.caption_of(task)
    if caption is not None:
        clock[0] += timedelta(milliseconds=tasks.reveal_ms(caption) + 1500)
        tasks.confirm_read(voter, task.id, now=clock[0])
    choice, thinking = _choose(kind, task, world, rng)
    clock[0] += timedelta(milliseconds=thinking)
    votes.cast_vote(voter, task.id, choice, thinking, now=clock[0])


def judge(world: World) -> tuple[float, bool, float]:
    """Kendall's tau of the leaderboard's order against the target, whether each of the top
    three models is surely ahead of every model below it (its rank set, from the intervals
    of the differences, is one rank), and the share of intervals covering the target."""
    ranking = rank_models("alignment", intervals="instant", rounds=0, include_idle=False)
    rows = {int(r.model.split("-")[1]): r for r in ranking.models if r.rating is not None}
    # (models are named model-<row of the target>)
    if len(rows) < len(world.target):
        return 0.0, False, 0.0
    rating = np.array([rows[k].rating for k in range(len(world.target))])
    # (no interval yet, too few voters: nan, which separates and covers nothing)
    low = np.array([rows[k].ci_low for k in range(len(world.target))], dtype=float)
    high = np.array([rows[k].ci_high for k in range(len(world.target))], dtype=float)
    tau = float(kendalltau(rating, world.target).statistic)
    # the top three each surely ahead of every model below it: a rank set of one rank each
    top = sorted(rows.values(), key=lambda row: row.rank)[:3]
    separated = all(row.rank_best == row.rank_worst == row.rank for row in top)
    covered = float(np.mean((low <= world.target) & (world.target <= high)))
    return tau, separated, covered


def simulate(strategy: str, n_models: int, bad: float, seed: int, *, n_prompts: int = 60,
             prompt_sd: float = 0.3, check: int = 300, max_votes: int = 120_000,
             report=None) -> Run:
    """One campaign under ``strategy`` until its ranking is confident (or ``max_votes``)."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    app = create_app({"INSTANCE_PATH": str(scratch_dir("arena-allocation-")),
                      "SECRET_KEY": "bench", "PSEUDONYM_KEY": "bench",
                      "RATELIMIT_ENABLED": False, "REVEAL_WORD_MS": 0,
                      "ALLOCATION_BUDGET": 2 * check})
    with app.app_context():
        upgrade_schema()
        campaign_id, world = build(n_models, n_prompts, prompt_sd, rng)
        campaign = db.session.get(Campaign, campaign_id)
        campaign.allocation = "active" if strategy.startswith("active") else "balanced"
        campaign.early_stop = strategy.endswith("+stop")
        db.session.commit()
        refreshing = strategy != "balanced"
        if refreshing:
            allocation.refresh(campaign)
        clock = [utcnow() - timedelta(hours=2 + max_votes // 500)]
        cast, next_check, first, tau, covered = 0, check, None, 0.0, 0.0
        sessions = with_gold = 0
        stopped = False
        while cast < max_votes and first is None and not stopped:
            voter = new_voter()
            kind = "good" if rng.random() >= bad else KINDS[1 + rng.integers(3)]
            for k in range(min(12, int(rng.geometric(1 / 3)))):
                try:
                    session = matchmaking.start_session(voter, rng, "alignment")
                except matchmaking.NoTasksAvailable:  # (this voter has seen every pair,
                    stopped = k == 0  # or, for a new one, the campaign has stopped itself)
                    break
                sessions += 1
                with_gold += any(t.comparison.is_validation for t in session.tasks)
                for task_id in [t.id for t in session.tasks]:
                    answer(voter, db.session.get(Task, task_id), kind, world, rng, clock)
                    cast += 1
                clock[0] += timedelta(seconds=5)
                if cast >= next_check:
                    next_check += check
                    if refreshing:
                        allocation.refresh(campaign)
                    tau, separated, covered = judge(world)
                    if report:
                        report(strategy, cast, tau, separated)
                    if tau >= 0.95 and separated:
                        first = cast
                        break
        if first is None:
            tau, _, covered = judge(world)
        gold = frequency.snapshot(campaign_id, sessions, with_gold, rng, draws=200)
        return Run(strategy, n_models, bad, seed, first, cast, tau, covered, gold.auc,
                   gold.auc_band, time.perf_counter() - started, stopped)


def _gold(runs: list[Run]) -> str:
    """The runs' gold AUCs and the widest chance band among them."""
    low = min(r.gold_band[0] for r in runs)
    high = max(r.gold_band[1] for r in runs)
    return f"{np.mean([r.gold_auc for r in runs]):.2f} ({low:.2f}-{high:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="4,12,30")
    parser.add_argument("--bad", default="0,0.2")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=60)
    parser.add_argument("--prompt-sd", type=float, default=0.3,
                        help="sd of the model x prompt effects (log units)")
    parser.add_argument("--check", type=int, default=300)
    parser.add_argument("--max-votes", type=int, default=120_000)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args()
    chosen = args.strategies.split(",")
    if unknown := set(chosen) - set(STRATEGIES):
        parser.error(f"unknown strategies: {', '.join(sorted(unknown))}")
    print(f"{'models':>6} {'bad':>4} {'strategy':<14} {'votes (per seed)':>24} {'mean':>8} "
          f"{'x balanced':>10} {'tau':>5} {'covered':>8} {'gold AUC (chance)':>19} "
          f"{'time':>6}")
    for n_models in map(int, args.models.split(",")):
        for bad in map(float, args.bad.split(",")):
            base = None
            for strategy in chosen:
                runs = [simulate(strategy, n_models, bad, seed, n_prompts=args.prompts,
                                 prompt_sd=args.prompt_sd, check=args.check,
                                 max_votes=args.max_votes)
                        for seed in range(args.seeds)]
                needed = [r.votes if r.votes is not None else r.cast for r in runs]
                mean = float(np.mean(needed))
                base = mean if strategy == "balanced" else base
                shown = ", ".join(f"{v:,d}" + ("" if r.votes is not None
                                                else "*" if r.stopped else "+")
                                  for v, r in zip(needed, runs, strict=True))
                ratio = f"{mean / base:.2f}" if base else "-"
                print(f"{n_models:>6} {bad:>4.0%} {strategy:<14} {shown:>24} {mean:>8,.0f} "
                      f"{ratio:>10} {np.mean([r.tau for r in runs]):>5.2f} "
                      f"{np.mean([r.covered for r in runs]):>8.0%} "
                      f"{_gold(runs):>19} {sum(r.seconds for r in runs):>5.0f}s", flush=True)
    print("(+: not confident by --max-votes; *: the campaign stopped itself, every order "
          "settled, before the leaderboard's test was met; the mean then counts the votes cast)")


if __name__ == "__main__":
    main()
