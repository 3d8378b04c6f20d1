"""Rankings from the vote log: aggregate in SQL, fit with the pure core, map back to models.

Rows -> arrays -> ranking -> rows. The database does one ``GROUP BY winner, loser`` per
criterion and slice, so ranking millions of votes costs one aggregation query.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import func, select

from .config import CRITERIA
from .extensions import db
from .models import Comparison, EloRating, GenModel, Prompt, Vote, Voter
from .ranking import bootstrap, bradley_terry, fisher_intervals
from .voters import AGE_GROUPS, CONTINENTS, GENDERS, countries

# World population by continent, 2024, from the UN World Population Prospects 2024
# (rounded; North America includes Central America and the Caribbean). The default target of
# post-stratification: a crowd over-represents some regions; reweighting shows what the
# world's population would have voted, as far as the sample reaches.
WORLD_POPULATION_SHARE = {"AS": 0.592, "AF": 0.183, "EU": 0.092, "NA": 0.076, "SA": 0.055,
                          "OC": 0.006}
METHODS = ("bt", "elo")
INTERVALS = ("bootstrap", "fisher")
TIE_CONFIDENCE = 0.95


class RankingError(ValueError):
    """Bad ranking request (unknown criterion, method or slice value)."""


@dataclass(frozen=True)
class Slice:
    """Which votes count. Every field is optional; None means no restriction.

    ``trusted_only`` keeps voters who answered at least one validation pair and never
    failed one.
    """

    age_group: str | None = None
    gender: str | None = None
    continent: str | None = None
    country: str | None = None
    category: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    trusted_only: bool = False

    def __post_init__(self):
        checks = [
            ("age_group", self.age_group, AGE_GROUPS),
            ("gender", self.gender, GENDERS),
            ("continent", self.continent, tuple(CONTINENTS)),
        ]
        for name, value, allowed in checks:
            if value is not None and value not in allowed:
                raise RankingError(f"{name} must be one of {', '.join(allowed)}")
        if self.country is not None and self.country not in countries():
            raise RankingError(f"unknown ISO 3166 alpha-2 country {self.country!r}")
        if self.since and self.until and self.since >= self.until:
            raise RankingError("since must be before until")

    def active(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in (None, False)}


SLICE_ARGS = ("age_group", "gender", "continent", "country", "category", "since", "until",
              "trusted_only")


def slice_from_args(args) -> Slice:
    """A Slice from query-string values (empty ones ignored); raises RankingError."""
    values = {}
    for name in SLICE_ARGS:
        raw = (args.get(name) or "").strip()
        if not raw:
            continue
        if name in ("since", "until"):
            try:
                values[name] = datetime.fromisoformat(raw).replace(tzinfo=None)
            except ValueError as exc:
                raise RankingError(f"{name}: use a date like 2026-11-01 (ISO format)") from exc
        elif name == "trusted_only":
            values[name] = raw.lower() in ("1", "true", "yes", "on")
        else:
            values[name] = raw.upper() if name in ("country", "continent") else raw
    return Slice(**values)


@dataclass
class RankedModel:
    rank: int
    model: str
    score: float  # Bradley-Terry strength, models sum to 100
    rating: float | None  # Elo scale, mean 1000 (None: no votes)
    ci_low: float | None  # Elo scale
    ci_high: float | None
    score_low: float | None
    score_high: float | None
    rank_upper_bound: int | None
    tier: int | None  # models in one tier are not separable at TIE_CONFIDENCE
    online_elo: float | None
    votes: int
    wins: float
    win_rate: float | None


@dataclass
class Ranking:
    criterion: str | None
    method: str
    models: list[RankedModel]
    total_votes: int
    bootstrap_rounds: int
    intervals: str | None = None
    flags: list[str] = field(default_factory=list)
    slice: dict = field(default_factory=dict)
    prob_ahead: list[list[float]] | None = None
    wins: list[list[float]] | None = None

    def records(self) -> list[dict]:
        return [asdict(m) for m in self.models]


def vote_filter(criterion: str, slice_: Slice, join_voter: bool = False):
    """The WHERE clause and joins for counted votes of ``criterion`` in ``slice_``."""
    query = select(Vote.winner_model_id, Vote.loser_model_id).where(
        Vote.criterion == criterion,
        Vote.is_validation.is_(False),
        Vote.winner_model_id.is_not(None),
        Vote.loser_model_id.is_not(None),
    )
    demographic = {"age_group": slice_.age_group, "gender": slice_.gender,
                   "continent": slice_.continent, "country": slice_.country}
    if join_voter or any(v is not None for v in demographic.values()) or slice_.trusted_only:
        query = query.join(Voter, Voter.id == Vote.voter_id)
        for column, value in demographic.items():
            if value is not None:
                query = query.where(getattr(Voter, column) == value)
        if slice_.trusted_only:
            query = query.where(Voter.validations_passed > 0, Voter.validations_failed == 0)
    if slice_.category is not None:
        query = (query.join(Comparison, Comparison.id == Vote.comparison_id)
                 .join(Prompt, Prompt.id == Comparison.prompt_id)
                 .where(Prompt.category == slice_.category))
    if slice_.since is not None:
        query = query.where(Vote.created_at >= slice_.since)
    if slice_.until is not None:
        query = query.where(Vote.created_at < slice_.until)
    return query


def win_matrix(criterion: str, slice_: Slice = Slice()) -> tuple[list[int], list[str], np.ndarray]:
    """(model ids, names, wins) for every registered model; ``wins[i, j]`` from one GROUP BY."""
    models = db.session.execute(select(GenModel.id, GenModel.name).order_by(GenModel.name)).all()
    ids = [m.id for m in models]
    index = {model_id: i for i, model_id in enumerate(ids)}
    base = vote_filter(criterion, slice_).subquery()
    rows = db.session.execute(
        select(base.c.winner_model_id, base.c.loser_model_id, func.count())
        .group_by(base.c.winner_model_id, base.c.loser_model_id)
    ).all()
    wins = np.zeros((len(ids), len(ids)))
    for winner, loser, count in rows:
        if winner != loser:
            wins[index[winner], index[loser]] += count
    return ids, [m.name for m in models], wins


def rank_matrix(
    names: list[str],
    wins: np.ndarray,
    *,
    rounds: int = 1000,
    rng: np.random.Generator | None = None,
    online_elo: dict[str, float] | None = None,
    criterion: str | None = None,
    intervals: str = "bootstrap",
) -> Ranking:
    """Bradley-Terry ranking of ``names`` from their win matrix, with 95% intervals from a
    ``rounds``-round bootstrap (``intervals="bootstrap"``, none when rounds is 0) or from the
    Fisher information (``"fisher"``, instant). Models without any vote come last, flagged."""
    if intervals not in INTERVALS:
        raise RankingError(f"intervals must be one of {', '.join(INTERVALS)}")
    played = (wins + wins.T).sum(axis=1)
    active = np.flatnonzero(played > 0)
    flags = []
    idle = [names[i] for i in np.flatnonzero(played == 0)]
    if idle:
        flags.append(f"no votes yet for: {', '.join(idle)}")
    sub = wins[np.ix_(active, active)]
    fit = bradley_terry(sub)
    boot = None
    if active.size > 1 and intervals == "fisher":
        boot = fisher_intervals(sub, fit)
    elif active.size > 1 and rounds > 0:
        boot = bootstrap(sub, rounds=rounds, rng=rng)
    active_names = [names[i] for i in active]
    flags += [_name_items(flag, active_names) for flag in fit.flags]
    if boot is not None and getattr(boot, "prior_rounds", 0):
        flags.append(f"{boot.prior_rounds} of {rounds} bootstrap rounds lacked a "
                     "maximum-likelihood answer and used the weak prior: intervals are wide")
    order = np.argsort(-fit.scores, kind="stable")
    tiers = tied_tiers(boot.prob_ahead, order) if boot is not None else {}
    score_low = getattr(boot, "score_low", None)
    score_high = getattr(boot, "score_high", None)
    rows = []
    for position, k in enumerate(order, start=1):
        i = active[k]
        n_votes = round(float(played[i]))
        won = float(wins[i].sum())
        rows.append(RankedModel(
            rank=position,
            model=names[i],
            score=float(fit.scores[k]),
            rating=float(fit.ratings[k]),
            ci_low=float(boot.rating_low[k]) if boot else None,
            ci_high=float(boot.rating_high[k]) if boot else None,
            score_low=float(score_low[k]) if score_low is not None else None,
            score_high=float(score_high[k]) if score_high is not None else None,
            rank_upper_bound=int(boot.rank_upper_bound[k]) if boot else None,
            tier=tiers.get(int(k)),
            online_elo=(online_elo or {}).get(names[i]),
            votes=n_votes,
            wins=won,
            win_rate=won / played[i],
        ))
    for i in np.flatnonzero(played == 0):
        rows.append(RankedModel(
            rank=len(rows) + 1, model=names[i], score=0.0, rating=None,
            ci_low=None, ci_high=None, score_low=None, score_high=None,
            rank_upper_bound=None, tier=None, online_elo=(online_elo or {}).get(names[i]),
            votes=0,
            wins=0.0, win_rate=None,
        ))
    return Ranking(
        criterion=criterion,
        method="bt",
        models=rows,
        total_votes=round(float(wins.sum())),
        bootstrap_rounds=rounds if boot is not None and intervals == "bootstrap" else 0,
        intervals=intervals if boot is not None else None,
        flags=flags,
        prob_ahead=_reorder(boot.prob_ahead, order) if boot else None,
        wins=_reorder(sub, order),
    )


def tied_tiers(prob_ahead: np.ndarray, order: np.ndarray,
               confidence: float = TIE_CONFIDENCE) -> dict[int, int]:
    """Group items, best first, into tiers: an item opens a new tier once the first item of
    the current tier is ahead of it with probability >= ``confidence``. Returns
    {item index: tier number from 1}."""
    tiers, tier, leader = {}, 0, None
    for k in order:
        k = int(k)
        if leader is None or prob_ahead[leader, k] >= confidence:
            tier += 1
            leader = k
        tiers[k] = tier
    return tiers


def _reorder(matrix: np.ndarray, order: np.ndarray) -> list[list[float]]:
    return matrix[np.ix_(order, order)].tolist()


def _name_items(flag: str, names: list[str]) -> str:
    """Replace the core's item indices ("[0, 3]") by model names in a flag."""
    if "[" not in flag:
        return flag
    head, _, rest = flag.partition("[")
    indices, _, tail = rest.partition("]")
    try:
        listed = ", ".join(names[int(i)] for i in indices.split(","))
    except ValueError:
        return flag
    return f"{head}{listed}{tail}"


def online_elo(criterion: str) -> dict[str, float]:
    rows = db.session.execute(
        select(GenModel.name, EloRating.rating)
        .join(EloRating, EloRating.model_id == GenModel.id)
        .where(EloRating.criterion == criterion)
    )
    return dict(rows.all())


def poststratified_matrix(
    criterion: str, slice_: Slice = Slice(), target: dict[str, float] | None = None
) -> tuple[list[int], list[str], np.ndarray, list[str]]:
    """Win matrix reweighted so each continent counts by its ``target`` share (default: world
    population) instead of its share of the votes. Votes of voters who did not give a country
    are left out. The total weight equals the number of votes used. Returns ids, names, wins
    and flags describing the reweighting."""
    target = dict(target or WORLD_POPULATION_SHARE)
    models = db.session.execute(select(GenModel.id, GenModel.name).order_by(GenModel.name)).all()
    ids = [m.id for m in models]
    index = {model_id: i for i, model_id in enumerate(ids)}
    sub = vote_filter(criterion, slice_, join_voter=True).add_columns(Voter.continent).subquery()
    rows = db.session.execute(
        select(sub.c.continent, sub.c.winner_model_id, sub.c.loser_model_id, func.count())
        .group_by(sub.c.continent, sub.c.winner_model_id, sub.c.loser_model_id)
    ).all()
    per_continent = {}
    unknown = 0
    for continent, winner, loser, count in rows:
        if continent is None:
            unknown += count
            continue
        matrix = per_continent.setdefault(continent, np.zeros((len(ids), len(ids))))
        matrix[index[winner], index[loser]] += count
    flags = []
    if unknown:
        flags.append(f"post-stratified: {unknown} votes without a country left out")
    present = {c: m for c, m in per_continent.items() if target.get(c, 0) > 0}
    missing = sorted(c for c in target if target[c] > 0 and c not in present)
    if missing:
        flags.append("post-stratified: no votes from " + ", ".join(CONTINENTS[c] for c in missing)
                     + "; their share is spread over the others")
    wins = np.zeros((len(ids), len(ids)))
    total = sum(m.sum() for m in present.values())
    share_sum = sum(target[c] for c in present)
    for continent, matrix in present.items():
        weight = (target[continent] / share_sum) / (matrix.sum() / total)
        if weight > 5:
            flags.append(f"post-stratified: votes from {CONTINENTS[continent]} weigh "
                         f"{weight:.1f}x; few votes decide that share")
        wins += weight * matrix
    return ids, [m.name for m in models], wins, flags


def rank_models(
    criterion: str,
    *,
    method: str = "bt",
    rounds: int = 1000,
    slice_: Slice = Slice(),
    rng: np.random.Generator | None = None,
    intervals: str = "bootstrap",
    poststratify: bool = False,
) -> Ranking:
    """Rank the models for ``criterion`` from the votes in ``slice_``.

    ``method="bt"``: batch Bradley-Terry with bootstrap intervals (``rounds`` > 0).
    ``method="elo"``: the online Elo order (sequential Elo replayed over the sliced votes
    when a slice is given), without intervals.

    Raises
    ------
    RankingError
        Unknown criterion or method.
    """
    if criterion not in CRITERIA:
        raise RankingError(f"criterion must be one of {', '.join(CRITERIA)}")
    if method not in METHODS:
        raise RankingError(f"method must be one of {', '.join(METHODS)}")
    strat_flags = []
    if poststratify:
        if method != "bt":
            raise RankingError("post-stratification applies to the Bradley-Terry method")
        ids, names, wins, strat_flags = poststratified_matrix(criterion, slice_)
    else:
        ids, names, wins = win_matrix(criterion, slice_)
    elo_now = online_elo(criterion)
    ranking = rank_matrix(names, wins, rounds=rounds if method == "bt" else 0, rng=rng,
                          online_elo=elo_now, criterion=criterion,
                          intervals=intervals if method == "bt" else "bootstrap")
    ranking.flags = strat_flags + ranking.flags
    if method == "elo":
        ratings = elo_now if not slice_.active() else _replay_slice(criterion, slice_, ids,
                                                                    names)
        ranking.models.sort(key=lambda m: (m.votes == 0, -ratings.get(m.model, 0.0)))
        for position, row in enumerate(ranking.models, start=1):
            row.rank = position
            row.rating = ratings.get(row.model)
        ranking.method = "elo"
        ranking.prob_ahead = None
    ranking.slice = {k: (v.isoformat() if isinstance(v, datetime) else v)
                     for k, v in slice_.active().items()}
    if poststratify:
        ranking.slice["poststratified"] = "world population by continent"
    return ranking


def _replay_slice(criterion, slice_, ids, names) -> dict[str, float]:
    from .ranking import elo
    from .voting import elo_params

    index = {model_id: i for i, model_id in enumerate(ids)}
    rows = db.session.execute(vote_filter(criterion, slice_).order_by(Vote.id)).all()
    ratings = elo([index[w] for w, _ in rows], [index[lo] for _, lo in rows], len(ids),
                  params=elo_params())
    return dict(zip(names, ratings.tolist(), strict=True))


def rank_davidson(names: list[str], wins: np.ndarray, ties: np.ndarray) -> Ranking:
    """Rank with Davidson's tie model (strict wins and symmetric tie counts); no intervals.
    Raises RankingError when the decisive results admit no fit."""
    from .ranking.davidson import davidson

    try:
        fit = davidson(wins, ties)
    except ValueError as exc:
        raise RankingError(str(exc)) from exc
    played = (wins + wins.T + ties).sum(axis=1)
    order = np.argsort(-fit.scores, kind="stable")
    rows = [RankedModel(
        rank=position, model=names[i], score=float(fit.scores[i]),
        rating=float(fit.ratings[i]), ci_low=None, ci_high=None, score_low=None,
        score_high=None, rank_upper_bound=None, tier=None, online_elo=None,
        votes=round(float(played[i])), wins=float(wins[i].sum() + ties[i].sum() / 2),
        win_rate=float((wins[i].sum() + ties[i].sum() / 2) / played[i]) if played[i] else None,
    ) for position, i in enumerate(order, start=1)]
    tie_share = 100 * fit.nu / (2 + fit.nu)
    note = f"Davidson tie model: nu = {fit.nu:.3f} (equal models tie {tie_share:.0f}% of the time)"
    flags = [note]
    if not fit.converged:
        flags.append("the Davidson fit did not converge")
    return Ranking(criterion=None, method="davidson", models=rows,
                   total_votes=round(float(wins.sum() + ties.sum() / 2)), bootstrap_rounds=0,
                   flags=flags)
