"""Campaigns: define a benchmark, publish it, follow its progress.

A campaign names a prompt set, criteria, the models taking part, how many images per model
and prompt count (default 4) and how many votes each comparison wants (default 26). Its
comparisons are built when it is published and again whenever a model joins or a taking-part
model uploads images, so adding a model or images later adds only the new pairs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from . import comparisons, images, prompts
from .config import CRITERIA
from .database import at_most
from .extensions import db
from .models import (
    Campaign,
    Comparison,
    GenModel,
    Image,
    Prompt,
    PromptSet,
    Vote,
    Voter,
    campaign_models,
    utcnow,
)

SHIPPED_SETS = {"DrawBench": "DrawBench.csv", "PartiPrompts": "PartiPrompts.tsv"}


class CampaignError(ValueError):
    pass


def _prompt_set(name: str) -> PromptSet:
    found = db.session.scalar(select(PromptSet).where(PromptSet.name == name))
    if found is not None:
        return found
    if name in SHIPPED_SETS:
        from .demo import shipped_prompt_file

        return prompts.import_prompts(shipped_prompt_file(SHIPPED_SETS[name]), name=name)
    raise CampaignError(f"no prompt set {name!r} (import it: arena import-prompts FILE)")


def _models(names: list[str]) -> list[GenModel]:
    found = list(db.session.scalars(select(GenModel).where(GenModel.name.in_(names))))
    missing = sorted(set(names) - {m.name for m in found})
    if missing:
        raise CampaignError(f"no model named {', '.join(missing)}")
    return found


def get_campaign(name: str) -> Campaign:
    campaign = db.session.scalar(select(Campaign).where(Campaign.name == name))
    if campaign is None:
        raise CampaignError(f"no campaign named {name!r}")
    return campaign


def create_campaign(name: str, prompt_set: str, model_names: list[str],
                    criteria: list[str] | None = None, images_per_model: int = 4,
                    target_votes: int = 26) -> Campaign:
    """Define a campaign (unpublished) and commit. Raises CampaignError on bad input."""
    name = (name or "").strip()
    criteria = list(criteria or CRITERIA)
    if not name:
        raise CampaignError("a campaign needs a name")
    if db.session.scalar(select(Campaign).where(Campaign.name == name)) is not None:
        raise CampaignError(f"campaign {name!r} exists already")
    unknown = [c for c in criteria if c not in CRITERIA]
    if unknown or not criteria:
        raise CampaignError(f"criteria must be among {', '.join(CRITERIA)}")
    if not 1 <= images_per_model <= 16:
        raise CampaignError("images per model must be between 1 and 16")
    if not 1 <= target_votes <= 10_000:
        raise CampaignError("target votes must be between 1 and 10000")
    campaign = Campaign(name=name, prompt_set=_prompt_set(prompt_set),
                        criteria=",".join(criteria), images_per_model=images_per_model,
                        target_votes=target_votes, models=_models(model_names))
    db.session.add(campaign)
    db.session.commit()
    return campaign


def _refresh(campaign: Campaign, prompt_ids: list[int] | None = None) -> int:
    if campaign.published_at is None:
        return 0
    if prompt_ids is None:
        prompt_ids = list(db.session.scalars(
            select(Prompt.id).where(Prompt.prompt_set_id == campaign.prompt_set_id)))
    return comparisons.build_comparisons(
        prompt_ids, criteria=campaign.criteria_list, target_votes=campaign.target_votes,
        model_ids=[m.id for m in campaign.models], images_per_model=campaign.images_per_model,
        campaign_id=campaign.id)


def publish(campaign: Campaign) -> int:
    """Publish and build the comparisons; returns how many were added. Commits."""
    if len(campaign.models) < 2:
        raise CampaignError("a campaign needs at least two models")
    if campaign.published_at is None:
        campaign.published_at = utcnow()
    added = _refresh(campaign)
    db.session.commit()
    return added


def add_model(campaign: Campaign, model_name: str) -> int:
    """Let a model join; a published campaign gets only the new pairs. Commits."""
    (model,) = _models([model_name])
    if model in campaign.models:
        raise CampaignError(f"{model_name} already takes part")
    campaign.models.append(model)
    db.session.flush()
    added = _refresh(campaign)
    db.session.commit()
    return added


def on_new_image(model_id: int, prompt_id: int) -> int:
    """Add the pairs a new image makes possible in every published campaign that has this
    model and this prompt (not committed). Returns the number added."""
    live = db.session.scalars(
        select(Campaign)
        .join(campaign_models, campaign_models.c.campaign_id == Campaign.id)
        .join(Prompt, Prompt.prompt_set_id == Campaign.prompt_set_id)
        .where(campaign_models.c.model_id == model_id, Prompt.id == prompt_id,
               Campaign.published_at.is_not(None)))
    return sum(_refresh(c, [prompt_id]) for c in live)


def add_gold_pair(campaign: Campaign, criterion: str, correct: bytes, wrong: bytes,
                  prompt_id: int | None = None, names=("correct", "wrong")) -> Comparison:
    """A validation pair from two image files and the right answer. Commits.
    Raises CampaignError (bad criterion, prompt outside the set) or ImageRejected."""
    if criterion not in campaign.criteria_list:
        raise CampaignError(f"{criterion} is not a criterion of {campaign.name}")
    if prompt_id is not None:
        prompt = db.session.get(Prompt, prompt_id)
        if prompt is None or prompt.prompt_set_id != campaign.prompt_set_id:
            raise CampaignError(f"prompt {prompt_id} is not in {campaign.prompt_set.name}")
    good = images.store(images.decode(correct, filename=names[0]), model_id=None,
                        prompt_id=prompt_id)
    bad = images.store(images.decode(wrong, filename=names[1]), model_id=None,
                       prompt_id=prompt_id)
    db.session.flush()
    if good.id == bad.id:
        raise CampaignError("the two images are identical")
    pair = comparisons.add_validation_pair(criterion, good, bad, prompt_id, campaign.id)
    db.session.commit()
    return pair


# --- Progress ------------------------------------------------------------------------------


@dataclass
class Progress:
    campaign: Campaign
    criteria: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    votes_total: int = 0
    needed_total: int = 0
    votes_last_hour: int = 0
    votes_per_hour: float | None = None
    eta_hours: float | None = None
    voters: int = 0
    demographics: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    validation: dict = field(default_factory=dict)


def progress(campaign: Campaign, now=None) -> Progress:
    """Votes collected against votes needed per criterion and model pair, the recent vote
    rate and the time it implies to completion, the voters' demographics and how many pass
    the campaign's validation pairs."""
    now = now or utcnow()
    regular = [Comparison.campaign_id == campaign.id, Comparison.is_validation.is_(False)]
    result = Progress(campaign)
    for criterion in campaign.criteria_list:
        n, collected, needed = db.session.execute(
            select(func.count(),
                   func.coalesce(func.sum(at_most(Comparison.votes_count,
                                                  Comparison.target_votes)), 0),
                   func.coalesce(func.sum(Comparison.target_votes), 0))
            .where(Comparison.criterion == criterion, *regular)).one()
        result.criteria.append({"criterion": criterion, "comparisons": n,
                                "collected": int(collected), "needed": int(needed)})
    result.votes_total = sum(c["collected"] for c in result.criteria)
    result.needed_total = sum(c["needed"] for c in result.criteria)

    image_a, image_b = aliased(Image), aliased(Image)
    model_a, model_b = aliased(GenModel), aliased(GenModel)
    pair_rows = db.session.execute(
        select(Comparison.criterion, model_a.name, model_b.name,
               func.sum(Comparison.votes_count), func.sum(Comparison.target_votes))
        .join(image_a, image_a.id == Comparison.image_a_id)
        .join(image_b, image_b.id == Comparison.image_b_id)
        .join(model_a, model_a.id == image_a.model_id)
        .join(model_b, model_b.id == image_b.model_id)
        .where(*regular)
        .group_by(Comparison.criterion, model_a.name, model_b.name)
    ).all()
    merged: Counter = Counter()
    wanted: Counter = Counter()
    for criterion, a, b, got, need in pair_rows:
        key = (criterion, *sorted((a, b)))
        merged[key] += int(got or 0)
        wanted[key] += int(need or 0)
    result.pairs = [{"criterion": k[0], "models": f"{k[1]} vs {k[2]}", "votes": merged[k],
                     "needed": wanted[k]} for k in sorted(merged)]

    in_campaign = select(Comparison.id).where(Comparison.campaign_id == campaign.id)
    votes = select(Vote).where(Vote.comparison_id.in_(in_campaign))
    since = now - timedelta(hours=24)
    recent = db.session.scalar(select(func.count()).select_from(
        votes.where(Vote.created_at >= since).subquery()))
    first = db.session.scalar(select(func.min(Vote.created_at)).where(
        Vote.comparison_id.in_(in_campaign), Vote.created_at >= since))
    result.votes_last_hour = db.session.scalar(select(func.count()).select_from(
        votes.where(Vote.created_at >= now - timedelta(hours=1)).subquery()))
    if recent and first is not None:
        hours = max((now - first).total_seconds() / 3600, 1 / 60)
        result.votes_per_hour = recent / hours
        remaining = max(result.needed_total - result.votes_total, 0)
        result.eta_hours = remaining / result.votes_per_hour

    voter_ids = select(Vote.voter_id).where(Vote.comparison_id.in_(in_campaign)).distinct()
    result.voters = db.session.scalar(select(func.count()).select_from(voter_ids.subquery()))
    for column, label in ((Voter.continent, "continent"), (Voter.age_group, "age group"),
                          (Voter.gender, "gender")):
        rows = db.session.execute(
            select(column, func.count()).where(Voter.id.in_(voter_ids))
            .group_by(column).order_by(func.count().desc())).all()
        result.demographics[label] = [(value or "not given", n) for value, n in rows]

    gold = select(Vote.voter_id, func.sum(func.cast(Vote.correct.is_(False), db.Integer))
                  .label("failed")).where(
        Vote.comparison_id.in_(in_campaign), Vote.is_validation.is_(True)
    ).group_by(Vote.voter_id).subquery()
    answered = db.session.scalar(select(func.count()).select_from(gold))
    failed = db.session.scalar(select(func.count()).select_from(gold).where(gold.c.failed > 0))
    result.validation = {"pairs": db.session.scalar(select(func.count()).select_from(
        Comparison).where(Comparison.campaign_id == campaign.id, Comparison.is_validation)),
        "voters": answered, "passed": answered - failed, "failed": failed}
    return result

