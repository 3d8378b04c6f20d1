"""The models taking part: registered by their owners, seen by each owner alone."""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import func, or_, select

from arena import criteria
from arena.analysis import published, rollups
from arena.errors import Conflict, Invalid, NotFound
from arena.extensions import db
from arena.infra.database import one_or_not_found
from arena.models import Campaign, Comparison, GenModel, Image, Owner, Prompt
from arena.voting.votes import ensure_ratings

MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,79}$")
STANDING_MIN_VOTES = 30  # per criterion, before a model's standing is shown


def register_model(owner: Owner, name: str | None, description: str | None = None,
                   link: str | None = None) -> GenModel:
    """Register a model for ``owner`` and commit.

    Raises
    ------
    Invalid
        A name that is not 1-80 letters, digits, spaces or ``._+-``, or a link that is not
        http(s).
    Conflict
        The name is taken.
    """
    name = name.strip() if isinstance(name, str) else ""
    if not MODEL_NAME.match(name):
        raise Invalid("model names are 1-80 letters, digits, spaces or . _ + -, "
                      "starting with a letter or digit", field="name")
    for label, value in (("description", description), ("link", link)):
        if value is not None and not isinstance(value, str):
            raise Invalid(f"{label} must be text", field=label)
    if link and not re.match(r"^https?://", link):
        raise Invalid("link must start with http:// or https://", field="link")
    if db.session.scalar(select(GenModel).where(GenModel.name == name)) is not None:
        raise Conflict(f"a model named {name!r} exists already")
    model = GenModel(owner_id=owner.id, name=name, description=description or None,
                     link=link or None)
    db.session.add(model)
    db.session.flush()
    ensure_ratings([model.id])
    db.session.commit()
    return model


def get_model(name: str) -> GenModel:
    """The model called ``name``. Raises NotFound."""
    return one_or_not_found(GenModel, f"no model named {name!r} (arena model create)",
                            GenModel.name == name)


def owned_model(owner: Owner, name: str) -> GenModel:
    """The owner's model called ``name``. Raises NotFound alike for a model that does not
    exist and one of another owner (a 403 would tell which names exist)."""
    model = db.session.scalar(select(GenModel).where(GenModel.name == name,
                                                     GenModel.owner_id == owner.id))
    if model is None:
        raise NotFound(f"you have no model named {name!r}")
    return model


def owner_models(owner: Owner) -> list[GenModel]:
    return list(db.session.scalars(
        select(GenModel).where(GenModel.owner_id == owner.id).order_by(GenModel.name)))


def model_stats(model: GenModel) -> dict:
    """What an owner sees of one model: images per prompt, comparisons and votes against the
    target per criterion, and its standing once enough votes exist. Nothing about other
    owners' images. The vote figures count the votes before the period's cut-off
    (``votes_as_of``; :mod:`arena.analysis.published`): an owner may vote too, and must not
    tell by their model's counts whether their last answer was a gold pair."""
    per_prompt = db.session.execute(
        select(Prompt.id, Prompt.text, func.count(Image.id))
        .join(Image, Image.prompt_id == Prompt.id)
        .where(Image.model_id == model.id)
        .group_by(Prompt.id, Prompt.text).order_by(Prompt.id)
    ).all()
    held = db.session.scalar(select(func.count()).select_from(Image).where(
        Image.model_id == model.id, Image.quarantined.is_(True)))
    votes = published.figures("model", model.id, lambda before: [
        _criterion_stats(model, c, before, published.elo()) for c in criteria.names()],
        load=lambda rows: [{key: row[key] for key in STATS} for row in rows])
    return {"images": sum(n for _, _, n in per_prompt), "per_prompt": per_prompt,
            "held": held, "criteria": votes.payload, "votes_as_of": votes.as_of,
            "standing_min_votes": STANDING_MIN_VOTES}


STATS = ("criterion", "comparisons", "votes", "target", "model_votes", "standing")


def _criterion_stats(model: GenModel, criterion: str, before: datetime,
                     elo: published.EloFigures) -> dict:
    """Comparisons and their votes (stamped before ``before``) against their target, and the
    model's votes and standing in ``elo`` (the online Elo replayed to the same cut-off)."""
    mine = select(Image.id).where(Image.model_id == model.id)
    counted, joined = rollups.votes_column(before)
    # (a campaign's target, not each comparison's: active allocation moves those)
    target = func.coalesce(select(Campaign.target_votes)
                           .where(Campaign.id == Comparison.campaign_id).scalar_subquery(),
                           Comparison.target_votes)
    comparisons, votes, target = db.session.execute(joined(
        select(func.count(), func.coalesce(func.sum(counted), 0),
               func.coalesce(func.sum(target), 0)))
        .where(Comparison.criterion == criterion, Comparison.is_validation.is_(False),
               or_(Comparison.image_a_id.in_(mine), Comparison.image_b_id.in_(mine)))
    ).one()
    own = elo.of(criterion, model.name)
    standing = None
    if own is not None and own[1] >= STANDING_MIN_VOTES:
        ratings = [rating for _, rating, _, _ in elo.ratings.get(criterion, [])]
        standing = {"rank": sum(r > own[0] for r in ratings) + 1, "of": len(ratings),
                    "rating": own[0]}
    return {"criterion": criterion, "comparisons": comparisons, "votes": int(votes),
            "target": int(target), "model_votes": own[1] if own else 0,
            "standing": standing}


def owners_dashboard(owner: Owner) -> list[tuple[GenModel, dict]]:
    """Each of the owner's models with its stats, for the dashboard."""
    return [(m, model_stats(m)) for m in owner_models(owner)]
