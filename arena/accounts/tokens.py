"""Staff API tokens (analysts read exports, operators run campaigns): created by an operator
on the command line, shown once, stored hashed, revocable."""

from __future__ import annotations

import hmac

from sqlalchemy import select

from arena.errors import Conflict, Invalid, NotFound, Unauthorized
from arena.extensions import db
from arena.infra.secrets import hash_token, new_token
from arena.models import ApiToken, utcnow

PREFIX = "arena_"
ROLES = ("analyst", "operator")


def create_token(name: str, role: str = "analyst") -> str:
    """Create a token named ``name`` and commit; returns the token (not stored anywhere).

    Raises Invalid (no name, unknown role) or Conflict (the name is taken)."""
    name = name.strip()
    if not name:
        raise Invalid("a token needs a name", field="name")
    if role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}", field="role")
    if db.session.scalar(select(ApiToken).where(ApiToken.name == name)) is not None:
        raise Conflict(f"a token named {name!r} exists already (revoke it first)")
    token = new_token(PREFIX)
    db.session.add(ApiToken(name=name, role=role, token_hash=hash_token(token)))
    db.session.commit()
    return token


def revoke_token(name: str) -> None:
    """Revoke the active token ``name`` and commit. Raises NotFound."""
    row = db.session.scalar(select(ApiToken).where(ApiToken.name == name,
                                                   ApiToken.revoked_at.is_(None)))
    if row is None:
        raise NotFound(f"no active token named {name!r}")
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


def require_analyst(token: str | None) -> ApiToken:
    """The analyst token row for ``token``. Raises Unauthorized."""
    row = check_token(token, "analyst")
    if row is None:
        raise Unauthorized("an analyst token is required: 'Authorization: Bearer <token>' "
                           "(create one with `arena token create NAME`)")
    return row


def operator_by_id(token_id) -> ApiToken | None:
    """The active operator token with id ``token_id`` (what a signed-in operator's cookie
    holds), or None once it is revoked."""
    row = db.session.get(ApiToken, token_id) if token_id else None
    if row is None or row.revoked_at is not None or row.role != "operator":
        return None
    return row
