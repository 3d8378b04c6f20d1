"""A campaign's progress: votes against targets, the vote rate and what it implies, who the
voters are and how many pass the gold pairs. Each part is one grouped query."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from arena.analysis import published
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


def progress(campaign: Campaign, now: datetime | None = None,
             before: datetime | None = None) -> Progress:
    """Votes collected against votes needed per criterion and model pair, the recent vote
    rate and the time it implies to completion, the voters' demographics and how many pass
    the campaign's validation pairs. With ``before``: counting only the votes, skips and
    reports stamped before it, as of then (and without the count of gold pairs, which grows
    as voters answer them)."""
    now = before or now or utcnow()
    result = Progress(campaign)
    result.criteria = _per_criterion(campaign, before)
    result.votes_total = sum(c["collected"] for c in result.criteria)
    result.needed_total = sum(c["needed"] for c in result.criteria)
    result.pairs = _per_pair(campaign, before)
    for row in result.criteria:
        row["skipped"] = sum(p["skipped"] for p in result.pairs
                             if p["criterion"] == row["criterion"])
    result.skips_total = sum(p["skipped"] for p in result.pairs)
    result.most_skipped = _most_skipped(campaign, before)
    result.votes_per_hour = _rate(campaign, now)
    if result.votes_per_hour:
        remaining = max(result.needed_total - result.votes_total, 0)
        result.eta_hours = remaining / result.votes_per_hour
    result.voters, result.demographics = _voters(campaign, before)
    result.validation = _validation(campaign, before)
    return result


def _regular(campaign: Campaign):
    return [Comparison.campaign_id == campaign.id, Comparison.is_validation.is_(False)]


def _votes_in(campaign: Campaign, before: datetime | None = None):
    """The campaign's votes (stamped before ``before``, when given), as WHERE clauses."""
    clauses = [Vote.comparison_id.in_(select(Comparison.id)
                                      .where(Comparison.campaign_id == campaign.id))]
    if before is not None:
        clauses.append(Vote.created_at < before)
    return clauses


def _per_criterion(campaign: Campaign, before: datetime | None) -> list[dict]:
    votes, joined = published.votes_column(before)
    rows = {r[0]: r[1:] for r in db.session.execute(joined(
        select(Comparison.criterion, func.count(),
               func.coalesce(func.sum(at_most(votes, Comparison.target_votes)), 0),
               func.coalesce(func.sum(Comparison.target_votes), 0)))
        .where(*_regular(campaign)).group_by(Comparison.criterion))}
    return [{"criterion": c, "comparisons": rows.get(c, (0, 0, 0))[0],
             "collected": int(rows.get(c, (0, 0, 0))[1]),
             "needed": int(rows.get(c, (0, 0, 0))[2])} for c in campaign.criteria_list]


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


def _per_pair(campaign: Campaign, before: datetime | None) -> list[dict]:
    name_a, name_b, joined = _pair_models()
    votes, counted = published.votes_column(before)
    rows = db.session.execute(counted(joined(
        select(Comparison.criterion, name_a, name_b,
               func.sum(votes), func.sum(Comparison.target_votes))))
        .where(*_regular(campaign))
        .group_by(Comparison.criterion, name_a, name_b)
    ).all()
    got: Counter = Counter()
    wanted: Counter = Counter()
    for criterion, a, b, votes, need in rows:
        key = (criterion, *sorted((a, b)))
        got[key] += int(votes or 0)
        wanted[key] += int(need or 0)
    skipped = _skips_per_pair(campaign, before)
    return [{"criterion": k[0], "models": f"{k[1]} vs {k[2]}", "votes": got[k],
             "needed": wanted[k], "skipped": skipped[k]} for k in sorted(got)]


def _skipped_tasks(campaign: Campaign, before: datetime | None):
    closed = Task.skipped_at.is_not(None) if before is None else Task.skipped_at < before
    return (select(Task.comparison_id, func.count().label("skips"))
            .join(Comparison, Comparison.id == Task.comparison_id)
            .where(*_regular(campaign), closed)
            .group_by(Task.comparison_id).subquery())


def _skips_per_pair(campaign: Campaign, before: datetime | None) -> Counter:
    """Tasks closed without a vote, per criterion and model pair (models sorted by name, as
    in :func:`_per_pair`)."""
    skipped = _skipped_tasks(campaign, before)
    name_a, name_b, joined = _pair_models()
    query = joined(select(Comparison.criterion, name_a, name_b, func.sum(skipped.c.skips))
                   .join(skipped, skipped.c.comparison_id == Comparison.id)
                   ).group_by(Comparison.criterion, name_a, name_b)
    counts: Counter = Counter()
    for criterion, a, b, n in db.session.execute(query):
        counts[(criterion, *sorted((a, b)))] += int(n)
    return counts


def _most_skipped(campaign: Campaign, before: datetime | None,
                  limit: int = 10) -> list[dict]:
    """The comparisons closed without a vote most often (at least twice), with their votes
    and image reports: a pair nobody can decide on, or a broken image, shows up here."""
    skipped = _skipped_tasks(campaign, before)
    name_a, name_b, joined = _pair_models()
    votes, counted = published.votes_column(before)
    reported = [Task.comparison_id == Comparison.id]
    if before is not None:
        reported.append(ImageReport.created_at < before)
    reports = (select(func.count()).select_from(ImageReport)
               .join(Task, Task.id == ImageReport.task_id)
               .where(*reported).scalar_subquery())
    rows = db.session.execute(counted(joined(
        select(Comparison.id, Comparison.criterion, name_a, name_b, Prompt.text,
               votes, skipped.c.skips, reports, Comparison.paused)
        .join(skipped, skipped.c.comparison_id == Comparison.id)))
        .outerjoin(Prompt, Prompt.id == Comparison.prompt_id)
        .where(skipped.c.skips >= 2)
        .order_by(skipped.c.skips.desc(), Comparison.id).limit(limit)).all()
    return [{"id": cid, "criterion": criterion, "models": f"{a} vs {b}", "prompt": text or "",
             "votes": votes, "skipped": skips, "reported": reported, "paused": paused}
            for cid, criterion, a, b, text, votes, skips, reported, paused in rows]


def _rate(campaign: Campaign, now: datetime) -> float | None:
    """Votes per hour over the last day (over less, when the first came later)."""
    since = now - timedelta(hours=24)
    recent, first = db.session.execute(
        select(func.count(), func.min(Vote.created_at))
        .where(*_votes_in(campaign, now), Vote.created_at >= since)).one()
    if not recent or first is None:
        return None
    return recent / max((now - first).total_seconds() / 3600, 1 / 60)


def _voters(campaign: Campaign,
            before: datetime | None) -> tuple[int, dict[str, list[tuple[str, int]]]]:
    """How many voters took part, and their answers about themselves."""
    voter_ids = select(Vote.voter_id).where(*_votes_in(campaign, before)).distinct()
    total = db.session.scalar(select(func.count()).select_from(voter_ids.subquery()))
    demographics = {}
    for column, label in ((Voter.continent, "continent"), (Voter.age_group, "age group"),
                          (Voter.gender, "gender")):
        rows = db.session.execute(
            select(column, func.count()).where(Voter.id.in_(voter_ids))
            .group_by(column).order_by(func.count().desc())).all()
        demographics[label] = [(value or "not given", n) for value, n in rows]
    return total, demographics


def _validation(campaign: Campaign, before: datetime | None) -> dict:
    """Gold pairs (None with ``before``), and how many of the voters who met one never
    failed one."""
    failed_any = func.max(func.cast(Vote.correct.is_(False), db.Integer))
    per_voter = (select(Vote.voter_id, failed_any.label("failed"))
                 .where(*_votes_in(campaign, before), Vote.is_validation.is_(True))
                 .group_by(Vote.voter_id).subquery())
    answered, failed = db.session.execute(
        select(func.count(), func.coalesce(func.sum(per_voter.c.failed), 0))).one()
    pairs = None if before is not None else db.session.scalar(
        select(func.count()).select_from(Comparison).where(
            Comparison.campaign_id == campaign.id, Comparison.is_validation))
    return {"pairs": pairs, "voters": answered, "passed": answered - int(failed),
            "failed": int(failed)}
