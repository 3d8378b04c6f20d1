"""Tokens and keyed hashes: what is stored of a secret is never the secret itself."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import lru_cache


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


@lru_cache(maxsize=16)
def derived_key(secret, purpose: bytes) -> bytes:
    """A key for one ``purpose`` (e.g. b"arena networks") derived from ``secret``
    (``SECRET_KEY``): derived once per secret and purpose, not once per use (it sat on
    every request)."""
    return hmac.new(str(secret).encode(), purpose, hashlib.sha256).digest()
