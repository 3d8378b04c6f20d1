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
