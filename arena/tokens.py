"""Analyst API tokens: created by an operator, shown once, stored hashed, revocable."""

from __future__ import annotations

import hmac
import secrets

from sqlalchemy import select

from .extensions import db
from .models import ApiToken, utcnow
from .voters import hash_token

PREFIX = "arena_"


class TokenError(ValueError):
    pass


def create_token(name: str, role: str = "analyst") -> str:
    """Create a token named ``name`` and commit; returns the token (not stored anywhere)."""
    name = name.strip()
    if not name:
        raise TokenError("a token needs a name")
    if db.session.scalar(select(ApiToken).where(ApiToken.name == name)) is not None:
        raise TokenError(f"a token named {name!r} exists already (revoke it first)")
    token = PREFIX + secrets.token_urlsafe(32)
    db.session.add(ApiToken(name=name, role=role, token_hash=hash_token(token)))
    db.session.commit()
    return token


def revoke_token(name: str) -> None:
    row = db.session.scalar(select(ApiToken).where(ApiToken.name == name,
                                                   ApiToken.revoked_at.is_(None)))
    if row is None:
        raise TokenError(f"no active token named {name!r}")
    row.revoked_at = utcnow()
    # free the name for a replacement token
    row.name = f"{row.name} (revoked {row.revoked_at:%Y-%m-%d %H:%M:%S} #{row.id})"
    db.session.commit()


def list_tokens() -> list[ApiToken]:
    return list(db.session.scalars(select(ApiToken).order_by(ApiToken.created_at)))


def check_token(token: str | None, role: str = "analyst") -> ApiToken | None:
    """The active token row for ``token`` with ``role``, or None."""
    if not token or not token.startswith(PREFIX):
        return None
    row = db.session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
    if row is None or row.revoked_at is not None or row.role != role:
        return None
    # the lookup is by hash; compare again in constant time for good measure
    return row if hmac.compare_digest(row.token_hash, hash_token(token)) else None
