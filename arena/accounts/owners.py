"""Model owners: accounts made by an operator, with an API token shown once."""

from __future__ import annotations

from sqlalchemy import select

from arena.errors import Conflict, Invalid, NotFound, Unauthorized
from arena.extensions import db
from arena.infra.secrets import hash_token, new_token
from arena.models import Owner, utcnow

PREFIX = "owner_"


def create_owner(name: str) -> str:
    """Create owner ``name`` and commit; returns the API token (stored only hashed).

    Raises Invalid (no name) or Conflict (the name is taken)."""
    name = (name or "").strip()
    if not name:
        raise Invalid("an owner needs a name", field="name")
    if db.session.scalar(select(Owner).where(Owner.name == name)) is not None:
        raise Conflict(f"owner {name!r} exists already")
    token = new_token(PREFIX)
    db.session.add(Owner(name=name, token_hash=hash_token(token)))
    db.session.commit()
    return token


def revoke_owner(name: str) -> None:
    """Revoke an owner's token and commit (their models and images stay). Raises NotFound."""
    owner = db.session.scalar(select(Owner).where(Owner.name == name))
    if owner is None or owner.revoked_at is not None:
        raise NotFound(f"no active owner named {name!r}")
    owner.revoked_at = utcnow()
    db.session.commit()


def get_owner(name: str) -> Owner:
    """The active owner called ``name``. Raises NotFound."""
    owner = db.session.scalar(select(Owner).where(Owner.name == name))
    if owner is None or owner.revoked_at is not None:
        raise NotFound(f"no active owner named {name!r}")
    return owner


def owner_by_token(token: str | None) -> Owner | None:
    if not token or not token.startswith(PREFIX):
        return None
    owner = db.session.scalar(select(Owner).where(Owner.token_hash == hash_token(token)))
    return owner if owner is not None and owner.revoked_at is None else None


def require_owner(token: str | None) -> Owner:
    """The owner holding ``token``. Raises Unauthorized."""
    owner = owner_by_token(token)
    if owner is None:
        raise Unauthorized("an owner token is required: 'Authorization: Bearer <token>' "
                           "(an operator creates it: `arena owner create`)")
    return owner


def owner_by_id(owner_id) -> Owner | None:
    """The active owner with id ``owner_id`` (what a signed-in owner's cookie holds)."""
    owner = db.session.get(Owner, owner_id) if owner_id else None
    return owner if owner is not None and owner.revoked_at is None else None
