"""Campaigns: define a benchmark, publish it, follow its progress.

A campaign names a prompt set, criteria, the models taking part, how many images per model
and prompt count (default 4) and how many votes each comparison wants (default 26). Its
comparisons are built when it is published and again whenever a model joins or a taking-part
model uploads images, so adding a model or images later adds only the new pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import func, select

from arena import criteria as criteria_table
from arena.analysis import published, rollups
from arena.campaigns import comparisons, gold
from arena.campaigns.allocation import check_allocation
from arena.catalog import images, presentation, prompts
from arena.errors import Conflict, Invalid, NotFound
from arena.extensions import db
from arena.infra.database import at_most, one_or_not_found, refresh_statistics
from arena.models import (
    Campaign,
    Comparison,
    GenModel,
    Image,
    Prompt,
    PromptSet,
    campaign_models,
    utcnow,
)


def _models(names: list[str]) -> list[GenModel]:
    found = list(db.session.scalars(select(GenModel).where(GenModel.name.in_(names))))
    missing = sorted(set(names) - {m.name for m in found})
    if missing:
        raise NotFound(f"no model named {', '.join(missing)}")
    return found


def get_campaign(name: str) -> Campaign:
    return one_or_not_found(Campaign, f"no campaign named {name!r}", Campaign.name == name)


def get_published(name: str) -> Campaign:
    """A campaign the public may see: a draft (its models, prompts, criteria) is the
    operators' until it is published, and reads as not found."""
    return one_or_not_found(Campaign, f"no campaign named {name!r}", Campaign.name == name,
                            Campaign.published_at.is_not(None))


def create_campaign(name: str, prompt_set: str, model_names: list[str],
                    criteria: list[str] | None = None, images_per_model: int = 4,
                    target_votes: int = 26, allocation: str = "balanced",
                    early_stop: bool = False) -> Campaign:
    """Define a campaign (unpublished) and commit. ``allocation`` and ``early_stop``: see
    :mod:`arena.campaigns.allocation`.

    Raises Invalid (no name, unknown criteria or allocation, counts out of range), Conflict
    (the name is taken) or NotFound (the prompt set or a model)."""
    name = (name or "").strip()
    known = criteria_table.names()
    criteria = list(criteria or known)
    if not name:
        raise Invalid("a campaign needs a name", field="name")
    unknown = [c for c in criteria if c not in known]
    if unknown or not criteria:
        raise Invalid(f"criteria must be among {', '.join(known)}", field="criteria")
    if not 1 <= images_per_model <= 16:
        raise Invalid("images per model must be between 1 and 16", field="images_per_model")
    if not 1 <= target_votes <= 10_000:
        raise Invalid("target votes must be between 1 and 10000", field="target_votes")
    check_allocation(allocation)
    if db.session.scalar(select(Campaign).where(Campaign.name == name)) is not None:
        raise Conflict(f"campaign {name!r} exists already")
    campaign = Campaign(name=name, prompt_set=prompts.prompt_set(prompt_set),
                        criteria=",".join(criteria), images_per_model=images_per_model,
                        target_votes=target_votes, models=_models(model_names),
                        allocation=allocation, early_stop=early_stop)
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
        campaign_id=campaign.id, pool=campaign.pool)


def publish(campaign: Campaign, rng: np.random.Generator | None = None) -> int:
    """Publish and build the comparisons, and a first supply of gold pairs made from the
    campaign's images (arena.campaigns.gold); returns how many ordinary pairs were added.
    Commits the pairs, then each damaged copy in its own short transaction, rendered before
    it (:func:`arena.campaigns.gold.fill`): image work under the write lock kept voters on
    SQLite waiting past its busy timeout."""
    if len(campaign.models) < 2:
        raise Conflict("a campaign needs at least two models")
    rng = rng or np.random.default_rng()
    if campaign.published_at is None:
        campaign.published_at = utcnow()
    added = _refresh(campaign)
    db.session.flush()
    gold.top_up(campaign, rng)
    db.session.commit()
    gold.fill(campaign, rng, threads=1, first=True)
    return added


def add_model(campaign: Campaign, model_name: str) -> int:
    """Let a model join; a published campaign gets only the new pairs, and the swapped gold
    they want (arena.campaigns.gold.top_up). Commits."""
    (model,) = _models([model_name])
    if model in campaign.models:
        raise Conflict(f"{model_name} already takes part")
    campaign.models.append(model)
    db.session.flush()
    added = _refresh(campaign)
    if added:
        gold.top_up(campaign, np.random.default_rng(),
                    fresh=set(db.session.scalars(select(Image.id).where(
                        Image.model_id == model.id))))
    refresh_statistics(Comparison)
    db.session.commit()
    return added


def on_new_image(_sender=None, *, model_id: int, prompt_id: int) -> int:
    """Add the pairs a new image makes possible in every published campaign that has this
    model and this prompt, and the swapped gold they want (not committed). Returns the
    number added."""
    live = db.session.scalars(
        select(Campaign)
        .join(campaign_models, campaign_models.c.campaign_id == Campaign.id)
        .join(Prompt, Prompt.prompt_set_id == Campaign.prompt_set_id)
        .where(campaign_models.c.model_id == model_id, Prompt.id == prompt_id,
               Campaign.published_at.is_not(None)))
    added = 0
    for campaign in live:
        pairs = _refresh(campaign, [prompt_id])
        if pairs:
            gold.top_up(campaign, np.random.default_rng(),
                        fresh=set(db.session.scalars(select(Image.id).where(
                            Image.model_id == model_id, Image.prompt_id == prompt_id))))
        added += pairs
    return added


def add_gold_pair(campaign: Campaign, criterion: str, correct: bytes, wrong: bytes,
                  prompt_id: int | None = None, names=("correct", "wrong")) -> Comparison:
    """A validation pair from two image files and the right answer. Commits.
    Raises Invalid (bad criterion, prompt outside the set) or ImageRejected."""
    if criterion not in campaign.criteria_list:
        raise Invalid(f"{criterion} is not a criterion of {campaign.name}", field="criterion")
    if criteria_table.get(criterion).caption and prompt_id is None:
        raise Invalid(f"a gold pair of {criterion} needs the prompt whose caption it is "
                      "judged against (--prompt-id)", field="prompt_id")
    if prompt_id is not None:
        prompt = db.session.get(Prompt, prompt_id) if -2**31 <= prompt_id < 2**31 else None
        if prompt is None or prompt.prompt_set_id != campaign.prompt_set_id:
            raise Invalid(f"prompt {prompt_id} is not in {campaign.prompt_set.name}",
                          field="prompt_id")
    good = images.store(images.decode(correct, filename=names[0]), model_id=None,
                        prompt_id=prompt_id)
    bad = images.store(images.decode(wrong, filename=names[1]), model_id=None,
                       prompt_id=prompt_id)
    db.session.flush()
    if good.id == bad.id:
        raise Invalid("the two images are identical")
    pair = comparisons.add_validation_pair(criterion, good, bad, prompt_id, campaign.id,
                                           target_votes=campaign.target_votes,
                                           pool=campaign.pool)
    db.session.commit()
    return pair


def get_campaign_by_id(campaign_id: int) -> Campaign:
    campaign = db.session.get(Campaign, campaign_id) if -2**31 <= campaign_id < 2**31 else None
    if campaign is None:
        raise NotFound(f"no campaign {campaign_id}")
    return campaign


@dataclass(frozen=True)
class Summary:
    """One line of the campaigns list."""

    name: str
    prompt_set: str
    models: int
    published: bool
    votes: int  # counted towards the targets (a comparison's extra votes are not)
    needed: int


def summaries(public: bool = False) -> list[Summary]:
    """Every campaign, newest first, with its totals: two queries however many there are.
    ``public``: the published campaigns, with the votes collected by the period's cut-off
    (:mod:`arena.analysis.published`), as the public list shows them."""
    totals = _totals()
    if public:
        collected = published.figures(
            "campaigns", published.ALL,
            lambda before: {cid: votes for cid, (votes, _) in _totals(before).items()},
            load=lambda payload: {int(cid): int(votes) for cid, votes in payload.items()},
        ).payload
        totals = {cid: (collected.get(cid, 0), needed) for cid, (_, needed) in totals.items()}
    models = (select(func.count()).where(campaign_models.c.campaign_id == Campaign.id)
              .correlate(Campaign).scalar_subquery())
    query = (select(Campaign.id, Campaign.name, PromptSet.name, models, Campaign.published_at)
             .join(PromptSet, PromptSet.id == Campaign.prompt_set_id)
             .order_by(Campaign.created_at.desc(), Campaign.id.desc()))
    if public:
        query = query.where(Campaign.published_at.is_not(None))
    rows = db.session.execute(query).all()
    return [Summary(name, set_name, n_models, published_at is not None,
                    int(totals.get(cid, (0, 0))[0]), int(totals.get(cid, (0, 0))[1]))
            for cid, name, set_name, n_models, published_at in rows]


def _totals(before: datetime | None = None) -> dict[int, tuple[int, int]]:
    """Per campaign: the votes counted towards its targets (those stamped before ``before``,
    when given), and the votes its targets ask."""
    votes, joined = rollups.votes_column(before)
    # (the campaign's target, not each comparison's: active allocation moves those)
    return {row[0]: (int(row[1]), int(row[2])) for row in db.session.execute(joined(
        select(Comparison.campaign_id,
               func.coalesce(func.sum(at_most(votes, Campaign.target_votes)), 0),
               func.coalesce(func.count() * Campaign.target_votes, 0)))
        .join(Campaign, Campaign.id == Comparison.campaign_id)
        .where(Comparison.is_validation.is_(False))
        .group_by(Comparison.campaign_id, Campaign.target_votes))}


def admin_overview() -> dict:
    """What the operator page lists: campaigns (newest first) with the gold supply of the
    published ones (:func:`arena.campaigns.gold.supply`), models and prompt sets."""
    listed = list(db.session.scalars(
        select(Campaign).order_by(Campaign.created_at.desc(), Campaign.id.desc())))
    return {
        "campaigns": listed,
        "gold_supply": {c.id: gold.supply(c) for c in listed if c.published_at is not None},
        "gold_filling": {c.id for c in listed if gold.filling(c.id)},
        "models": list(db.session.scalars(select(GenModel).order_by(GenModel.name))),
        "prompt_sets": prompts.set_names(),
        "collisions": presentation.collisions(),
    }
