"""Rankings from the vote log: tally in SQL, fit with the pure core, map back to models.

Rows -> arrays -> ranking -> rows. :mod:`arena.analysis.tallies` does one
``GROUP BY (unit, winner, loser)`` per criterion and slice; the core fits Bradley-Terry and
builds the intervals by the same resampling units (voters by default), so ranking millions
of votes costs one aggregation query and a fit on the aggregated rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from itertools import pairwise

import numpy as np
from flask import current_app
from sqlalchemy import select

from arena import criteria
from arena.analysis import methods, published, rollups, slices
from arena.analysis.agreement import shown_agreement
from arena.analysis.margins import CannotReweight
from arena.analysis.reliability import WEIGHTS, weigh
from arena.analysis.tallies import (
    TWO_WAY,
    RankingError,
    Slice,
    Tally,
    models,
    tally,
    vote_filter,
)
from arena.extensions import db
from arena.models import Campaign, Comparison, GenModel, Vote
from arena.ranking import PairCounts, PairMoments, bootstrap, bradley_terry, instant_intervals
from arena.ranking.agreement import Agreement
from arena.ranking.bradley_terry import ELO_SCALE, LOG10
from arena.ranking.elo import keyed_order
from arena.ranking.robustness import flips
from arena.ranking.strata import held_shift

METHODS = tuple(methods.METHODS)
INTERVALS = ("bootstrap", "instant")
LEVEL = 0.95
# an analyst's ranking of every vote now, not as of the last farm screen
LIVE_WARNING = ("live: every vote to the second, including those that wait for their "
                "voters' trust or the next farm screen")

@dataclass
class RankedModel:
    rank: int | None  # None: unranked (no vote in the selection)
    model: str
    score: float | None  # Bradley-Terry strength, models sum to 100 (None: unranked)
    rating: float | None  # Elo scale, mean 1000 (None: no votes)
    ci_low: float | None  # Elo scale
    ci_high: float | None
    score_low: float | None
    score_high: float | None
    rank_best: int | None  # the 95% confidence set of its rank: rank_best..rank_worst
    rank_worst: int | None
    tier: int | None  # no model of a tier is surely ahead of another of it (see ranking.ranks)
    online_elo: float | None
    votes: int
    wins: float
    win_rate: float | None
    # the fewest voters whose removal puts the next model level with it or ahead (an exact
    # refit confirms it; None: not known, or no removal of its supporters would)
    lead_voters: int | None = None
    lead_share: float | None = None  # of all the voters


ONE_TIER = ("no two tiers can be told apart at this size: no model is surely ahead of "
            "another (tiers left out)")


@dataclass
class Ranking:
    criterion: str | None
    method: str
    models: list[RankedModel]
    total_votes: int
    bootstrap_rounds: int
    intervals: str | None = None
    cluster: str | None = None  # what the intervals resample: voter+prompt, voter, prompt,
    # none (votes)
    units: int | None = None  # how many of them (voters, for voter+prompt)
    prompts: int | None = None  # for voter+prompt: how many prompts
    effective_units: float | None = None  # what they are worth as equal ones (a few heavy)
    effective_votes: float | None = None  # Kish's effective size when reweighted
    flags: list[str] = field(default_factory=list)
    slice: dict = field(default_factory=dict)
    prob_ahead: list[list[float]] | None = None
    wins: list[list[float]] | None = None
    as_of: datetime | None = None  # published figures: the votes cast before this count
    withheld: bool = False  # a public slice of too few voters: no figures at all
    agreement: Agreement | None = None  # how much the voters agree on the criterion

    def __post_init__(self):
        # one tier says nothing: no model is surely ahead of any other (common at small sizes)
        tiered = [m for m in self.models if m.tier is not None]
        if len(tiered) > 1 and all(m.tier == 1 for m in tiered):
            for m in tiered:
                m.tier = None
            self.flags.append(ONE_TIER)

    def records(self) -> list[dict]:
        return [asdict(m) for m in self.models]


def rank_counts(
    names: list[str],
    data: PairCounts,
    *,
    rounds: int = 1000,
    rng: np.random.Generator | None = None,
    intervals: str = "bootstrap",
    cluster: str = TWO_WAY,
    calibration=None,
    online_elo: dict[str, float] | None = None,
    criterion: str | None = None,
    include_idle: bool = True,
    certify: bool = True,
) -> Ranking:
    """Bradley-Terry ranking of ``names`` from ``data`` (:class:`PairCounts`), with 95%
    intervals from a ``rounds``-round bootstrap (``intervals="bootstrap"``, none when rounds
    is 0) or the sandwich variance (``"instant"``), both resampling ``data``'s units (which
    are ``cluster``: voters and prompts at once, voters, prompts) or single votes
    (``cluster="none"``, or when there is only one unit), and both re-weighting by
    ``calibration`` when given. Two-way data whose prompts (or voters) do not vary is
    clustered the other way alone. Models without any
    vote come last, flagged (left out with ``include_idle=False``: public pages do not list
    models nobody has voted on, which may not have been announced). ``certify``: count the
    voters each lead hinges on (:mod:`arena.ranking.robustness`) where units are voters."""
    if intervals not in INTERVALS:
        raise RankingError(f"intervals must be one of {', '.join(INTERVALS)}",
                           field="intervals")
    raw = data.matrix()
    played = (raw + raw.T).sum(axis=1)
    active = np.flatnonzero(played > 0)
    sub = data.restricted(active)
    weighted = sub.weighted_matrix(calibration)
    fit = bradley_terry(weighted)
    cluster = _one_way(sub, cluster)
    resample = "unit" if cluster != "none" and sub.n_units > 1 else "vote"
    spread = _intervals(sub, fit, intervals, rounds, rng, resample, calibration)
    concentrated = _concentrated(sub, cluster, resample) if spread is not None else None
    if concentrated is not None:
        spread = None
    held = _held(calibration, weighted, fit, spread, [names[i] for i in active])
    active_names = [names[i] for i in active]
    order = np.argsort(-fit.scores, kind="stable")
    elo_now = online_elo or {}
    rows = [_ranked_row(position, names[active[k]], int(k), fit, spread,
                        elo_now.get(names[active[k]]), played[active[k]], raw[active[k]])
            for position, k in enumerate(order, start=1)]
    idle = np.flatnonzero(played == 0) if include_idle else []
    rows += [_idle_row(names[i], elo_now.get(names[i])) for i in idle]
    ranking = Ranking(
        criterion=criterion, method="bt", models=rows, total_votes=round(float(raw.sum())),
        bootstrap_rounds=rounds if spread is not None and intervals == "bootstrap" else 0,
        intervals=intervals if spread is not None else None,
        cluster=None if spread is None else (cluster if resample == "unit" else "none"),
        units=_voters(sub) if resample == "unit" else None,
        prompts=_prompts(sub) if cluster == TWO_WAY and resample == "unit" else None,
        effective_units=sub.effective_units() if resample == "unit" else None,
        effective_votes=sub.effective_size(calibration) if calibration is not None else None,
        prob_ahead=_reorder(spread.prob_ahead, order) if spread else None,
        wins=_reorder(weighted, order))
    ranking.flags += _flags([names[i] for i in idle], fit, spread, active_names, ranking,
                            cluster)
    if concentrated is not None:
        ranking.flags.append(concentrated)
    if held is not None:
        ranking.flags.append(held)
    if certify and cluster in ("voter", TWO_WAY) and resample == "unit" \
            and calibration is None and isinstance(sub, PairCounts):
        ranking.flags += _certify(sub.way(0) if sub.two_way else sub, fit, order, rows)
    return ranking


def take_leads(criterion: str) -> dict[str, list]:
    """The public board's lead counts for this period (what :func:`_certify` gives the
    votes before the cut-off, by model name), worked out now if not yet: a fit and refits
    over the votes per voter (the rollup's voter counts, once it has reached the cut-off),
    for the rollup timer (``arena votes rollup``), never a page, to pay."""
    def compute(before):
        ids, names = models()
        rolled = rollups.voter_counts(criterion, ids, before)
        counts = rolled[1] if rolled is not None else tally(
            criterion, Slice(as_of=before), cluster="voter").counts
        ranking = rank_counts(names, counts, rounds=0, cluster="voter", include_idle=False)
        return {m.model: [m.lead_voters, m.lead_share, below.model]
                for m, below in pairwise(ranking.models)}

    return published.figures(f"leads:{criterion}", published.ALL, compute).payload


def _published_leads(criterion: str, ranking: Ranking) -> None:
    """The period's stored lead counts (:func:`take_leads`) on a public ranking of every
    vote, with its fragile flags; nothing when the timer has not taken them."""
    stored = published.stored(f"leads:{criterion}", published.ALL)
    if stored is None or stored.as_of != ranking.as_of:
        return
    least = current_app.config["FRAGILE_SHARE"]
    for row, below in pairwise(ranking.models):
        lead = stored.payload.get(row.model)
        if lead is None or lead[2] != below.model:  # (the same order, as it must be)
            continue
        row.lead_voters, row.lead_share = lead[:2]
        if lead[0] is not None and lead[1] < least:
            ranking.flags.append(_fragile(row.model, below.model, f"{lead[0]}", lead[1]))


def _certify(voters: PairCounts, fit, order, rows) -> list[str]:
    """Each ranked row's lead over the next: how many voters it hinges on; flags for the
    leads that fewer than ``FRAGILE_SHARE`` of the voters could undo."""
    least = current_app.config["FRAGILE_SHARE"] if current_app else 0.01
    flags = []
    if len(order) < 2:
        return flags
    pairs = list(pairwise(order))
    for row, below, flip in zip(rows, rows[1:], flips(voters, fit, pairs), strict=False):
        row.lead_voters, row.lead_share = flip.units, flip.share
        if flip.units is not None and flip.share < least:
            flags.append(_fragile(row.model, below.model, f"{flip.units} of {flip.total}",
                                  flip.share))
    return flags


def _fragile(ahead: str, behind: str, voters: str, share: float) -> str:
    return (f"fragile: {ahead} is ahead of {behind} unless {voters} voters "
            f"({100 * share:.1f}%) are removed")


def _concentrated(sub, cluster: str, resample: str) -> str | None:
    """Why a ranking shows no intervals: many voters, but a few cast most of the votes, so
    that they are worth fewer than ``MIN_CLUSTERS`` of equal size. Clustered intervals then
    cover less than they say (three voters with a fifth of the votes each: 85-90% where 95%
    is said, benchmarks/coverage.py), and none is shown. None when they may be."""
    if resample != "unit" or cluster not in ("voter", TWO_WAY):
        return None
    least = current_app.config["MIN_CLUSTERS"] if current_app else 20
    voters = _voters(sub)
    if isinstance(sub, PairMoments):
        worth = replace(sub, prompt_cross=None, n_prompts=0).effective_units()
    else:
        worth = (sub.way(0) if sub.two_way else sub).effective_units()
    if voters < least or worth >= least:
        return None
    return (f"too few effective voters: a few cast most votes, so the {voters:,d} voters are "
            f"worth {worth:.0f} of equal size (fewer than {least}); no intervals are shown, "
            "as they would cover less than they say")


def _held(calibration, weighted, fit, spread, names: list[str]) -> str | None:
    """What the groups a reweighting leaves off their targets (``calibration.held`` of the
    population) could move each rating whatever they prefer: a flag saying so; refused
    (:class:`CannotReweight`) where that passes ``POSTSTRAT_MAX_SHIFT`` of an interval's
    half-width, as such intervals cover less than they say however many votes there are."""
    if calibration is None or calibration.held <= 0 or len(names) < 2:
        return None
    shift = ELO_SCALE / LOG10 * held_shift(weighted, fit.log_strengths, calibration.held)
    groups = ", ".join(calibration.held_groups) or "groups too small to reweight"
    said = (f"reweighted: {calibration.held:.1%} of the population is off its target share "
            f"({groups}: too few to reweight, or no votes); what they prefer could move a "
            f"rating by up to {shift.max():.0f} Elo")
    if spread is None:
        return said
    most = current_app.config["POSTSTRAT_MAX_SHIFT"] if current_app else 0.2
    half = (np.asarray(spread.rating_high) - np.asarray(spread.rating_low)) / 2
    ratio = np.divide(shift, half, out=np.full_like(shift, np.inf), where=half > 0)
    worst = int(np.argmax(ratio))
    if ratio[worst] > most:
        raise CannotReweight(
            f"cannot reweight: {said}, more than {most:.0%} of the interval's half-width "
            f"({half[worst]:.0f} Elo for {names[worst]}), so the intervals would cover less "
            f"than they say. Rank without reweighting, with shares that leave out {groups}, "
            "or once they have the votes to be reweighted", field="margin")
    return f"{said}, within {most:.0%} of the intervals' half-widths"


def _one_way(data, cluster: str) -> str:
    """``cluster``, or the one way two-way data varies in."""
    if cluster != TWO_WAY or data.two_way:
        return cluster
    ways = getattr(data, "ways", None)
    return "prompt" if ways is not None and ways[1].max(initial=0) > 0 else "voter"


def _voters(data) -> int:
    """The units of one-way data; the voters of two-way data."""
    return int(data.ways[0].max()) + 1 if getattr(data, "ways", None) is not None \
        and data.two_way else data.n_units


def _prompts(data) -> int:
    """The prompts of two-way data."""
    ways = getattr(data, "ways", None)
    return int(ways[1].max()) + 1 if ways is not None else data.n_prompts


def _intervals(sub, fit, intervals, rounds, rng, resample, calibration):
    """Sandwich or bootstrap intervals of the fit, or None (one model, or no rounds)."""
    if sub.n_items < 2:
        return None
    if intervals == "instant":
        return instant_intervals(sub, fit, resample=resample, calibration=calibration,
                                 level=LEVEL, rng=rng, few_units=True)
    if rounds <= 0:
        return None
    return bootstrap(sub, rounds=rounds, rng=rng, resample=resample, calibration=calibration,
                     level=LEVEL, fit=fit, few_units=True)


def _flags(idle, fit, spread, active_names, ranking: Ranking, cluster: str) -> list[str]:
    flags = []
    if not ranking.total_votes:
        flags.append("no votes yet in this selection")
    if idle:
        flags.append(f"no votes yet for: {', '.join(idle)}")
    flags += [_name_items(flag, active_names) for flag in fit.flags]
    if getattr(spread, "prior_rounds", 0):
        flags.append(f"{spread.prior_rounds} of {ranking.bootstrap_rounds} bootstrap rounds "
                     "lacked a maximum-likelihood answer and used the weak prior: intervals "
                     "are wide")
    if spread is not None and ranking.cluster != cluster:
        flags.append(f"every vote has the same {cluster}: intervals resample single votes")
    if ranking.units is not None and spread is not None:
        least = current_app.config["MIN_CLUSTERS"] if current_app else 20
        fewest = min(ranking.units, ranking.prompts or ranking.units)
        units = (f"{ranking.units} units" if ranking.prompts is None
                 else f"{ranking.units} voters and {ranking.prompts} prompts")
        if fewest < least:
            flags.append(f"intervals resample {units} (fewer than {least}): "
                         "too few for clustered intervals to be trusted")
        elif ranking.effective_units < least:
            flags.append(f"intervals resample {units}, but a few cast most "
                         f"votes: they are worth {ranking.effective_units:.0f} of equal size "
                         f"(fewer than {least}), too few for clustered intervals to be "
                         "trusted")
    if ranking.effective_votes is not None and ranking.total_votes:
        flags.append(f"reweighted: the votes are worth {ranking.effective_votes:,.0f} "
                     f"unweighted ones (effective sample size, of {ranking.total_votes:,d})")
    return flags


@dataclass(frozen=True)
class Point:
    """A method's point estimate: ``scores`` (sum 100) and ``ratings`` (Elo scale)."""

    scores: np.ndarray
    ratings: np.ndarray


@dataclass(frozen=True)
class Spread:
    """A method's 95% intervals (Elo scale; sum-100 scale when known) and rank sets, in the
    shape BootstrapResult and InstantResult already have."""

    rating_low: np.ndarray
    rating_high: np.ndarray
    ranks: object
    score_low: np.ndarray | None = None
    score_high: np.ndarray | None = None


def _idle_row(name: str, online: float | None) -> RankedModel:
    """A model without a vote in the selection: listed last, unranked, nothing estimated
    (ranked, it would take a place among models that have votes)."""
    return RankedModel(rank=None, model=name, score=None, rating=None, ci_low=None,
                       ci_high=None, score_low=None, score_high=None, rank_best=None,
                       rank_worst=None, tier=None, online_elo=online, votes=0, wins=0.0,
                       win_rate=None)


def _ranked_row(position, name, k, point, spread, online, played, won) -> RankedModel:
    """Row ``k`` of a method's results, at ``position`` in the table."""
    won = float(np.sum(won))
    has = spread is not None
    scored = has and spread.score_low is not None
    return RankedModel(
        rank=position, model=name, score=float(point.scores[k]),
        rating=float(point.ratings[k]),
        ci_low=float(spread.rating_low[k]) if has else None,
        ci_high=float(spread.rating_high[k]) if has else None,
        score_low=float(spread.score_low[k]) if scored else None,
        score_high=float(spread.score_high[k]) if scored else None,
        rank_best=int(spread.ranks.best[k]) if has else None,
        rank_worst=int(spread.ranks.worst[k]) if has else None,
        tier=int(spread.ranks.tier[k]) if has else None,
        online_elo=online, votes=round(float(played)), wins=won,
        win_rate=won / played if played else None)


def _reorder(matrix: np.ndarray, order: np.ndarray) -> list[list[float]]:
    return np.asarray(matrix)[np.ix_(order, order)].tolist()


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
    """Every rated model's online Elo now (:mod:`arena.voting.live_elo`), by name."""
    from arena.voting import live_elo

    names = dict(db.session.execute(select(GenModel.id, GenModel.name)).all())
    return {names[m]: row[0] for m, row in live_elo.ratings(criterion).items() if m in names}


def rank_models(
    criterion: str,
    *,
    method: str = methods.DEFAULT,
    rounds: int = 1000,
    slice_: Slice | None = None,
    rng: np.random.Generator | None = None,
    intervals: str = "bootstrap",
    cluster: str = TWO_WAY,
    margins=(),
    poststratify: bool = False,
    include_idle: bool = True,
    public: bool = False,
    weights: str | None = None,
) -> Ranking:
    """Rank the models for ``criterion`` from the votes in ``slice_``.

    ``public``: as the public pages show it (:mod:`arena.analysis.published`): the votes
    stamped before the period's cut-off (``Ranking.as_of``), the voters' trust as it stood
    then, the online Elo replayed to it, dates as whole days, and nothing of a slice with
    fewer than ``PUBLIC_SLICE_MIN_VOTERS`` voters.

    ``method="bt"``: batch Bradley-Terry with intervals that resample ``cluster`` units
    (voters and prompts at once by default; voters; prompts; "none": single votes), by
    bootstrap (``rounds`` > 0) or the instant sandwich variance. ``margins`` (strings like
    ``"continent"`` or ``"gender:female=0.5,male=0.5"``; ``poststratify`` is
    ``("continent",)``) reweight the votes to population shares, design-based
    (:mod:`arena.analysis.margins`).
    ``method="elo"``: the online Elo order (sequential Elo replayed over the sliced votes
    when a slice is given), without intervals.
    ``weights="reliability"``: each voter's votes weighted by the probability that they
    looked (:mod:`arena.analysis.reliability`), ``"gold"`` by their gold answers alone;
    Bradley-Terry, intervals by voter.

    Raises
    ------
    RankingError
        Unknown criterion, method, interval kind or cluster, or margins asked of Elo.
        MarginError for a bad margin.
    """
    criteria.check(criterion)
    slice_ = slice_ or Slice()
    chosen = _method(method)
    if slice_.campaign is not None:
        _check_campaign(slice_.campaign)
        include_idle = False  # (the other campaigns' models have no votes here)
    margins = tuple(margins) or (("continent",) if poststratify else ())
    _check_asks(chosen, margins, weights, cluster, public)
    if public:
        edition = published.elo()
        slice_ = slice_.published_at(edition.as_of)
        elo_now = edition.online(criterion)
    elif slice_.as_of is not None:  # (the analysts' default: as the public pages count)
        edition = published.elo()
        elo_now = edition.online(criterion) if edition.as_of == slice_.as_of else {}
    else:
        elo_now = online_elo(criterion)
    found = (None if weights is not None or not chosen.rollups
             else _rolled_up(criterion, slice_, cluster, margins, intervals, rounds))
    if found is not None:
        counted = found
    elif weights is not None:
        counted = weigh(tally(criterion, slice_, cluster="voter"), slice_.as_of, weights)
        if cluster == TWO_WAY:
            counted.flags.append("weighted: intervals cluster by voter only (the weights are "
                                 "the voters')")
            cluster = "voter"
    else:
        counted = tally(criterion, slice_, cluster=cluster, margins=margins)
    if public and slice_.active() and _too_few_voters(counted, cluster):
        return _withheld(criterion, method, slice_)
    ranking = FITS[chosen.name](Fit(
        criterion, slice_, counted, cluster, rounds, rng, intervals, elo_now, include_idle,
        # (from the log it refits per request: analysts' only; it counts voters as whole
        # votes, which weighted voters are not)
        certify=found is not None or (not public and weights is None)))
    ranking.flags = counted.flags + ranking.flags
    ranking.slice = _described(slice_)
    if weights is not None:
        ranking.slice["weights"] = weights
    if counted.margins:
        ranking.slice["reweighted"] = "; ".join(m.describe() for m in counted.margins)
    ranking.as_of = slice_.as_of
    ranking.agreement = shown_agreement(criterion, slice_, public)
    if public and not slice_.active() and found is not None:
        _published_leads(criterion, ranking)
    return ranking


def _check_campaign(name: str) -> None:
    if db.session.scalar(select(Campaign.id).where(Campaign.name == name)) is None:
        raise RankingError(f"no campaign named {name!r}", field="campaign")


def _check_asks(chosen: methods.Method, margins, weights, cluster, public) -> None:
    """What ``chosen`` cannot do, refused (RankingError)."""
    if margins and not chosen.margins:
        raise RankingError(f"post-stratification does not apply to {chosen.title}")
    if weights is not None:
        if weights not in WEIGHTS:
            raise RankingError(f"weights must be one of {', '.join(WEIGHTS)}", field="weights")
        if not chosen.weights or margins or cluster not in ("voter", TWO_WAY) or public:
            raise RankingError("voters' weights apply to Bradley-Terry without margins, "
                               "with intervals that resample voters", field="weights")


@dataclass(frozen=True)
class Fit:
    """What each method's adapter (:data:`FITS`) is given: the counted votes of
    ``criterion`` in ``slice_`` and how to rank them; each returns a :class:`Ranking`."""

    criterion: str
    slice_: Slice
    counted: Tally
    cluster: str
    rounds: int
    rng: np.random.Generator | None
    intervals: str
    elo_now: dict[str, float]
    include_idle: bool
    certify: bool


def _fit_bt(fit: Fit) -> Ranking:
    counted = fit.counted
    return rank_counts(counted.names, counted.counts, rounds=fit.rounds, rng=fit.rng,
                       intervals=fit.intervals, cluster=fit.cluster,
                       calibration=counted.calibration, online_elo=fit.elo_now,
                       criterion=fit.criterion, include_idle=fit.include_idle,
                       certify=fit.certify)


def _fit_elo(fit: Fit) -> Ranking:
    """Elo over the sliced votes in id order (to a cut-off, in the public Elo's keyed order),
    with bootstrap intervals by ``cluster`` (for voter+prompt, the two-way covariance of
    :func:`arena.ranking.elo.elo_bootstrap`)."""
    from arena.voting.live_elo import elo_params

    winners, losers, units = _vote_log(fit.criterion, fit.slice_, fit.counted, fit.cluster)
    online = fit.elo_now if not fit.slice_.active() else None
    return rank_elo(fit.counted.names, winners, losers, units=units, rounds=fit.rounds,
                    rng=fit.rng, params=elo_params(), online=online, criterion=fit.criterion,
                    cluster=fit.cluster, include_idle=fit.include_idle)


def _fit_openskill(fit: Fit) -> Ranking:
    winners, losers, _ = _vote_log(fit.criterion, fit.slice_, fit.counted, "none")
    return rank_openskill(fit.counted.names, winners, losers, criterion=fit.criterion,
                          include_idle=fit.include_idle)


# each method's adapter, by the name of its row in arena.analysis.methods
FITS = {"bt": _fit_bt, "elo": _fit_elo, "openskill": _fit_openskill}


def _method(name: str) -> methods.Method:
    """The method named ``name`` (:mod:`arena.analysis.methods`). Raises RankingError."""
    if name not in methods.METHODS:
        raise RankingError(f"method must be one of {', '.join(methods.METHODS)}",
                           field="method")
    return methods.METHODS[name]


def _rolled_up(criterion, slice_: Slice, cluster, margins, intervals, rounds
               ) -> Tally | None:
    """The counted votes from the rollup (:mod:`arena.analysis.rollups`) where it holds what
    the ranking needs: every vote or one rolled-up slice (:mod:`arena.analysis.slices`)
    besides the public cut-off, Bradley-Terry, and intervals from voters' moments (the
    sandwich) or from the pooled votes. Else None."""
    sliced = slices.field_of(slice_)
    if (margins or (slice_.active() and sliced is None)
            or cluster not in ("voter", "none", TWO_WAY)
            or (cluster != "none" and intervals != "instant" and rounds > 0)):
        return None
    ids, names = models()
    rolled = slices.read(criterion, slice_) if sliced is not None else None
    found = (rollups.moments(criterion, ids, slice_.as_of) if sliced is None
             else rolled.moments(ids) if rolled is not None else None)
    if found is None:
        return None
    counts = {"none": found.pooled(), "voter": replace(found, prompt_cross=None, n_prompts=0)
              }.get(cluster, found)
    return Tally(ids, names, counts, cluster)


def _too_few_voters(counted: Tally, cluster: str) -> bool:
    if cluster not in ("voter", TWO_WAY):
        raise RankingError("the public pages resample voters", field="cluster")
    data = counted.counts
    voters = (len(np.unique(data.ways[0][data.unit])) if getattr(data, "ways", None) is not None
              else data.n_units)  # (moments' units are voters)
    return 0 < voters < current_app.config["PUBLIC_SLICE_MIN_VOTERS"]


def _withheld(criterion: str, method: str, slice_: Slice) -> Ranking:
    """What a public page shows of a slice with too few voters: nothing but why (a slice of
    one voter's country, language or age, or of one day, would show their own votes)."""
    least = current_app.config["PUBLIC_SLICE_MIN_VOTERS"]
    ranking = Ranking(criterion=criterion, method=method, models=[], total_votes=0,
                      bootstrap_rounds=0, withheld=True, flags=[
                          f"fewer than {least} voters in this selection: the public page "
                          "shows none of its figures (so few would tell their votes apart)"])
    ranking.slice = _described(slice_)
    ranking.as_of = slice_.as_of
    return ranking


def _described(slice_: Slice) -> dict:
    return {k: (v.isoformat() if isinstance(v, datetime) else v)
            for k, v in slice_.active().items()}


def _vote_log(criterion, slice_, counted: Tally, cluster):
    """The sliced votes in id order (those counted to a cut-off in the public Elo's keyed
    order) as arrays of winner and loser indices into ``counted``, with each vote's
    ``cluster`` units."""
    columns = {"voter": [Vote.voter_id], "prompt": [Comparison.prompt_id],
               TWO_WAY: [Vote.voter_id, Comparison.prompt_id]}.get(cluster, [])
    query = vote_filter(criterion, slice_, join_prompt=cluster in ("prompt", TWO_WAY))
    query = query.add_columns(*columns, Vote.id)
    rows = db.session.execute(query.order_by(Vote.id)).all()
    if slice_.as_of is not None:  # (as the public Elo takes them: arena.analysis.published)
        rows = [rows[k] for k in keyed_order([r[-1] for r in rows], published.elo_key())]
    rows = [r[:-1] for r in rows]
    index = {model_id: i for i, model_id in enumerate(counted.ids)}
    rows = [r for r in rows if r[0] in index and r[1] in index and r[0] != r[1]]
    winners = np.array([index[r[0]] for r in rows], dtype=np.int64)
    losers = np.array([index[r[1]] for r in rows], dtype=np.int64)
    units = np.array([[-1 if u is None else u for u in r[2:]] for r in rows],
                     dtype=np.int64).reshape(len(rows), len(columns)) if columns else None
    if units is not None and len(columns) == 1:
        units = units[:, 0]
    return winners, losers, units


def rank_openskill(names: list[str], winners, losers, ties=None, *,
                   criterion: str | None = None, include_idle: bool = True) -> Ranking:
    """OpenSkill ranking of ``names`` from votes in their order
    (:mod:`arena.ranking.openskill_ratings`): ratings on the Elo scale, no intervals (its
    sigma counts games, not voters)."""
    from arena.ranking.openskill_ratings import openskill

    got = openskill(winners, losers, len(names), ties=ties)
    active = np.flatnonzero(got.played > 0)
    strength = np.exp(got.ratings[active] * np.log(10) / 400)
    point = Point(100 * strength / strength.sum() if active.size else strength,
                  got.ratings[active])
    order = sorted(range(active.size), key=lambda k: -point.ratings[k])
    rows = [_ranked_row(position, names[active[k]], k, point, None, None,
                        got.played[active[k]], got.won[active[k]])
            for position, k in enumerate(order, start=1)]
    idle = [name for i, name in enumerate(names) if got.played[i] == 0]
    if include_idle:
        rows += [_idle_row(name, None) for name in idle]
    total = int(got.played.sum() // 2)
    flags = ["OpenSkill: Plackett-Luce ratings in the votes' order, without intervals"]
    if not total:
        flags.insert(0, "no votes yet in this selection")
    elif idle and include_idle:
        flags.append(f"no votes yet for: {', '.join(idle)}")
    return Ranking(criterion=criterion, method="openskill", models=rows, total_votes=total,
                   bootstrap_rounds=0, flags=flags)


def _count_units(units, way: int) -> int | None:
    """How many voters (``way`` 0) or prompts (1) ``units`` holds: one label per vote (the
    voters, or whatever one way it is), or rows of voter and prompt."""
    if units is None:
        return None
    labels = np.asarray(units)
    if labels.ndim == 1:
        return len(np.unique(labels)) if way == 0 else None
    return len(np.unique(labels[:, way]))


def rank_elo(names: list[str], winners, losers, ties=None, units=None, *,
             rounds: int = 1000, rng: np.random.Generator | None = None, params=None,
             online: dict[str, float] | None = None, criterion: str | None = None,
             cluster: str = "none", include_idle: bool = True) -> Ranking:
    """Elo ranking of ``names`` from votes in their order: ``online_elo`` is the sequential
    Elo in that order (the online path's update; ``online`` when given, the stored
    ratings); ``rating`` is Elo averaged over random orders of the votes, with a 95%
    interval from about ``rounds`` bootstrap replays, resampling ``units`` (voters, or rows
    of voter and prompt) when given (:func:`arena.ranking.elo.elo_ranking`). With ``rounds``
    0 the rating is the single-order Elo and there are no intervals."""
    from arena.ranking.elo import EloParams, elo_ranking

    got = elo_ranking(winners, losers, len(names), ties=ties, units=units, rounds=rounds,
                      params=params or EloParams(), rng=rng, level=LEVEL)
    boot = got.intervals
    point = Point(got.scores, got.ratings)
    spread = Spread(boot.low, boot.high, got.ranks, got.score_low, got.score_high) \
        if boot else None
    order = sorted(range(got.active.size), key=lambda k: -got.ratings[k])
    stored = online if online is not None else {}
    rows = [_ranked_row(position, names[got.active[k]], k, point, spread,
                        stored.get(names[got.active[k]], float(got.ordered[k])),
                        got.played[k], got.won[k])
            for position, k in enumerate(order, start=1)]
    rated = set(got.active.tolist())
    idle = [name for i, name in enumerate(names) if i not in rated]
    if include_idle:
        rows += [_idle_row(name, stored.get(name)) for name in idle]
    total = int(got.played.sum() // 2)
    flags = [] if total else ["no votes yet in this selection"]
    if idle and include_idle and total:
        flags.append(f"no votes yet for: {', '.join(idle)}")
    if boot:
        flags.append("Elo: rating = averaged over random orders of the votes (online_elo "
                     "is their own order, which recent votes sway)")
    return Ranking(criterion=criterion, method="elo", models=rows, total_votes=total,
                   bootstrap_rounds=rounds if boot else 0,
                   intervals="bootstrap" if boot else None,
                   cluster=(cluster if units is not None else "none") if boot else None,
                   units=_count_units(units, 0) if boot else None,
                   prompts=_count_units(units, 1) if boot else None,
                   flags=flags,
                   prob_ahead=None if boot is None else _reorder(got.prob_ahead,
                                                                 np.array(order)))


def rank_davidson(names: list[str], data: PairCounts, *, rounds: int = 1000,
                  rng: np.random.Generator | None = None, cluster: str = "none") -> Ranking:
    """Rank with Davidson's tie model, with 95% intervals from ``rounds`` bootstrap refits
    resampling ``data``'s units (voters) or single votes (``cluster="none"``), ties drawn as
    ties (:func:`arena.ranking.davidson.davidson_ranking`). Raises RankingError when the
    decisive results admit no fit."""
    from arena.ranking.davidson import davidson_ranking

    try:
        got = davidson_ranking(data, len(names), rounds=rounds, rng=rng, level=LEVEL,
                               resample="vote" if cluster == "none" else "unit")
    except ValueError as exc:
        raise RankingError(str(exc)) from exc
    fit, boot = got.fit, got.intervals
    spread = Spread(boot.low, boot.high, got.ranks) if boot else None
    order = np.argsort(-fit.scores, kind="stable")
    rows = [_ranked_row(position, names[i], i, fit, spread, None, got.played[i], got.won[i])
            for position, i in enumerate(order, start=1)]
    tie_share = 100 * fit.nu / (2 + fit.nu)
    flags = [f"Davidson tie model: nu = {fit.nu:.3f} (equal models tie {tie_share:.0f}% of "
             "the time)"]
    if not fit.converged:
        flags.append("the Davidson fit did not converge")
    if boot and boot.failed:
        flags.append(f"{boot.failed} of {rounds} bootstrap rounds admitted no fit and were "
                     "left out")
    return Ranking(criterion=None, method="davidson", models=rows,
                   total_votes=round(float(got.wins.sum() + got.ties.sum() / 2)),
                   bootstrap_rounds=rounds if boot else 0,
                   intervals="bootstrap" if boot else None,
                   cluster=cluster if boot else None,
                   units=data.n_units if boot and cluster != "none" else None, flags=flags)


@dataclass(frozen=True)
class EloRow:
    rank: int
    model: str
    rating: float
    votes: int
    wins: int

    @property
    def win_rate(self) -> float | None:
        return self.wins / self.votes if self.votes else None


@dataclass(frozen=True)
class EloTable:
    as_of: datetime  # the period's cut-off: the votes before it
    rows: list[EloRow]


def elo_table(criterion: str) -> EloTable:
    """The public table: models with counted votes for ``criterion``, by online Elo, best
    first, replayed to the period's cut-off (:func:`arena.analysis.published.elo`). Models
    nobody has voted on are not listed: a model just registered (and perhaps not announced)
    is nobody else's business. Raises RankingError."""
    criteria.check(criterion)
    edition = published.elo()
    rows = [row for row in edition.ratings.get(criterion, []) if row[2] > 0]
    return EloTable(edition.as_of, [
        EloRow(rank=i, model=name, rating=rating, votes=votes, wins=wins)
        for i, (name, rating, votes, wins) in enumerate(rows, start=1)])


def rank_votes_file(path, *, ties: str = "half", rounds: int = 1000,
                    rng: np.random.Generator | None = None, intervals: str = "bootstrap",
                    cluster: str | None = None, method: str = methods.DEFAULT) -> Ranking:
    """Rank a file of votes collected elsewhere (see :mod:`arena.analysis.vote_files`):
    Bradley-Terry with a tie as half a win each way (and kept a tie when resampling), or
    Davidson's tie model (``ties="davidson"``), or Elo in the file's order with bootstrap
    intervals (``method="elo"``). Intervals resample the file's voters when it has a voter
    column (``cluster``: voter+prompt, voter, prompt or none; default the columns that
    vary).
    Raises TableError or RankingError."""
    from arena.analysis.vote_files import read_votes

    chosen = _method(method)
    votes = read_votes(path)
    cluster = votes.default_cluster() if cluster is None else cluster
    votes.units(cluster)
    if chosen.name == "elo":
        from arena.voting.live_elo import elo_params

        units = votes.units(cluster)
        return rank_elo(votes.names, votes.winners, votes.losers, ties=votes.ties,
                        units=units, rounds=rounds, rng=rng, params=elo_params(),
                        cluster=cluster)
    if chosen.name == "openskill":
        return rank_openskill(votes.names, votes.winners, votes.losers, ties=votes.ties)
    if ties == "davidson":
        return rank_davidson(votes.names, votes.counts(cluster), rounds=rounds, rng=rng,
                             cluster=cluster)
    return rank_counts(votes.names, votes.counts(cluster), rounds=rounds, rng=rng,
                       intervals=intervals, cluster=cluster)
