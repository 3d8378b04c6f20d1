"""Model owners and their models: accounts made by an operator, tokens shown once."""

from __future__ import annotations

import re
import secrets

from sqlalchemy import select

from .extensions import db
from .models import GenModel, Owner, utcnow
from .voters import hash_token
from .voting import ensure_ratings

PREFIX = "owner_"
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,79}$")


class OwnerError(ValueError):
    pass


def create_owner(name: str) -> str:
    """Create owner ``name`` and commit; returns the API token (stored only hashed)."""
    name = name.strip()
    if not name:
        raise OwnerError("an owner needs a name")
    if db.session.scalar(select(Owner).where(Owner.name == name)) is not None:
        raise OwnerError(f"owner {name!r} exists already")
    token = PREFIX + secrets.token_urlsafe(32)
    db.session.add(Owner(name=name, token_hash=hash_token(token)))
    db.session.commit()
    return token


def revoke_owner(name: str) -> None:
    owner = db.session.scalar(select(Owner).where(Owner.name == name))
    if owner is None or owner.revoked_at is not None:
        raise OwnerError(f"no active owner named {name!r}")
    owner.revoked_at = utcnow()
    db.session.commit()


def owner_by_token(token: str | None) -> Owner | None:
    if not token or not token.startswith(PREFIX):
        return None
    owner = db.session.scalar(select(Owner).where(Owner.token_hash == hash_token(token)))
    return owner if owner is not None and owner.revoked_at is None else None


def register_model(owner: Owner, name: str, description: str | None = None,
                   link: str | None = None) -> GenModel:
    """Register a model for ``owner`` and commit.

    Raises
    ------
    OwnerError
        Invalid or taken name, or a link that is not http(s).
    """
    name = (name or "").strip()
    if not MODEL_NAME.match(name):
        raise OwnerError("model names are 1-80 letters, digits, spaces or . _ + -, "
                         "starting with a letter or digit")
    if db.session.scalar(select(GenModel).where(GenModel.name == name)) is not None:
        raise OwnerError(f"a model named {name!r} exists already")
    if link and not re.match(r"^https?://", link):
        raise OwnerError("link must start with http:// or https://")
    model = GenModel(owner_id=owner.id, name=name, description=description or None,
                     link=link or None)
    db.session.add(model)
    db.session.flush()
    ensure_ratings([model.id])
    db.session.commit()
    return model


def owned_model(owner: Owner, name: str) -> GenModel:
    """The owner's model called ``name``. Raises LookupError (no such model) or
    PermissionError (someone else's)."""
    model = db.session.scalar(select(GenModel).where(GenModel.name == name))
    if model is None:
        raise LookupError(f"no model named {name!r}")
    if model.owner_id != owner.id:
        raise PermissionError(f"model {name!r} belongs to another owner")
    return model


STANDING_MIN_VOTES = 30  # per criterion, before a model's standing is shown


def owner_by_id(owner_id) -> Owner | None:
    owner = db.session.get(Owner, owner_id) if owner_id else None
    return owner if owner is not None and owner.revoked_at is None else None


def owner_models(owner: Owner) -> list[GenModel]:
    return list(db.session.scalars(
        select(GenModel).where(GenModel.owner_id == owner.id).order_by(GenModel.name)))


def model_stats(model: GenModel) -> dict:
    """What an owner sees of one model: images per prompt, comparisons and votes against the
    target per criterion, and its standing once enough votes exist. Nothing about other
    owners' images."""
    from sqlalchemy import func, or_

    from .config import CRITERIA
    from .models import Comparison, EloRating, Image, Prompt

    per_prompt = db.session.execute(
        select(Prompt.id, Prompt.text, func.count(Image.id))
        .join(Image, Image.prompt_id == Prompt.id)
        .where(Image.model_id == model.id)
        .group_by(Prompt.id, Prompt.text).order_by(Prompt.id)
    ).all()
    mine = select(Image.id).where(Image.model_id == model.id)
    criteria = []
    for criterion in CRITERIA:
        comparisons, votes, target = db.session.execute(
            select(func.count(), func.coalesce(func.sum(Comparison.votes_count), 0),
                   func.coalesce(func.sum(Comparison.target_votes), 0))
            .where(Comparison.criterion == criterion, Comparison.is_validation.is_(False),
                   or_(Comparison.image_a_id.in_(mine), Comparison.image_b_id.in_(mine)))
        ).one()
        rating = db.session.get(EloRating, (criterion, model.id))
        standing = None
        if rating is not None and rating.votes >= STANDING_MIN_VOTES:
            better = db.session.scalar(select(func.count()).select_from(EloRating).where(
                EloRating.criterion == criterion, EloRating.rating > rating.rating))
            total = db.session.scalar(select(func.count()).select_from(EloRating).where(
                EloRating.criterion == criterion))
            standing = {"rank": better + 1, "of": total, "rating": rating.rating}
        criteria.append({"criterion": criterion, "comparisons": comparisons, "votes": votes,
                         "target": target, "model_votes": rating.votes if rating else 0,
                         "standing": standing})
    return {"images": sum(n for _, _, n in per_prompt), "per_prompt": per_prompt,
            "criteria": criteria, "standing_min_votes": STANDING_MIN_VOTES}
