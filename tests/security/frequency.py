"""The frequency attack on gold pairs: tell them from ordinary pairs by how often they come.

Every voter together can count how many sessions each pair was put in
(``Comparison.issued``): the most a coalition of voters, or one person behind many of them,
could learn about it. A simulation from known truth (which pairs are gold) measures what
that count tells: shared by the smoke test in test_gold.py and the long run in
benchmarks/gold_frequency.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from flask import current_app
from scipy.stats import rankdata
from sqlalchemy import select

from arena.campaigns import campaigns
from arena.campaigns.demo import _simulated_vote, seed_shuffle_keys
from arena.extensions import db
from arena.models import KEYS, Comparison, GenModel, Task, utcnow
from arena.voting import matchmaking
from arena.voting.votes import ensure_ratings
from tests.factories import image_rows, new_voter

MODELS = 4
IMAGES = 4  # per model and prompt: 96 ordinary pairs per prompt


def build(n_prompts: int, rng: np.random.Generator, supply_rate: float | None = None, *,
          n_models: int = MODELS, images: int = IMAGES) -> int:
    """A published alignment campaign of ``n_models`` models (named model-0, model-1, ...)
    over ``n_prompts`` prompts, ``images`` per model and prompt, its first gold supply
    sized for ``VALIDATION_RATE`` (or for ``supply_rate``: a supply too small or too large
    for the rate voters meet); image rows without files (matchmaking and swapped gold never
    read pixels). Returns its id."""
    models = [GenModel(name=f"model-{k}") for k in range(n_models)]
    db.session.add_all(models)
    db.session.flush()
    ensure_ratings([m.id for m in models])
    image_rows("frequency", "simulation", [f"a scene number {i}" for i in range(n_prompts)],
               models, images)
    db.session.commit()
    campaign = campaigns.create_campaign("Frequency", "frequency", [m.name for m in models],
                                         criteria=["alignment"], images_per_model=images)
    rate = current_app.config["VALIDATION_RATE"]
    if supply_rate is not None:
        current_app.config["VALIDATION_RATE"] = supply_rate
    try:
        campaigns.publish(campaign, rng)
    finally:
        current_app.config["VALIDATION_RATE"] = rate
    seed_shuffle_keys(int(rng.integers(KEYS)))  # (one seed, one run)
    db.session.commit()
    return campaign.id


@dataclass
class Snapshot:
    sessions: int
    gold_rate: float  # share of the sessions that carried a gold pair
    pairs: int
    gold: int
    gold_mean: float  # sessions issued, on average
    regular_mean: float
    gold_max: int
    regular_max: int
    auc: float
    auc_band: tuple[float, float]
    lookup: float
    lookup_band: tuple[float, float]
    lift: float


def counts(campaign_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Sessions issued per pair of the campaign, and which pairs are gold."""
    rows = db.session.execute(select(Comparison.issued, Comparison.is_validation).where(
        Comparison.campaign_id == campaign_id)).all()
    return (np.array([r.issued for r in rows], dtype=float),
            np.array([bool(r.is_validation) for r in rows]))


def auc(issued: np.ndarray, gold: np.ndarray) -> float:
    """P(a gold pair's count > an ordinary pair's), ties counted half (Mann-Whitney): 0.5
    tells nothing; above, gold is served more; below, less."""
    ranks = rankdata(issued)
    n_gold, n_regular = int(gold.sum()), int((~gold).sum())
    return float((ranks[gold].sum() - n_gold * (n_gold + 1) / 2) / (n_gold * n_regular))


def lookup(issued: np.ndarray, gold: np.ndarray, rng: np.random.Generator,
           splits: int = 5) -> float:
    """Held-out balanced accuracy (the mean of the two classes' hit rates: 0.5 is a coin,
    whatever the share of gold) of the best rule on the exact count, learnt on half the
    pairs: "gold" for the counts where gold is more common than overall. It catches what
    the AUC misses, such as gold bunched at the middle counts. Mean of ``splits`` halvings."""
    scores = []
    for _ in range(splits):
        order = rng.permutation(len(issued))
        train, test = order[: len(order) // 2], order[len(order) // 2:]
        share = gold[train].mean()
        values, inverse = np.unique(issued[train], return_inverse=True)
        rich = set(values[np.bincount(inverse, weights=gold[train]) / np.bincount(inverse)
                          > share])
        said = np.array([v in rich for v in issued[test]])
        truth = gold[test]
        scores.append((said[truth].mean() + (~said[~truth]).mean()) / 2)
    return float(np.mean(scores))


def band(statistic, issued: np.ndarray, gold: np.ndarray, rng: np.random.Generator,
         draws: int, alpha: float = 1e-3) -> tuple[float, float]:
    """The range ``statistic`` stays in with probability 1 - ``alpha`` when the same number
    of pairs is called gold at random (permutations)."""
    null = [statistic(issued, rng.permutation(gold)) for _ in range(draws)]
    return float(np.quantile(null, alpha / 2)), float(np.quantile(null, 1 - alpha / 2))


def lift(issued: np.ndarray, gold: np.ndarray, top: float = 0.05) -> float:
    """Gold's share among the ``top`` most-served pairs (ties at the cut broken at random)
    over its share of all pairs: 1 is no better than picking at random."""
    order = np.lexsort((np.random.default_rng(0).random(len(issued)), -issued))
    cut = max(1, round(top * len(issued)))
    return float(gold[order[:cut]].mean() / gold.mean())


def snapshot(campaign_id: int, sessions: int, with_gold: int, rng: np.random.Generator,
             draws: int = 1000) -> Snapshot:
    issued, gold = counts(campaign_id)
    if not 0 < gold.sum() < len(gold):
        raise ValueError("the campaign needs gold and ordinary pairs (VALIDATION_RATE > 0)")

    def held_out(values, labels):
        return lookup(values, labels, rng, splits=1)
    return Snapshot(
        sessions=sessions, gold_rate=with_gold / max(1, sessions), pairs=len(issued),
        gold=int(gold.sum()), gold_mean=float(issued[gold].mean()),
        regular_mean=float(issued[~gold].mean()), gold_max=int(issued[gold].max()),
        regular_max=int(issued[~gold].max()), auc=auc(issued, gold),
        auc_band=band(auc, issued, gold, rng, draws), lookup=lookup(issued, gold, rng),
        # (the null of a mean of 5 halvings is narrower than one halving's: conservative)
        lookup_band=band(held_out, issued, gold, rng, draws // 4), lift=lift(issued, gold))


def simulate(campaign_id: int, n_sessions: int, every: int, rng: np.random.Generator,
             report=None) -> list[Snapshot]:
    """Voters answering ``n_sessions`` alignment sessions through the real services, as the
    demo's simulated voters do (captions confirmed after their reveal, a few seconds per
    choice on a simulated clock, gold answered right 90% of the time), each opening 1 to 12
    sessions (geometric, mean 3); after each gold answer the gold check runs, as after a
    response. A :func:`snapshot` every ``every`` sessions, passed to ``report``."""
    rows, sessions, with_gold = [], 0, 0
    clock = [utcnow() - timedelta(seconds=30 * n_sessions)]  # (ends before the real one)
    while sessions < n_sessions:
        voter = new_voter()
        for _ in range(min(12, int(rng.geometric(1 / 3)))):
            try:
                session = matchmaking.start_session(voter, rng, "alignment")
            except matchmaking.NoTasksAvailable:
                break
            sessions += 1
            with_gold += any(t.comparison.is_validation for t in session.tasks)
            for task_id in [t.id for t in session.tasks]:
                _simulated_vote(voter, db.session.get(Task, task_id), rng, clock, "en")
            if sessions % every == 0:
                rows.append(snapshot(campaign_id, sessions, with_gold, rng))
                if report:
                    report(rows[-1])
            if sessions >= n_sessions:
                break
    return rows
