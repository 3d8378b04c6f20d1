"""Browser sign-ins of operators and model owners that signing out really ends.

A signed cookie cannot be recalled: a copy saved before signing out would keep working.
So the cookie holds the account
and the moment it signed in, and signing out records its moment on the account: a cookie
from before it signs nobody in any more. That signs the account out of every browser, as a
token belongs to one person."""

from __future__ import annotations

from datetime import datetime

from arena.extensions import db
from arena.models import utcnow


def begin() -> str:
    """The sign-in moment to keep in the cookie."""
    return utcnow().isoformat()


def current(account, since):
    """``account`` (an operator token or an owner, or None) if a cookie that signed in at
    ``since`` still signs it in; None otherwise."""
    if account is None or not isinstance(since, str):
        return None
    try:
        signed_in = datetime.fromisoformat(since)
    except ValueError:
        return None
    if account.signed_out_at is not None and signed_in <= account.signed_out_at:
        return None
    return account


def end(account) -> None:
    """Sign ``account`` out of every browser now. Commits."""
    account.signed_out_at = utcnow()
    db.session.commit()
