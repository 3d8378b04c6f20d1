"""A campaign's progress: votes against targets, the vote rate and what it implies, who the
voters are and how many pass the gold pairs. Each part is one grouped query."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy import case, func, literal, or_, select
from sqlalchemy.orm import aliased

from arena import criteria
from arena.analysis import published, rollups
from arena.extensions import db
from arena.infra.database import at_most
from arena.models import (
    Campaign,
    Comparison,
    GenModel,
    Image,
    ImageReport,
    Prompt,
    Task,
    Vote,
    Voter,
    utcnow,
)
from arena.voting.flags import NAMES as FLAG_NAMES


@dataclass
class Progress:
    campaign: Campaign
    criteria: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    # the comparisons voters most often closed without a vote ("Can't decide", a report)
    most_skipped: list[dict] = field(default_factory=list)
    skips_total: int = 0
    votes_total: int = 0
    needed_total: int = 0
    votes_per_hour: float | None = None
    eta_hours: float | None = None
    voters: int = 0
    demographics: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    validation: dict = field(default_factory=dict)
    # the campaign's votes that count nowhere, by flag: [flag name, votes, voters]
    not_counted: list[list] = field(default_factory=list)
    # its votes that count in no public figure yet, by why: [trust | review, votes, voters]
    waiting: list[list] = field(default_factory=list)
    as_of: datetime | None = None  # published figures: when they were taken


def public_progress(campaign: Campaign) -> Progress:
    """The campaign's progress as its public page shows it: counted to the period's cut-off
    (:mod:`arena.analysis.published`), so that no vote moves it before the next period."""
    def compute(before: datetime) -> dict:
        report = progress(campaign, before=before)
        return {f.name: getattr(report, f.name) for f in fields(report)
                if f.name not in ("campaign", "as_of")}

    figures = published.figures("progress", campaign.id, compute,
                                load=lambda payload: Progress(campaign, **payload))
    figures.payload.as_of = figures.as_of
    return figures.payload


def take_public_figures() -> int:
    """Take this period's public figures (the online Elo, the campaign list, each published
    campaign's progress, each criterion's lead counts and agreement) where no request has
    yet, so that none waits for them: run after each rollup refresh (``arena votes rollup``).
    Returns the campaigns seen."""
    from arena.analysis.agreement import take_agreement
    from arena.analysis.leaderboard import take_leads
    from arena.campaigns.campaigns import summaries

    published.elo()
    summaries(public=True)
    for criterion in criteria.names():
        take_leads(criterion)
        take_agreement(criterion)
    listed = db.session.scalars(select(Campaign).where(Campaign.published_at.is_not(None)))
    return sum(1 for campaign in listed if public_progress(campaign))


def progress(campaign: Campaign, now: datetime | None = None,
             before: datetime | None = None) -> Progress:
    """Votes collected against votes needed per criterion and model pair, the recent vote
    rate and the time it implies to completion, the voters' demographics and how many pass
    the campaign's validation pairs. With ``before``: counting only the votes, skips and
    reports stamped before it, as of then (and without the count of gold pairs, which grows
    as voters answer them).

    The votes are counted per comparison and per voter from the rollups
    (:mod:`arena.analysis.rollups`) and the log past them, so the cost follows the
    campaign's comparisons and voters, not its votes (benchmarks/scale.py)."""
    now = before or now or utcnow()
    result = Progress(campaign)
    result.pairs, result.criteria = _per_pair(campaign, before)
    result.votes_total = sum(c["collected"] for c in result.criteria)
    result.needed_total = sum(c["needed"] for c in result.criteria)
    result.skips_total = sum(c["skipped"] for c in result.criteria)
    result.most_skipped = _most_skipped(campaign, before)
    _mark_settled(campaign, result, before)
    people = _voters(campaign, now, live=before is None)
    result.voters, result.demographics, result.validation = (
        people.voters, people.demographics, people.validation)
    if before is None:
        result.validation["pairs"] = db.session.scalar(
            select(func.count()).select_from(Comparison).where(
                Comparison.campaign_id == campaign.id, Comparison.is_validation))
    result.not_counted = _not_counted(campaign, now)
    result.waiting = _waiting(campaign, now)
    result.votes_per_hour = people.rate
    if result.votes_per_hour:
        remaining = max(result.needed_total - result.votes_total, 0)
        result.eta_hours = remaining / result.votes_per_hour
    return result


def _mark_settled(campaign: Campaign, result: Progress, before: datetime | None) -> None:
    """For an active or early-stopping campaign, say per criterion and model pair whether
    its order is settled, about how many more votes it needs, and which models' places are
    settled (each surely behind the one above it and ahead of the one below), best first
    (arena.campaigns.allocation)."""
    from arena.campaigns.allocation import states

    names = {m.id: m.name for m in campaign.models}
    found = {}
    for criterion, (model_ids, state) in states(campaign, before).items():
        pairs = {tuple(sorted((names[model_ids[i]], names[model_ids[j]])))
                 for i, j in zip(*np.nonzero(state.settled), strict=True)}
        order = state.order
        placed = [[k + 1, names[model_ids[m]]] for k, m in enumerate(order)
                  if (k == 0 or state.settled[order[k - 1], m])
                  and (k == len(order) - 1 or state.settled[m, order[k + 1]])]
        found[criterion] = (state, pairs, placed)
    for row in result.criteria:
        if row["criterion"] in found:
            state, _, placed = found[row["criterion"]]
            row["settled"], row["to_settle"], row["placed"] = state.done, state.to_settle, placed
    for row in result.pairs:
        if row["criterion"] in found:
            row["settled"] = tuple(row["models"].split(" vs ")) in found[row["criterion"]][1]


def _regular(campaign: Campaign):
    return [Comparison.campaign_id == campaign.id, Comparison.is_validation.is_(False)]


def _in_campaign(campaign: Campaign):
    """The campaign's votes, as a WHERE clause."""
    return Vote.comparison_id.in_(select(Comparison.id)
                                  .where(Comparison.campaign_id == campaign.id))


def _pair_models():
    """The two models of a comparison's images, as name columns, and the joins that reach
    them from ``Comparison``."""
    image_a, image_b = aliased(Image), aliased(Image)
    model_a, model_b = aliased(GenModel), aliased(GenModel)

    def joined(query):
        return (query.join(image_a, image_a.id == Comparison.image_a_id)
                .join(image_b, image_b.id == Comparison.image_b_id)
                .join(model_a, model_a.id == image_a.model_id)
                .join(model_b, model_b.id == image_b.model_id))

    return model_a.name, model_b.name, joined


def _per_pair(campaign: Campaign, before: datetime | None) -> tuple[list[dict], list[dict]]:
    """Per criterion and model pair (models sorted by name), then per criterion: the votes
    (per criterion: those towards the targets, each comparison's at most its target), the
    votes needed and the tasks closed without a vote. One statement."""
    name_a, name_b, joined = _pair_models()
    votes, counted = rollups.votes_column(before, Comparison.campaign_id == campaign.id)
    skipped = _skipped_tasks(campaign, before)
    skips = func.coalesce(skipped.c.skips, 0)
    # (the campaign's target, not each comparison's: active allocation moves those)
    target = literal(campaign.target_votes)
    rows = db.session.execute(counted(joined(
        select(Comparison.criterion, name_a, name_b, func.count(),
               func.sum(at_most(votes, target)), func.sum(votes),
               func.count() * target, func.sum(skips))))
        .outerjoin(skipped, skipped.c.comparison_id == Comparison.id)
        .where(*_regular(campaign))
        .group_by(Comparison.criterion, name_a, name_b)).all()
    pairs: dict[tuple, Counter] = {}
    criteria = {c: Counter() for c in campaign.criteria_list}
    for criterion, a, b, comparisons, collected, got, need, skip in rows:
        pair = pairs.setdefault((criterion, *sorted((a, b))), Counter())
        pair.update(votes=int(got or 0), needed=int(need or 0), skipped=int(skip or 0))
        if criterion in criteria:
            criteria[criterion].update(comparisons=comparisons, collected=int(collected or 0),
                                       needed=int(need or 0), skipped=int(skip or 0))
    return ([{"criterion": k[0], "models": f"{k[1]} vs {k[2]}", "votes": v["votes"],
              "needed": v["needed"], "skipped": v["skipped"]} for k, v in sorted(pairs.items())],
            [{"criterion": c, "comparisons": v["comparisons"], "collected": v["collected"],
              "needed": v["needed"], "skipped": v["skipped"]} for c, v in criteria.items()])


def _skipped_tasks(campaign: Campaign, before: datetime | None):
    """Tasks closed without a vote (before ``before``), per comparison of the campaign:
    read through the index of skipped tasks alone (``ix_task_skipped``)."""
    closed = [Task.skipped_at.is_not(None)]
    if before is not None:
        closed.append(Task.skipped_at < before)
    return (select(Task.comparison_id, func.count().label("skips"))
            .join(Comparison, Comparison.id == Task.comparison_id)
            .where(*_regular(campaign), *closed)
            .group_by(Task.comparison_id).subquery())


def _most_skipped(campaign: Campaign, before: datetime | None,
                  limit: int = 10) -> list[dict]:
    """The comparisons closed without a vote most often (at least twice), with their votes
    and image reports: a pair nobody can decide on, or a broken image, shows up here."""
    skipped = _skipped_tasks(campaign, before)
    name_a, name_b, joined = _pair_models()
    reported = [Task.comparison_id == Comparison.id]
    if before is not None:
        reported.append(ImageReport.created_at < before)
    reports = (select(func.count()).select_from(ImageReport)
               .join(Task, Task.id == ImageReport.task_id)
               .where(*reported).scalar_subquery())
    rows = db.session.execute(joined(
        select(Comparison.id, Comparison.criterion, name_a, name_b, Prompt.text,
               Comparison.votes_count, skipped.c.skips, reports, Comparison.paused)
        .join(skipped, skipped.c.comparison_id == Comparison.id))
        .outerjoin(Prompt, Prompt.id == Comparison.prompt_id)
        .where(skipped.c.skips >= 2)
        .order_by(skipped.c.skips.desc(), Comparison.id).limit(limit)).all()
    votes = {row[0]: row[5] for row in rows}
    if before is not None and rows:  # (their votes before the cut-off: one read of the table)
        ids = list(votes)
        counted, joined_counts = rollups.votes_column(before, Comparison.id.in_(ids))
        votes = dict(db.session.execute(joined_counts(
            select(Comparison.id, counted).where(Comparison.id.in_(ids)))).all())
    return [{"id": cid, "criterion": criterion, "models": f"{a} vs {b}", "prompt": text or "",
             "votes": votes[cid], "skipped": skips, "reported": reported, "paused": paused}
            for cid, criterion, a, b, text, _, skips, reported, paused in rows]


@dataclass
class _People:
    voters: int
    demographics: dict[str, list[tuple[str, int]]]
    validation: dict
    rate: float | None


def _voters(campaign: Campaign, now: datetime, live: bool = False) -> _People:
    """Over the campaign's votes counted in public figures before ``now`` (with ``live``,
    every vote: those waiting for their voters' trust too), from the rollup and the log past
    it (:func:`arena.analysis.rollups.campaign_voters`): how many voters took part and their
    answers about themselves; how many met a gold pair and how many of those never failed
    one; the votes per hour over the last day (over less, when the first came later)."""
    per_voter = rollups.campaign_voters(campaign.id, now, waiting=live)
    rows = db.session.execute(
        select(Voter.continent, Voter.age_group, Voter.gender, func.count(),
               func.sum(case((per_voter.c.gold > 0, 1), else_=0)),
               func.sum(case((per_voter.c.failed > 0, 1), else_=0)))
        .join(per_voter, per_voter.c.voter_id == Voter.id)
        .group_by(Voter.continent, Voter.age_group, Voter.gender)).all()
    answers = {label: Counter() for label in ("continent", "age group", "gender")}
    for continent, age_group, gender, n, *_ in rows:
        for label, value in zip(answers, (continent, age_group, gender), strict=True):
            answers[label][value or "not given"] += n
    gold = sum(int(row[4] or 0) for row in rows)
    failed = sum(int(row[5] or 0) for row in rows)
    return _People(
        voters=sum(row[3] for row in rows),
        demographics={label: sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                      for label, counts in answers.items()},
        validation={"pairs": None, "voters": gold, "passed": gold - failed,
                    "failed": failed},
        rate=_rate(campaign, now))


def _not_counted(campaign: Campaign, now: datetime) -> list[list]:
    """The campaign's flagged votes stamped before ``now``, per flag with their voters (a
    vote with two flags under each): found through the ranking index, whose leading
    columns hold the flags (flagged votes are few)."""
    bits = list(FLAG_NAMES)
    columns = []
    for bit in bits:
        flagged = Vote.flags.op("&")(bit) != 0
        columns += [func.count(case((flagged, 1))),
                    func.count(func.distinct(case((flagged, Vote.voter_id))))]
    row = db.session.execute(
        select(*columns).where(Vote.criterion.in_(criteria.names()),
                               Vote.is_validation.in_([False, True]), Vote.flags > 0,
                               Vote.created_at < now, _in_campaign(campaign))).one()
    return [[FLAG_NAMES[bit], row[2 * k], row[2 * k + 1]] for k, bit in enumerate(bits)
            if row[2 * k]]


def _waiting(campaign: Campaign, now: datetime) -> list[list]:
    """The campaign's unflagged votes stamped before ``now`` that count in no public figure
    then: their voters had not earned trust, or a cohort review holds them
    (:mod:`arena.voting.trust`): ``[why, votes, voters]`` per reason with any."""
    waits = or_(Vote.public_at.is_(None), Vote.public_at >= now)
    reviewed = Voter.review_id.is_not(None)
    row = db.session.execute(
        select(*[column for under in (False, True) for column in (
            func.count(case((reviewed.is_(under), 1))),
            func.count(func.distinct(case((reviewed.is_(under), Vote.voter_id)))))])
        .join(Voter, Voter.id == Vote.voter_id)
        .where(Vote.criterion.in_(criteria.names()), Vote.flags == 0, waits, Vote.created_at < now,
               _in_campaign(campaign))).one()
    return [[why, row[2 * k], row[2 * k + 1]] for k, why in enumerate(("trust", "review"))
            if row[2 * k]]


def _rate(campaign: Campaign, now: datetime) -> float | None:
    """The campaign's votes per hour over the day before ``now`` (over less, when its first
    vote of the day came later), or None without any."""
    count, first = db.session.execute(
        select(func.count(), func.min(Vote.created_at))
        .where(_in_campaign(campaign), Vote.criterion.in_(criteria.names()),
               Vote.created_at >= now - timedelta(hours=24), Vote.created_at < now)).one()
    if not count:
        return None
    return count / max((now - first).total_seconds() / 3600, 1 / 60)
