"""Simulations from known truth: do the intervals Arena publishes cover it 95% of the time?

A :class:`Design` describes a study (how many models and votes, how pairs are allocated,
ties, careless voters, voters' and prompts' own tastes, post-stratification cells). It can
draw data sets (:meth:`Design.draw`) and it knows the number each interval estimates
(:meth:`Design.estimand`): the Bradley-Terry fit of the *expected* outcome matrix of the
population the votes come from -- voters, prompts and cells drawn from their distributions,
not the few the study happened to get. With voter effects or careless voters that is not the
generating strengths themselves (averaging over voters flattens them), which is exactly why
it is the right target: it is what infinitely many votes from this crowd would give.

:func:`coverage` runs replicates and reports, per method, the share of models whose interval
covered the truth, the mean width, the share of replicates where every interval of the table
covered at once, and how often the rank sets and tiers contradicted the true order.
``benchmarks/coverage.py`` prints the table (docs/measured.md); tests run small ones.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np
from scipy.special import expit, ndtr

from arena.config import Defaults
from arena.ranking import ranks
from arena.ranking.allocation import allocate
from arena.ranking.bootstrap import bootstrap
from arena.ranking.bradley_terry import ELO_SCALE, LOG10, bradley_terry
from arena.ranking.davidson import davidson, davidson_bootstrap
from arena.ranking.elo import EloParams, elo, elo_bootstrap
from arena.ranking.hype import (
    EXPOSURE_RANGE,
    GUESS,
    TARGET,
    Trials,
    WeightedUpDown,
    paper_threshold,
    score_infinity,
    score_time,
)
from arena.ranking.pairs import PairCounts
from arena.ranking.sandwich import instant_intervals
from arena.ranking.strata import (
    Calibration,
    held_share,
    held_shift,
    too_small,
    unrepresented,
)


@dataclass(frozen=True)
class Data:
    """One simulated study: per-vote outcomes with their voter, prompt and cell."""

    winners: np.ndarray
    losers: np.ndarray
    ties: np.ndarray
    voter: np.ndarray
    prompt: np.ndarray
    stratum: np.ndarray

    def counts(self, n_items: int, cluster: str, strata: bool) -> PairCounts:
        if cluster == "voter+prompt":
            return PairCounts.crossed(n_items, self.voter, self.prompt, self.winners,
                                      self.losers, np.ones(self.winners.size), self.ties)
        units = {"voter": self.voter, "prompt": self.prompt, "none": None}[cluster]
        if strata and units is not None and cluster == "prompt":
            units = units * (self.stratum.max() + 1) + self.stratum  # prompts split by cell
        if strata and units is None:
            units = np.arange(self.winners.size)
        return PairCounts.from_outcomes(self.winners, self.losers, n_items, ties=self.ties,
                                        units=units, strata=self.stratum if strata else None)


@dataclass(frozen=True)
class Design:
    """A simulated study. Strengths are evenly spaced over ``spread`` natural-log units
    (1.6 is about 280 Elo points from first to last)."""

    name: str
    items: int = 8
    votes: int = 2000
    voters: int = 200
    spread: float = 1.6
    # "balanced", "unbalanced" (the top models shown ~3x as often) or "active": ``rounds``
    # of votes where Arena's active allocation sends them (the estimand stays balanced's)
    allocation: str = "balanced"
    rounds: int = 10
    tie_rate: float = 0.0  # how often two equal models tie
    ties: str = "davidson"  # Davidson's model, or "threshold": a tie when the difference
    # the voter sees is within a threshold (Rao and Kupper), a model Arena does not fit
    levels: tuple[float, ...] = ()  # the strengths, best first (default: evenly spaced)
    careless: float = 0.0  # share of voters who answer at random
    heavy: tuple[float, ...] = ()  # shares of the votes cast by a few heavy voters
    taste: float = 0.0  # sd of each voter's own liking of each model (log units)
    prompts: int = 50
    prompt_effect: float = 0.0  # sd of how much each model suits each prompt
    cells: tuple[int, ...] = ()  # votes per post-stratification cell (replaces ``votes``)
    cell_shift: tuple[float, ...] = ()  # each cell scales the strengths by (1 + shift)
    targets: tuple[float, ...] = ()  # population share of each cell
    min_cell_votes: int = 0  # cells with fewer votes keep their sample share (as published)
    cluster: str = "voter+prompt"  # as Arena clusters by default
    population: int = 40_000  # draws of voters and prompts for the estimand

    @property
    def strengths(self) -> np.ndarray:
        if self.levels:
            return np.asarray(self.levels, float)
        return np.linspace(self.spread / 2, -self.spread / 2, self.items)

    @property
    def nu(self) -> float:
        return 2 * self.tie_rate / (1 - self.tie_rate) if self.tie_rate else 0.0

    def shares(self) -> np.ndarray:
        """Each cell's share of the population the estimand speaks for: its target (however
        Arena weighs it), or its sample share without targets."""
        sizes = np.asarray(self.cells or (self.votes,), float)
        if not self.targets:
            return sizes / sizes.sum()
        return np.asarray(self.targets, float) / sum(self.targets)

    def unrepresented(self) -> float:
        """The population share Arena cannot reweight (:func:`strata.unrepresented`)."""
        if not self.targets:
            return 0.0
        held = too_small(self.cells, self.cells, self.min_cell_votes, 0)
        return unrepresented(np.asarray(self.targets, float), np.asarray(self.cells), held)

    def calibration(self) -> Calibration | None:
        """The calibration Arena applies to this design's cells."""
        if not self.cells:
            return None
        held = too_small(self.cells, self.cells, self.min_cell_votes, 0)
        target = np.where(held, np.nan, np.asarray(self.targets, float))
        raking = Calibration(np.arange(len(self.cells))[:, None], (target,))
        weights = raking.weights(np.asarray(self.cells, float))
        return replace(raking, held=held_share(np.arange(len(self.cells)), self.cells,
                                               weights, np.asarray(self.targets, float)))

    def pair_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a, b, probability) of every unordered pair."""
        a, b = np.triu_indices(self.items, 1)
        if self.allocation in ("balanced", "active"):
            w = np.ones(a.size)
        else:
            exposure = np.exp(-np.arange(self.items) * np.log(3) / (self.items - 1))
            w = exposure[a] * exposure[b]
        return a, b, w / w.sum()

    def _outcome_probs(self, theta_a, theta_b):
        """P(a wins), P(tie) given (arrays of) strengths: Davidson's model, or Rao and
        Kupper's threshold (a tie ``tie_rate`` of the time between equals)."""
        from scipy.special import expit, logit

        if self.ties == "threshold":
            eta = logit((1 + self.tie_rate) / 2)
            p_a, p_b = expit(theta_a - theta_b - eta), expit(theta_b - theta_a - eta)
            return p_a, 1 - p_a - p_b
        pa, pb = np.exp(theta_a), np.exp(theta_b)
        tie = self.nu * np.sqrt(pa * pb)
        total = pa + pb + tie
        return pa / total, tie / total

    def draw(self, rng: np.random.Generator) -> Data:
        a_all, b_all, w = self.pair_weights()
        sizes = self.cells or (self.votes,)
        shifts = self.cell_shift or (0.0,) * len(sizes)
        out = {k: [] for k in ("w", "l", "t", "v", "p", "s")}
        voter_base = 0
        for s, (size, shift) in enumerate(zip(sizes, shifts, strict=True)):
            voters = max(1, round(self.voters * size / sum(sizes)))
            activity = rng.lognormal(0, 1, voters)  # some voters vote a lot more
            share = activity / activity.sum()
            if self.heavy:  # (the first voters cast these shares, the rest the remainder)
                rest = share[len(self.heavy):]
                share = np.concatenate([self.heavy, rest / rest.sum() * (1 - sum(self.heavy))])
            voter = rng.choice(voters, size=size, p=share)
            taste = self.taste * rng.normal(0, 1, (voters, self.items))
            careless = rng.random(voters) < self.careless
            prompt = rng.integers(0, self.prompts, size)
            suits = self.prompt_effect * rng.normal(0, 1, (self.prompts, self.items))
            theta = self.strengths * (1 + shift)

            def play(pair, rows, u, voter=voter, prompt=prompt, taste=taste, suits=suits,
                     careless=careless, theta=theta):
                """Winners, losers and ties of votes ``rows`` on ``pair``s (``u``: uniforms)."""
                a, b, v, p = a_all[pair], b_all[pair], voter[rows], prompt[rows]
                p_a, p_tie = self._outcome_probs(theta[a] + taste[v, a] + suits[p, a],
                                                 theta[b] + taste[v, b] + suits[p, b])
                p_a = np.where(careless[v], 0.5 * (1 - p_tie), p_a)
                a_wins, tie = u < p_a, (u >= p_a) & (u < p_a + p_tie)
                return np.where(a_wins | tie, a, b), np.where(a_wins | tie, b, a), tie

            if self.allocation == "active":
                winners, losers, tie = self._active(rng, play, voter, prompt)
            else:
                winners, losers, tie = play(rng.choice(a_all.size, size=size, p=w),
                                            slice(None), rng.random(size))
            out["w"].append(winners)
            out["l"].append(losers)
            out["t"].append(tie)
            out["v"].append(voter + voter_base)
            out["p"].append(prompt)
            out["s"].append(np.full(size, s))
            voter_base += voters
        cat = {k: np.concatenate(v) for k, v in out.items()}
        return Data(cat["w"], cat["l"], cat["t"], cat["v"], cat["p"], cat["s"])

    def _active(self, rng, play, voter, prompt):
        """Votes in ``rounds`` as a campaign under active allocation gets them: the first
        round balanced, each next one's pairs drawn in proportion to the votes
        :func:`arena.ranking.allocation.allocate` wants for them from the votes so far."""
        a_all, b_all = np.triu_indices(self.items, 1)
        cap = np.full((self.items, self.items), np.inf)
        np.fill_diagonal(cap, 0)
        bounds = np.linspace(0, voter.size, self.rounds + 1).astype(int)
        parts = []
        for start, stop in pairwise(bounds):
            w = np.ones(a_all.size)
            if parts:
                winners, losers, tie = (np.concatenate(c) for c in zip(*parts, strict=True))
                data = PairCounts.crossed(self.items, voter[:start], prompt[:start], winners,
                                          losers, np.ones(start), tie)
                wins = data.matrix()
                more = (allocate(data, cap, stop - start).wanted - wins - wins.T)[a_all, b_all]
                w = more.clip(0) if more.max() > 0 else w
            parts.append(play(rng.choice(a_all.size, size=stop - start, p=w / w.sum()),
                              slice(start, stop), rng.random(stop - start)))
        return tuple(np.concatenate(c) for c in zip(*parts, strict=True))

    def estimand(self, seed: int = 12345, model: str = "bt") -> np.ndarray:
        """The centred log-strengths infinitely many votes from this population would give:
        the fit of the expected half-win matrix (target-weighted over cells), or with
        ``model="davidson"`` Davidson's fit of the expected wins and ties."""
        rng = np.random.default_rng(seed)
        a, b, w = self.pair_weights()
        sizes = self.cells or (self.votes,)
        shifts = self.cell_shift or (0.0,) * len(sizes)
        expected = np.zeros((self.items, self.items))
        wins, ties = np.zeros_like(expected), np.zeros_like(expected)
        k = self.population
        for share, shift in zip(self.shares(), shifts, strict=True):
            theta = self.strengths * (1 + shift)
            taste = self.taste * rng.normal(0, 1, (k, 2))
            suits = self.prompt_effect * rng.normal(0, 1, (k, 2))
            careless = rng.random(k) < self.careless
            for pair in range(a.size):
                i, j = a[pair], b[pair]
                p_a, p_tie = self._outcome_probs(theta[i] + taste[:, 0] + suits[:, 0],
                                                 theta[j] + taste[:, 1] + suits[:, 1])
                p_a = np.where(careless, 0.5 * (1 - p_tie), p_a)
                score = float(np.mean(p_a + 0.5 * p_tie))
                expected[i, j] += share * w[pair] * score
                expected[j, i] += share * w[pair] * (1 - score)
                tie = float(np.mean(p_tie))
                wins[i, j] += share * w[pair] * (score - tie / 2)
                wins[j, i] += share * w[pair] * (1 - score - tie / 2)
                ties[i, j] += share * w[pair] * tie
                ties[j, i] += share * w[pair] * tie
        if model == "davidson":
            fitted = davidson(wins * 1e6, ties * 1e6).log_strengths
            return fitted - fitted.mean()
        return bradley_terry(expected * 1e6, tol=1e-12).log_strengths


METHODS = ("bootstrap", "instant")
# The naive interval, for comparison: the (weighted) win matrix resampled as if
# its cells were independent decisive votes -- no voters, ties as two half wins, weights as
# counts.
OLD = "old bootstrap"
# The sandwich with the normal's quantiles, as Arena gave it before it counted effective units.
NORMAL = "instant normal"


@dataclass
class Coverage:
    """Per method: ``covered`` (share of model intervals covering the truth), ``width``
    (mean width, Elo points), ``all_covered`` (share of replicates with every interval
    covering), ``rank_sets`` (share of replicates where every model's true rank lies in its
    rank set), ``tier_errors`` (share of replicates where a tier puts a truly worse model
    above a better one)."""

    design: str
    replicates: int
    covered: dict[str, float]
    covered_se: dict[str, float]  # Monte Carlo standard error (over replicates)
    width: dict[str, float]
    all_covered: dict[str, float]
    rank_sets: dict[str, float]
    tier_errors: dict[str, float]  # a wrong "surely ahead" call
    tier_order: dict[str, float]  # a truly worse model in a better tier
    withheld: dict[str, float]  # studies where no interval is shown (the rest: among shown)


ELO = "elo"
DAVIDSON = "davidson"
ELO_PARAMS = EloParams(k=4.0)


def elo_estimand(design: Design, draws: int = 1000, seed: int = 54321) -> np.ndarray:
    """What Elo's intervals estimate: the mean, over studies of this design with their votes
    in random order, of the online Elo (K = 4), centred."""
    rng = np.random.default_rng(seed)
    total = np.zeros(design.items)
    for _ in range(draws):
        data = design.draw(rng)
        order = rng.permutation(data.winners.size)
        total += elo(data.winners[order], data.losers[order], design.items,
                     ties=data.ties[order], params=ELO_PARAMS)
    mean = total / draws
    return mean - mean.mean()


def _interval(method, design, raw, data, fit, calibration, rounds, rng):
    """(low, high, rank sets) on the centred rating scale for one method and study."""
    resample = "vote" if design.cluster == "none" else "unit"
    if method == OLD:
        result = bootstrap(PairCounts.from_matrix(data.weighted_matrix(calibration)),
                           rounds=rounds, resample="vote", rng=rng, fit=fit)
    elif method == "bootstrap":  # (as the leaderboard shows them)
        result = bootstrap(data, rounds=rounds, resample=resample, calibration=calibration,
                           rng=rng, fit=fit, few_units=True)
    elif method in ("instant", NORMAL):  # (the first as the leaderboard shows them)
        result = instant_intervals(data, fit, resample=resample, calibration=calibration,
                                   rng=rng, few_units=method == "instant")
    elif method == ELO:  # (clustered as Arena does: two ways by default)
        units = {"prompt": raw.prompt, "none": None, "voter": raw.voter}.get(
            design.cluster, np.column_stack([raw.voter, raw.prompt]))
        boot = elo_bootstrap(raw.winners, raw.losers, design.items, ties=raw.ties,
                             units=units, rounds=rounds, params=ELO_PARAMS, rng=rng)
        sets = ranks.from_normal(boot.mean, boot.covariance, rng=rng)
        return boot.low - ELO_PARAMS.initial, boot.high - ELO_PARAMS.initial, sets
    else:  # Davidson (two ways as the counts are: by voter and prompt by default)
        boot = davidson_bootstrap(data, rounds=rounds, resample=resample, rng=rng)
        point = davidson(*_split(data)).log_strengths
        return boot.low - 1000.0, boot.high - 1000.0, ranks.from_samples(point, boot.samples)
    return result.rating_low - 1000.0, result.rating_high - 1000.0, result.ranks


def _split(data: PairCounts):
    n = data.n_items
    wins, ties = np.zeros((n, n)), np.zeros((n, n))
    np.add.at(wins, (data.a, data.b), data.ab)
    np.add.at(wins, (data.b, data.a), data.ba)
    np.add.at(ties, (data.a, data.b), data.tie)
    return wins, ties + ties.T


def coverage(design: Design, replicates: int = 200, rounds: int = 500,
             methods=METHODS, seed: int = 0, progress=None, elo_draws: int = 1000
             ) -> Coverage:
    """Simulate ``replicates`` studies of ``design`` and check each method's intervals
    (Bradley-Terry's and Davidson's against :meth:`Design.estimand`, each its own model's
    fit of what the population would vote; Elo's against :func:`elo_estimand`, averaged
    over ``elo_draws`` studies)."""
    truths = {}
    for method in methods:
        if method == ELO:
            centred = elo_estimand(design, draws=elo_draws)
            truths[method] = (centred, centred)
        elif method == DAVIDSON:  # (the generating strengths when nothing else varies)
            theta = design.estimand(model="davidson")
            truths[method] = (theta, ELO_SCALE * theta / LOG10)
        else:
            theta = design.estimand() if "bt" not in truths else truths["bt"][0]
            truths["bt"] = (theta, ELO_SCALE * theta / LOG10)
            truths[method] = truths["bt"]
    calibration = design.calibration()
    rng = np.random.default_rng(seed)
    tallies = {m: {"covered": 0, "width": 0.0, "all": 0, "ranks": 0, "tiers": 0,
                   "tier order": 0, "withheld": 0, "shares": []} for m in methods}
    for _ in range(replicates):
        raw = design.draw(rng)
        data = raw.counts(design.items, design.cluster, bool(design.cells))
        fit = bradley_terry(data.weighted_matrix(calibration))
        for method in methods:
            if method in SHOWN and _withheld(design, data):  # (as the leaderboard does)
                tallies[method]["withheld"] += 1
                continue
            low, high, sets = _interval(method, design, raw, data, fit, calibration, rounds,
                                        rng)
            if method in SHOWN and _shifted(calibration, data, fit, low, high):
                tallies[method]["withheld"] += 1
                continue
            order_truth, truth = truths[method]
            true_rank = np.empty(design.items, dtype=int)
            true_rank[np.argsort(-order_truth, kind="stable")] = np.arange(1, design.items + 1)
            hit = (low <= truth) & (truth <= high)
            t = tallies[method]
            t["covered"] += int(hit.sum())
            t["shares"].append(float(hit.mean()))
            t["width"] += float((high - low).mean())
            t["all"] += bool(hit.all())
            t["ranks"] += bool(np.all((sets.best <= true_rank) & (true_rank <= sets.worst)))
            t["tiers"] += bool(np.any(sets.ahead & (order_truth[:, None] < order_truth[None, :])))
            t["tier order"] += bool(np.any((sets.tier[:, None] < sets.tier[None, :])
                                           & (order_truth[:, None] < order_truth[None, :])))
        if progress is not None:
            progress(1)
    shown = {m: replicates - t["withheld"] for m, t in tallies.items()}

    def share(key, per=1):
        return {m: t[key] / (shown[m] * per) if shown[m] else float("nan")
                for m, t in tallies.items()}

    return Coverage(
        design.name, replicates, covered=share("covered", design.items),
        covered_se={m: float(np.std(t["shares"], ddof=1) / np.sqrt(len(t["shares"])))
                    if len(t["shares"]) > 1 else float("nan") for m, t in tallies.items()},
        width=share("width"), all_covered=share("all"), rank_sets=share("ranks"),
        tier_errors=share("tiers"), tier_order=share("tier order"),
        withheld={m: t["withheld"] / replicates for m, t in tallies.items()})


# The methods the leaderboard and the API show (bootstrap and instant): they show none where
# a few voters cast most votes (arena.analysis.leaderboard._concentrated).
SHOWN = ("bootstrap", "instant")


def _withheld(design: Design, data: PairCounts, least: int = 20) -> bool:
    """Whether Arena shows no interval for this study: many voters worth fewer than
    ``least`` of equal size, or a reweighting refused (more of the population unrepresented
    than ``POSTSTRAT_MAX_UNREPRESENTED``)."""
    if design.cells:
        return design.unrepresented() > Defaults.POSTSTRAT_MAX_UNREPRESENTED
    if design.cluster not in ("voter", "voter+prompt"):
        return False
    voters = data.way(0) if data.two_way else data
    return voters.n_units >= least and voters.effective_units() < least


def _shifted(calibration, data: PairCounts, fit, low, high) -> bool:
    """Whether Arena refuses these intervals: what the groups a reweighting leaves off their
    targets could move a rating passes ``POSTSTRAT_MAX_SHIFT`` of its half-width
    (arena.analysis.leaderboard._held)."""
    if calibration is None or calibration.held <= 0:
        return False
    shift = ELO_SCALE / LOG10 * held_shift(data.weighted_matrix(calibration),
                                           fit.log_strengths, calibration.held)
    return bool(np.any(shift > Defaults.POSTSTRAT_MAX_SHIFT * (high - low) / 2))


def leaderboard(n: int, seed: int = 42) -> tuple[float, ...]:
    """Strengths as a public leaderboard spreads them, best first: drawn from a normal of sd
    0.45 log units (78 Elo points), so a few models stand apart and most sit within a few
    points of a neighbour."""
    return tuple(sorted(np.random.default_rng(seed).normal(0, 0.45, n), reverse=True))


def designs() -> list[Design]:
    """The coverage harness's designs (benchmarks/coverage.py runs them all)."""
    base = Design("balanced, 2k votes")
    strata = replace(base, name="post-stratified, cells 3000/600/30, all reweighted", items=5,
                     cells=(3000, 600, 30), cell_shift=(0.0, 0.5, -0.5),
                     targets=(0.5, 0.3, 0.2), voters=600, cluster="none")
    return [
        base,
        replace(base, name="balanced, 20k votes", votes=20_000, voters=2_000),
        replace(base, name="unbalanced, 2k votes", allocation="unbalanced"),
        replace(base, name="unbalanced, 20k votes", allocation="unbalanced", votes=20_000,
                voters=2_000),
        replace(base, name="40% ties, 2k votes", tie_rate=0.4),
        replace(base, name="40% ties, 20k votes", tie_rate=0.4, votes=20_000, voters=2_000),
        replace(base, name="40% ties, prompt effects (60 prompts), 2k votes", tie_rate=0.4,
                prompt_effect=0.6, prompts=60),
        replace(base, name="40% threshold ties, 2k votes", tie_rate=0.4, ties="threshold"),
        replace(base, name="40% threshold ties, 20k votes", tie_rate=0.4, ties="threshold",
                votes=20_000, voters=2_000),
        *[replace(base, name=f"{n} models, leaderboard spread, {v // 1000}k votes", items=n,
                  levels=leaderboard(n), votes=v, voters=v // 10, prompt_effect=0.3,
                  taste=0.3) for n, v in ((15, 5_000), (30, 20_000))],
        replace(base, name="careless voters (20%) + tastes", careless=0.2, taste=0.5),
        replace(base, name="prompt effects, clustered by prompt", prompt_effect=0.6,
                prompts=40, cluster="prompt"),
        replace(base, name="prompt effects (60 prompts), 2k votes", prompt_effect=0.6,
                prompts=60),
        replace(base, name="prompt effects (60 prompts), 20k votes", prompt_effect=0.6,
                prompts=60, votes=20_000, voters=2_000),
        replace(base, name="3 heavy voters (20% each), 15% careless, tastes, 2k votes",
                heavy=(0.2, 0.2, 0.2), careless=0.15, taste=0.5),
        replace(base, name="3 heavy voters (20% each), 15% careless, tastes, 20k votes",
                heavy=(0.2, 0.2, 0.2), careless=0.15, taste=0.5, votes=20_000, voters=2_000),
        strata,
        replace(strata, name="post-stratified, cells 3000/600/30 (20%) as published",
                min_cell_votes=100),
        replace(strata, name="post-stratified, cells 3000/600/30 (3%) as published",
                targets=(0.6, 0.37, 0.03), min_cell_votes=100),
        replace(strata, name="post-stratified, cells 3000/600/300", cells=(3000, 600, 300)),
        # a group of 4.5% of the population, too small to reweight, that votes the other way
        *(replace(strata, name=f"post-stratified, a 4.5% group held, {size // 1000}k votes",
                  cells=(int(size * 0.7), int(size * 0.3) - 30, 30), targets=(0.6, 0.355, 0.045),
                  cell_shift=(0.0, 0.5, -2.0), min_cell_votes=100)
          for size in (2_000, 6_000, 20_000)),
        # active allocation decided every 2,000 votes (as the timer does with the default
        # ALLOCATION_BUDGET), and far more often
        replace(base, name="active allocation, 20k votes", allocation="active", votes=20_000,
                voters=2_000),
        replace(base, name="active allocation, 15 models, leaderboard spread, prompt effects"
                " + tastes, 20k votes", allocation="active", items=15, levels=leaderboard(15),
                votes=20_000, voters=2_000, prompt_effect=0.3, taste=0.3),
        replace(base, name="active allocation decided every 200 votes, 2k votes",
                allocation="active"),
    ]


# --- HYPE ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HypeDesign:
    """A simulated HYPE study of one model. HYPE-infinity: an evaluator e is wrong about
    image i with probability expit(mu + u_e + v_i) (people and images differ; half the
    images real); each evaluator judges ``trials`` images drawn from a pool of ``images``.
    HYPE-time: evaluator e's 75% threshold is ``threshold_ms`` x exp(N(0, evaluator_sd)),
    with a psychometric function P(right | t) = GUESS + (1 - GUESS - lapse) F(t) of the
    ``curve`` family (:data:`CURVES`; "mixed": each evaluator one of them at random), a
    slope of ``slope`` x exp(N(0, slope_sd)) and a lapse uniform in [``lapse``,
    ``lapse_high``], run through the weighted staircase for ``blocks`` x ``block_trials``
    trials at 60 Hz."""

    name: str
    mode: str = "infinity"
    evaluators: int = 20
    images: int = 100
    trials: int = 100
    deception: float = 0.3  # population share of wrong answers
    evaluator_sd: float = 0.5
    image_sd: float = 1.0
    threshold_ms: float = 300.0
    slope: float = 4.0
    lapse: float = 0.02
    blocks: int = 3
    block_trials: int = 150
    curve: str = "log-logistic"
    slope_sd: float = 0.0
    lapse_high: float | None = None

    def _mu(self) -> float:
        """The logit offset whose population mean error rate is ``deception``."""
        from scipy.optimize import brentq
        from scipy.special import expit

        z = np.random.default_rng(7).normal(0, 1, (2, 200_000))
        noise = self.evaluator_sd * z[0] + self.image_sd * z[1]
        return brentq(lambda mu: expit(mu + noise).mean() - self.deception, -10, 10)

    def estimand(self) -> float:
        """Infinity: the population error rate (%). Time: the population mean threshold
        (ms), held within the staircase's range as the fit holds each evaluator's."""
        if self.mode == "infinity":
            return 100 * self.deception
        z = np.random.default_rng(11).normal(0, 1, 400_000)
        return float(np.clip(self.threshold_ms * np.exp(self.evaluator_sd * z),
                             *EXPOSURE_RANGE).mean())

    def draw(self, rng: np.random.Generator) -> Trials:
        if self.mode == "infinity":
            return self._draw_infinity(rng)
        return self._draw_time(rng)

    def _draw_infinity(self, rng) -> Trials:
        from scipy.special import expit

        mu = self._mu()
        u = self.evaluator_sd * rng.normal(0, 1, self.evaluators)
        v = self.image_sd * rng.normal(0, 1, self.images)
        real = np.arange(self.images) % 2 == 0
        rows = {k: [] for k in ("e", "img", "real", "judged")}
        for e in range(self.evaluators):
            shown = rng.choice(self.images, size=min(self.trials, self.images), replace=False)
            wrong = rng.random(shown.size) < expit(mu + u[e] + v[shown])
            rows["e"].append(np.full(shown.size, f"e{e}"))
            rows["img"].append(shown)
            rows["real"].append(real[shown])
            rows["judged"].append(real[shown] ^ wrong)
        real_col = np.concatenate(rows["real"])
        return Trials(np.concatenate(rows["e"]), np.where(real_col, "", "M"), real_col,
                      np.concatenate(rows["judged"]), image=np.concatenate(rows["img"]))

    def _draw_time(self, rng) -> Trials:

        rule = WeightedUpDown()
        frame = 1000 / 60
        rows = {k: [] for k in ("e", "real", "judged", "t", "block")}
        families = list(CURVES) if self.curve == "mixed" else [self.curve]
        for e in range(self.evaluators):
            threshold = self.threshold_ms * np.exp(self.evaluator_sd * rng.normal())
            slope = self.slope * np.exp(self.slope_sd * rng.normal())
            lapse = rng.uniform(self.lapse, self.lapse_high or self.lapse)
            curve = CURVES[families[rng.integers(len(families))]](
                threshold, slope, (TARGET - GUESS) / (1 - GUESS - lapse))
            for b in range(1, self.blocks + 1):
                state = rule.start()
                for _ in range(self.block_trials):
                    shown = max(1, np.floor(state.exposure_ms / frame + 0.5)) * frame
                    p = GUESS + (1 - GUESS - lapse) * curve(shown)
                    right = rng.random() < p
                    real = rng.random() < 0.5
                    rows["e"].append(f"e{e}")
                    rows["real"].append(real)
                    rows["judged"].append(real == right)
                    rows["t"].append(shown)
                    rows["block"].append(b)
                    state = rule.update(state, right)
        real = np.array(rows["real"])
        return Trials(np.array(rows["e"]), np.where(real, "", "M"), real,
                      np.array(rows["judged"]), np.array(rows["t"]), np.array(rows["block"]))


def _log_logistic(threshold: float, slope: float, level: float):
    """Logistic in log exposure (the family Arena fits), at ``level`` at ``threshold``."""
    from scipy.special import expit, logit

    log_mid = np.log(threshold) - logit(level) / slope
    return lambda t: expit(slope * (np.log(t) - log_mid))


def _weibull(threshold: float, slope: float, level: float):
    """Weibull (Gumbel in log exposure), as steep at its median as the log-logistic of
    ``slope`` (shape 0.72 x slope)."""
    shape = 0.72 * slope
    scale = threshold / (-np.log1p(-level)) ** (1 / shape)
    return lambda t: 1 - np.exp(-((t / scale) ** shape))


def _logistic(threshold: float, slope: float, level: float):
    """Logistic in linear exposure, as steep at the threshold as the log-logistic of
    ``slope`` (width threshold / slope)."""
    from scipy.special import expit, logit

    width = threshold / slope
    mid = threshold - width * logit(level)
    return lambda t: expit((t - mid) / width)


# psychometric families F(t) in (0, 1), each built to reach ``level`` at ``threshold``
CURVES = {"log-logistic": _log_logistic, "weibull": _weibull, "logistic": _logistic}


@dataclass
class HypeCoverage:
    design: str
    replicates: int
    estimand: float
    covered: dict[str, float]
    width: dict[str, float]
    bias: dict[str, float]  # mean estimate / estimand - 1


def hype_coverage(design: HypeDesign, replicates: int = 200, rounds: int = 2000,
                  seed: int = 0, progress=None) -> HypeCoverage:
    """Simulate ``replicates`` studies; for HYPE-infinity compare the two-way bootstrap with
    resampling evaluators only, for HYPE-time Arena's threshold with the paper's figure
    (whose interval is the same bootstrap over evaluators of its per-evaluator values)."""
    truth = design.estimand()
    rng = np.random.default_rng(seed)
    keys = ("two-way", "evaluators only") if design.mode == "infinity" else ("threshold", "paper")
    hits = dict.fromkeys(keys, 0)
    width = dict.fromkeys(keys, 0.0)
    total = dict.fromkeys(keys, 0.0)
    for _ in range(replicates):
        trials = design.draw(rng)
        if design.mode == "infinity":
            results = {"two-way": score_infinity(trials, rounds=rounds, rng=rng)[0][0],
                       "evaluators only": score_infinity(replace(trials, image=None),
                                                         rounds=rounds, rng=rng)[0][0]}
            estimates = {k: (r.score, r.ci_low, r.ci_high) for k, r in results.items()}
        else:
            score, _ = score_time(trials, rounds=rounds, rng=rng)
            s = score[0]
            paper = _paper_per_evaluator(trials)
            boot = paper[rng.integers(0, paper.size, (rounds, paper.size))].mean(axis=1)
            estimates = {"threshold": (s.score, s.ci_low, s.ci_high),
                         "paper": (s.paper_score, *np.percentile(boot, [2.5, 97.5]))}
        for key, (estimate, low, high) in estimates.items():
            hits[key] += low <= truth <= high
            width[key] += high - low
            total[key] += estimate
        if progress is not None:
            progress(1)
    n = replicates
    return HypeCoverage(design.name, n, truth, {k: hits[k] / n for k in keys},
                        {k: width[k] / n for k in keys},
                        {k: total[k] / n / truth - 1 for k in keys})


def _paper_per_evaluator(trials: Trials) -> np.ndarray:
    return np.array([paper_threshold(trials.exposure_ms[trials.evaluator == e],
                                     trials.block[trials.evaluator == e])
                     for e in dict.fromkeys(trials.evaluator.tolist())])


def hype_designs() -> list[HypeDesign]:
    infinity = HypeDesign("HYPE-inf, 20 evaluators x 100 images")
    time = HypeDesign("HYPE-time, 300 ms, 20 evaluators", mode="time", evaluator_sd=0.2)
    # evaluators whose curves are not one family: log-logistic, Weibull or logistic in linear
    # time, slopes varying by 30%, lapses from 2% to 5%
    mixed = replace(time, curve="mixed", slope_sd=0.3, lapse=0.02, lapse_high=0.05)
    return [
        infinity,
        replace(infinity, name="HYPE-inf, 60 evaluators x 100 images", evaluators=60),
        replace(infinity, name="HYPE-inf, 20 evaluators x 2,000 images", images=2000),
        replace(infinity, name="HYPE-inf, 60 evaluators x 2,000 images", evaluators=60,
                images=2000),
        *[replace(time, name=f"HYPE-time, {t} ms, 20 evaluators", threshold_ms=t)
          for t in (150, 300, 500, 700)],
        replace(time, name="HYPE-time, 300 ms, 60 evaluators", evaluators=60),
        *[replace(time, name=f"HYPE-time bias, {t} ms for all, 60 evaluators", threshold_ms=t,
                  evaluator_sd=0.0, evaluators=60) for t in (150, 300, 500, 700)],
        *[replace(mixed, name=f"HYPE-time, mixed curves, {t} ms, 20 evaluators",
                  threshold_ms=t) for t in (150, 300, 500, 700)],
        replace(mixed, name="HYPE-time, mixed curves, 300 ms, 60 evaluators", evaluators=60),
        *[replace(mixed, name=f"HYPE-time bias, {curve}, {t} ms for all, 60 evaluators",
                  curve=curve, threshold_ms=t, evaluator_sd=0.0, evaluators=60)
          for curve in CURVES for t in (150, 300, 500, 700)],
    ]


# --- a farm ---------------------------------------------------------------------------------


def farm_study(seed: int, farm: int = 30, farm_votes: int = 60, honest: int = 600,
           votes: int = 20_000, taste: float = 0.5):
    """A farm among an honest crowd (benchmarks/favouritism.py): 8 models 280 Elo points
    apart first to last; honest voters with tastes and unequal activity; ``farm``
    identities voting for the weakest model whenever it is shown, at random otherwise.
    Returns (data, the farm's unit indices, the weakest model)."""
    rng = np.random.default_rng(seed)
    n, target = 8, 7
    theta = np.linspace(0.8, -0.8, n)
    activity = rng.lognormal(0, 1, honest)
    voter = rng.choice(honest, size=votes, p=activity / activity.sum())
    tastes = taste * rng.normal(0, 1, (honest, n))
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    p = 1 / (1 + np.exp(-(theta[a] + tastes[voter, a] - theta[b] - tastes[voter, b])))
    won = rng.random(votes) < p
    winners, losers = [np.where(won, a, b)], [np.where(won, b, a)]
    units = [voter]
    for k in range(farm):
        fa = rng.integers(0, n, farm_votes)
        fb = (fa + rng.integers(1, n, farm_votes)) % n
        pick_a = np.where(fa == target, True, np.where(fb == target, False,
                                                      rng.random(farm_votes) < 0.5))
        winners.append(np.where(pick_a, fa, fb))
        losers.append(np.where(pick_a, fb, fa))
        units.append(np.full(farm_votes, honest + k))
    data = PairCounts.from_outcomes(np.concatenate(winners), np.concatenate(losers), n,
                                    units=np.concatenate(units))
    # (units are numbered in label order: the farm's, labelled last, are the last ones)
    return data, np.arange(data.n_units - farm, data.n_units), target


def networks(n_units: int, farm: np.ndarray, seed: int, shared: int = 10,
             sizes: tuple[int, int] = (10, 40), farm_networks: int = 1,
             hide: bool = False) -> np.ndarray:
    """Each unit's network (benchmarks/favouritism.py): ``shared`` networks of ``sizes``
    honest voters each (a university, a carrier's NAT), every other honest voter alone on
    theirs; the farm split over ``farm_networks`` networks of its own, or with ``hide``
    inside the shared ones (one each, in turn)."""
    rng = np.random.default_rng(seed + 7919)
    group = np.arange(n_units) + shared + farm_networks  # (alone: a network of one)
    honest = np.setdiff1d(np.arange(n_units), farm)
    members = rng.permutation(honest)
    start = 0
    for g in range(shared):
        size = int(rng.integers(sizes[0], sizes[1] + 1))
        group[members[start:start + size]] = g
        start += size
    for k, unit in enumerate(farm):
        group[unit] = (k % max(shared, 1)) if hide else shared + k % farm_networks
    return group


# --- cohorts of new voters --------------------------------------------------------------


@dataclass(frozen=True)
class CohortStudy:
    """A crowd (``voters`` of them, the last ``cohort`` share new) voting ``votes`` times on
    ``models`` models evenly spread over ``spread`` log units, 24 prompts: tastes of their own
    (``taste`` sd per model), prompt effects (``prompt_sd`` per model and prompt), unequal
    activity (``activity_sd`` of a lognormal, or ``zipf``); the new voters may be served
    ``cohort_prompts`` of the prompts or pairs among ``cohort_models`` only, or be
    ``cohort_heavy`` times as active (benchmarks/cohorts.py, tests/unit/test_cohorts.py).
    A farm among the new voters: ``farm`` identities of ``farm_votes`` votes, ``on_target``
    of them on the weakest model's pairs for it (or, ``omnipresent``, on its upper
    neighbour's pairs against it: the neighbour down without the target; ``both``: half of
    each), the rest with the crowd's majority (``elsewhere_crowd``: drawn as the crowd's
    strengths draw)."""

    models: int = 8
    voters: int = 600
    votes: int = 20_000
    prompts: int = 24
    taste: float = 0.5
    prompt_sd: float = 0.3
    activity_sd: float = 1.0
    zipf: bool = False
    cohort: float = 0.1
    cohort_prompts: float = 1.0
    cohort_models: tuple[int, ...] = ()
    cohort_heavy: float = 1.0
    farm: int = 0
    farm_votes: int = 14
    on_target: int = 4
    omnipresent: bool = False
    both: bool = False
    elsewhere_crowd: bool = False
    spread: float = 1.6

    def draw(self, seed: int):
        """(two-way data, the new voters' mask, the true order's adjacent gaps, the farm's
        mask), voters numbered as the data's first way."""
        rng = np.random.default_rng(seed)
        n = self.models
        theta = np.linspace(self.spread / 2, -self.spread / 2, n)
        activity = (1.0 / (1 + rng.permutation(self.voters)) if self.zipf
                    else rng.lognormal(0, self.activity_sd, self.voters))
        new_from = int(self.voters * (1 - self.cohort))
        activity[new_from:] *= self.cohort_heavy
        voter = rng.choice(self.voters, size=self.votes, p=activity / activity.sum())
        tastes = self.taste * rng.normal(0, 1, (self.voters, n))
        effects = self.prompt_sd * rng.normal(0, 1, (self.prompts, n))
        a = rng.integers(0, n, self.votes)
        b = (a + rng.integers(1, n, self.votes)) % n
        prompt = rng.integers(0, self.prompts, self.votes)
        new = voter >= new_from
        if self.cohort_prompts < 1:
            prompt[new] = rng.integers(0, max(1, int(self.prompts * self.cohort_prompts)),
                                       new.sum())
        if self.cohort_models:
            pool = np.array(self.cohort_models)
            a[new] = rng.choice(pool, new.sum())
            b[new] = pool[(np.searchsorted(pool, a[new])
                           + rng.integers(1, pool.size, new.sum())) % pool.size]
        p = expit(theta[a] + tastes[voter, a] + effects[prompt, a]
                  - theta[b] - tastes[voter, b] - effects[prompt, b])
        won = rng.random(self.votes) < p
        winners, losers, units, prompts = [np.where(won, a, b)], [np.where(won, b, a)], \
            [voter], [prompt]
        target, above = n - 1, n - 2
        for k in range(self.farm):
            fa = rng.integers(0, n, self.farm_votes)
            fb = (fa + rng.integers(1, n, self.farm_votes)) % n
            pick_a = (rng.random(self.farm_votes) < expit(theta[fa] - theta[fb])
                      if self.elsewhere_crowd else theta[fa] > theta[fb])
            half = self.on_target // 2 if self.both else 0
            if self.omnipresent or self.both:  # the neighbour against models other than the target
                chosen = slice(half, self.on_target)
                fa[chosen] = above
                fb[chosen] = rng.choice([m for m in range(n) if m not in (above, target)],
                                        self.on_target - half)
                pick_a[chosen] = False
            if not self.omnipresent:
                chosen = slice(0, half if self.both else self.on_target)
                fa[chosen] = target
                fb[chosen] = (target + rng.integers(1, n, chosen.stop)) % n
                pick_a[chosen] = True
            winners.append(np.where(pick_a, fa, fb))
            losers.append(np.where(pick_a, fb, fa))
            units.append(np.full(self.farm_votes, self.voters + k))
            prompts.append(rng.integers(0, self.prompts, self.farm_votes))
        units = np.concatenate(units)
        data = PairCounts.crossed(n, units, np.concatenate(prompts), np.concatenate(winners),
                                  np.concatenate(losers), np.ones(units.size))
        labels = np.unique(units)
        gaps = list(pairwise(range(n)))
        return data, labels >= new_from, gaps, labels >= self.voters


def prompt_study(seed: int, effect: float = 0.4, prompts: int = 40, votes: int = 8000,
                 n: int = 6):
    """Votes on ``n`` models whose strengths (evenly spread over 1.6 log units) move from
    prompt to prompt by a normal ``effect`` per model and prompt, each vote on a random pair
    and prompt (benchmarks/per_prompt.py, tests/unit/test_per_prompt.py): (counts with the
    prompts as units, each prompt's true centred log-strengths)."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(0.8, -0.8, n)
    truth = theta + effect * rng.normal(0, 1, (prompts, n))
    truth -= truth.mean(axis=1, keepdims=True)
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    prompt = rng.integers(0, prompts, votes)
    won = rng.random(votes) < expit(truth[prompt, a] - truth[prompt, b])
    data = PairCounts.from_outcomes(np.where(won, a, b), np.where(won, b, a), n, units=prompt)
    return data, truth


# --- blind voters among an attentive crowd -----------------------------------------------


def attentive_crowd(rng, *, voters=400, blind=0.3, minority=0.15, models=8, probit=True,
                    gold=True, reverse=False):
    """Votes of attentive voters (most of the crowd's taste, ``minority`` of them with two
    neighbouring models swapped, or with ``reverse`` the whole order reversed), and
    ``blind`` tappers (benchmarks/reliability.py); heavy
    voters (log-normal counts, up to 400), answers drawn from a probit curve (or with
    ``probit`` False the logistic one fitted); a tenth of each voter's tasks gold (for all
    or, without ``gold``, for none). Returns the counts by voter, gold right and wrong per
    voter, each voter's kind (0 crowd, 1 minority, 2 blind), their votes, and the attentive
    crowd's population value (log-strengths, centred)."""
    s = np.linspace(-1.2, 1.2, models)
    own = -s if reverse else s.copy()
    if not reverse:
        own[[3, 4]] = own[[4, 3]]
    kind = rng.choice(3, voters, p=[1 - blind - minority, minority, blind])
    n = np.minimum(rng.lognormal(3.0, 1.0, voters).astype(int) + 5, 400)
    unit = np.repeat(np.arange(voters), n)
    i = rng.integers(0, models, unit.size)
    j = (i + rng.integers(1, models, unit.size)) % models

    def curve(x):
        return ndtr(x / 1.7) if probit else expit(x)

    taste = np.where(kind[unit, None] == 1, own[None, :], s[None, :])
    p = curve(taste[np.arange(unit.size), i] - taste[np.arange(unit.size), j])
    p = np.where(kind[unit] == 2, 0.5, p)
    first = rng.random(unit.size) < p
    data = PairCounts.from_outcomes(np.where(first, i, j), np.where(first, j, i), models,
                                    units=unit)
    asked = np.maximum(1, n // 10) * gold
    right = rng.binomial(asked, np.where(kind == 2, 0.5, 0.95)).astype(float)
    attentive = kind != 2
    share = n[kind == 1].sum() / n[attentive].sum()
    wins = ((1 - share) * curve(s[:, None] - s[None, :])
            + share * curve(own[:, None] - own[None, :]))
    np.fill_diagonal(wins, 0)
    truth = bradley_terry(wins * 1000).log_strengths
    return data, right, asked - right, kind, n, truth - truth.mean()


def covered(data: PairCounts, truth: np.ndarray) -> tuple[np.ndarray, float]:
    """Which models' voter-clustered sandwich intervals cover ``truth`` (centred
    log-strengths), and the fit's mean error."""
    result = bradley_terry(data.matrix())
    spread = instant_intervals(data, result, resample="unit")
    target = 1000 + ELO_SCALE / LOG10 * truth
    inside = (spread.rating_low <= target) & (target <= spread.rating_high)
    return inside, float(np.abs(result.log_strengths - truth).mean())
