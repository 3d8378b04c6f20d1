"""Tokens and keyed hashes: what is stored of a secret is never the secret itself."""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_token(prefix: str = "") -> str:
    """A fresh bearer token (256 random bits), shown to its holder once."""
    return prefix + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What the database keeps of a bearer token: its SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()


def pseudonym(key: str, public_id: str) -> str:
    """A stable pseudonym for exports (keyed with ``PSEUDONYM_KEY``) that cannot be turned
    back into the id a voter's cookie carries."""
    return hmac.new(key.encode(), public_id.encode(), hashlib.sha256).hexdigest()[:16]
