"""Which votes count, aggregated in SQL for the ranking core.

A :class:`Slice` says which votes count; :func:`tally` turns them into the pure core's
:class:`~arena.ranking.PairCounts` with one ``GROUP BY (unit, winner, loser)``: the unit is
the voter and the prompt at once (the default: two-way clustering), the voter, the prompt,
or nothing (every vote its own), so intervals can resample what actually varies between
repetitions of the study. With margins (post-stratification,
raking) the voters' attributes join the grouping and every unit lands in one cell.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np
from flask import current_app
from sqlalchemy import case, func, select

from arena.analysis import margins as margin_rules
from arena.config import LANGUAGES
from arena.errors import Invalid
from arena.extensions import db
from arena.models import Campaign, Comparison, GenModel, Prompt, Vote, Voter
from arena.ranking import Calibration, PairCounts
from arena.voting.voters import AGE_GROUPS, CONTINENTS, GENDERS, countries

CLUSTERS = ("voter+prompt", "voter", "prompt", "none")
TWO_WAY = "voter+prompt"  # the default: the prompts a study used are a sample too


class RankingError(Invalid):
    """Bad ranking request (unknown criterion, method or slice value)."""


@dataclass(frozen=True)
class Slice:
    """Which votes count. Every field is optional; None means no restriction.

    ``campaign``: the votes on one campaign's pairs (by its name). ``trusted_only`` keeps
    voters who answered at least one validation pair and never failed one.
    ``include_flagged`` counts the votes that do not count by default (too fast, or cast by
    a voter who had failed gold pairs: see :mod:`arena.voting.flags`).
    """

    campaign: str | None = None
    age_group: str | None = None
    gender: str | None = None
    continent: str | None = None
    country: str | None = None
    category: str | None = None
    language: str | None = None  # of the voter's page (arena.web.i18n)
    since: datetime | None = None
    until: datetime | None = None
    trusted_only: bool = False
    include_flagged: bool = False
    # Published figures (arena.analysis.published): only the votes counted in public figures
    # before this time (arena.voting.trust), and the voters' trust as their gold answers
    # before it made it. Not a visitor's choice.
    as_of: datetime | None = None

    def __post_init__(self):
        checks = [
            ("age_group", self.age_group, AGE_GROUPS),
            ("gender", self.gender, GENDERS),
            ("continent", self.continent, tuple(CONTINENTS)),
            ("language", self.language, tuple(LANGUAGES)),
        ]
        for name, value, allowed in checks:
            if value is not None and value not in allowed:
                raise RankingError(f"{name} must be one of {', '.join(allowed)}, not {value!r}",
                                   field=name)
        if self.country is not None and self.country not in countries():
            raise RankingError(f"unknown ISO 3166 alpha-2 country {self.country!r}",
                               field="country")
        if self.since and self.until and self.since >= self.until:
            raise RankingError("since must be before until", field="since")

    def active(self) -> dict:
        return {k: v for k, v in asdict(self).items()
                if v not in (None, False) and k != "as_of"}

    def published_at(self, as_of: datetime) -> Slice:
        """This slice as the public pages count it: the votes before ``as_of``, the voters'
        trust then, and whole days (``since`` back to its day's start, ``until`` on to the
        next day's): a window of milliseconds around one's own answer would tell it apart."""
        return replace(self, as_of=as_of, since=_whole_day(self.since),
                       until=_whole_day(self.until, later=True))


def _whole_day(moment: datetime | None, later: bool = False) -> datetime | None:
    """The start of ``moment``'s day, or with ``later`` the first day start not before it."""
    if moment is None:
        return None
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return day + timedelta(days=1) if later and day != moment else day


SLICE_ARGS = ("campaign", "age_group", "gender", "continent", "country", "category", "language",
              "since", "until", "trusted_only", "include_flagged")
FLAG_ARGS = ("trusted_only", "include_flagged")


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
                raise RankingError(f"{name}: use a date like 2026-11-01 (ISO format), not "
                                   f"{raw!r}", field=name) from exc
        elif name in FLAG_ARGS:
            values[name] = raw.lower() in ("1", "true", "yes", "on")
        else:
            values[name] = raw.upper() if name in ("country", "continent") else raw
    return Slice(**values)


def vote_filter(criterion: str, slice_: Slice, join_voter: bool = False,
                join_prompt: bool = False):
    """The WHERE clause and joins for counted votes of ``criterion`` in ``slice_``."""
    query = select(Vote.winner_model_id, Vote.loser_model_id).where(
        Vote.criterion == criterion,
        Vote.is_validation.is_(False),
        Vote.winner_model_id.is_not(None),
        Vote.loser_model_id.is_not(None),
    )
    if not slice_.include_flagged:
        query = query.where(Vote.flags == 0)
    demographic = {"age_group": slice_.age_group, "gender": slice_.gender,
                   "continent": slice_.continent, "country": slice_.country}
    if join_voter or any(v is not None for v in demographic.values()) or slice_.trusted_only:
        query = query.join(Voter, Voter.id == Vote.voter_id)
        for column, value in demographic.items():
            if value is not None:
                query = query.where(getattr(Voter, column) == value)
        if slice_.trusted_only and slice_.as_of is None:
            query = query.where(Voter.validations_passed > 0, Voter.validations_failed == 0)
        elif slice_.trusted_only:
            query = query.where(Voter.id.in_(trusted_before(slice_.as_of)))
    if slice_.category is not None or slice_.campaign is not None or join_prompt:
        query = query.join(Comparison, Comparison.id == Vote.comparison_id)
    if slice_.campaign is not None:
        query = query.where(Comparison.campaign_id == select(Campaign.id).where(
            Campaign.name == slice_.campaign).scalar_subquery())
    if slice_.category is not None:
        query = (query.join(Prompt, Prompt.id == Comparison.prompt_id)
                 .where(Prompt.category == slice_.category))
    if slice_.language is not None:
        query = query.where(Vote.language == slice_.language)
    if slice_.since is not None:
        query = query.where(Vote.created_at >= slice_.since)
    if slice_.until is not None:
        query = query.where(Vote.created_at < slice_.until)
    if slice_.as_of is not None:  # (counted in public figures before it)
        query = query.where(Vote.public_at < slice_.as_of)
    return query


def trusted_before(as_of: datetime):
    """The voters who had answered a gold pair before ``as_of`` and never wrongly: trust as
    it stood then (the voters' counters move with every gold answer since)."""
    wrong = func.max(case((Vote.correct.is_(False), 1), else_=0))
    return (select(Vote.voter_id)
            .where(Vote.is_validation.is_(True), Vote.created_at < as_of)
            .group_by(Vote.voter_id).having(wrong == 0))


def models() -> tuple[list[int], list[str]]:
    """Every registered model's id and name, by name."""
    rows = db.session.execute(select(GenModel.id, GenModel.name).order_by(GenModel.name)).all()
    return [m.id for m in rows], [m.name for m in rows]


def win_matrix(criterion: str, slice_: Slice = Slice()) -> tuple[list[int], list[str], np.ndarray]:
    """(model ids, names, wins) for every registered model; ``wins[i, j]`` from one GROUP BY."""
    result = tally(criterion, slice_, cluster="none")
    return result.ids, result.names, result.counts.matrix()


@dataclass
class Tally:
    """The counted votes of one criterion and slice, ready for the ranking core."""

    ids: list[int]
    names: list[str]
    counts: PairCounts
    cluster: str
    calibration: Calibration | None = None
    margins: tuple[margin_rules.Margin, ...] = ()
    flags: list[str] = field(default_factory=list)
    voters: np.ndarray | None = None  # clustered by voter: each unit's voter id
    prompts: np.ndarray | None = None  # clustered by prompt: each unit's prompt id

    @property
    def resample(self) -> str:
        return "vote" if self.cluster == "none" else "unit"


def tally(criterion: str, slice_: Slice = Slice(), *, cluster: str = TWO_WAY,
          margins=()) -> Tally:
    """Aggregate the votes of ``criterion`` in ``slice_`` per ``cluster`` unit (and per
    margin cell when ``margins`` are given: see :mod:`arena.analysis.margins`).

    Raises
    ------
    RankingError
        Unknown cluster. MarginError for a bad margin.
    """
    if cluster not in CLUSTERS:
        raise RankingError(f"cluster must be one of {', '.join(CLUSTERS)}", field="cluster")
    margins = margin_rules.margins_from(margins)
    flags = []
    if cluster == TWO_WAY and margins:
        cluster = "voter"
        flags.append("reweighted: intervals cluster by voter only (reweighting takes one way)")
    ids, names = models()
    unit_columns = {TWO_WAY: [Vote.voter_id, Comparison.prompt_id], "voter": [Vote.voter_id],
                    "prompt": [Comparison.prompt_id]}.get(cluster, [])
    keys = unit_columns + [getattr(Voter, m.attribute) for m in margins]
    base = (vote_filter(criterion, slice_, join_voter=bool(margins),
                        join_prompt=cluster in ("prompt", TWO_WAY))
            .add_columns(*[c.label(f"k{i}") for i, c in enumerate(keys)]).subquery())
    grouping = [base.c[f"k{i}"] for i in range(len(keys))]
    grouping += [base.c.winner_model_id, base.c.loser_model_id]
    rows = db.session.execute(select(*grouping, func.count()).group_by(*grouping)).all()
    lookup = {model_id: i for i, model_id in enumerate(ids)}
    rows = [r for r in rows if r[-3] != r[-2] and r[-3] in lookup and r[-2] in lookup]
    columns = list(zip(*rows, strict=True)) if rows else [()] * (len(keys) + 3)
    winners = np.array([lookup[w] for w in columns[-3]], dtype=np.int64)
    losers = np.array([lookup[lo] for lo in columns[-2]], dtype=np.int64)
    counts = np.array(columns[-1], dtype=float)
    labels = [np.array([-1 if u is None else u for u in columns[k]], dtype=np.int64)
              for k in range(len(unit_columns))]
    units = labels[0] if labels else np.zeros(len(rows), dtype=np.int64)
    if cluster == TWO_WAY:
        found = PairCounts.crossed(len(ids), *labels, winners, losers, counts)
    else:
        found = PairCounts.from_rows(len(ids), _renumber(units), winners, losers, counts)
    result = Tally(ids, names, found, cluster, flags=flags,
                   voters=np.unique(units) if cluster == "voter" else None,
                   prompts=np.unique(units) if cluster == "prompt" else None)
    if margins:
        offset = len(unit_columns)
        codes = np.array([[_code(m, row[offset + k]) for k, m in enumerate(margins)]
                          for row in rows], dtype=np.int64).reshape(len(rows), len(margins))
        _calibrate(result, criterion, slice_, margins, codes, units, winners, losers, counts)
    return result


def _renumber(labels: np.ndarray) -> np.ndarray:
    return np.unique(labels, return_inverse=True)[1].ravel().astype(np.int64)


def _code(margin: margin_rules.Margin, value) -> int:
    names = margin_rules.CATEGORIES[margin.attribute]
    return names.index(value) if value in names else -1


def _calibrate(result: Tally, criterion, slice_, margins, codes, units, winners, losers,
               counts) -> None:
    """Restrict ``result`` to voters with every margin attribute, put each unit in its cell
    and build the raking (min cell size from ``POSTSTRAT_MIN_VOTERS``)."""
    known = (codes >= 0).all(axis=1)
    left_out = counts[~known].sum()
    attributes = " and ".join(m.attribute.replace("_", " ") for m in margins)
    if left_out:
        result.flags.append(f"reweighted: {left_out:.0f} votes from voters who did not give "
                            f"their {attributes} left out")
    codes, units = codes[known], units[known]
    cells, cell_of_row = np.unique(codes, axis=0, return_inverse=True)
    cell_of_row = cell_of_row.ravel()
    if result.cluster != "voter":  # a prompt's (or the crowd's) votes split by cell
        units = units * max(len(cells), 1) + cell_of_row
    unit_index = _renumber(units)
    stratum = np.zeros(int(unit_index.max()) + 1 if unit_index.size else 0, dtype=np.int64)
    stratum[unit_index] = cell_of_row
    result.counts = PairCounts.from_rows(len(result.ids), unit_index, winners[known],
                                         losers[known], counts[known], stratum=stratum)
    voters, squares = _voters_per_cell(criterion, slice_, margins, cells)
    votes = np.bincount(cell_of_row, weights=counts[known], minlength=len(cells))
    cfg = current_app.config
    result.calibration, flags = margin_rules.calibration(
        margins, cells, votes, voters, cfg["POSTSTRAT_MIN_VOTES"], cfg["POSTSTRAT_MIN_VOTERS"],
        cfg["POSTSTRAT_MAX_UNREPRESENTED"], squares)
    result.margins = margins
    result.flags += flags


def _voters_per_cell(criterion, slice_, margins, cells) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, its voters and the sum of their votes squared (what they are worth of equal
    votes: :func:`arena.ranking.strata.effective_voters`)."""
    attributes = [getattr(Voter, m.attribute) for m in margins]
    base = (vote_filter(criterion, slice_, join_voter=True)
            .add_columns(Vote.voter_id, *[a.label(f"m{i}") for i, a in enumerate(attributes)])
            .subquery())
    keys = [base.c[f"m{i}"] for i in range(len(margins))]
    each = (select(*keys, func.count().label("cast")).group_by(*keys, base.c.voter_id)
            .subquery())
    keys = [each.c[f"m{i}"] for i in range(len(margins))]
    rows = db.session.execute(select(*keys, func.count(), func.sum(each.c.cast * each.c.cast))
                              .group_by(*keys)).all()
    index = {tuple(cell): c for c, cell in enumerate(cells.tolist())}
    voters, squares = np.zeros(len(cells)), np.zeros(len(cells))
    for *values, count, square in rows:
        code = tuple(_code(m, v) for m, v in zip(margins, values, strict=True))
        if code in index:
            voters[index[code]] += count
            squares[index[code]] += float(square or 0)
    return voters, squares
