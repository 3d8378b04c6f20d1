"""Voters: anonymous identities, their tokens and their optional, coarse demographics."""

from __future__ import annotations

import csv
import hashlib
import secrets
from dataclasses import dataclass
from functools import cache
from importlib import resources

from sqlalchemy import select

from .extensions import db
from .models import Voter

UNDISCLOSED = "undisclosed"  # "prefer not to say"
AGE_GROUPS = ("18-29", "30-39", "40-49", "50-64", "65+")
MINOR_AGE_GROUP = "0-17"
GENDERS = ("female", "male", "other")
CONTINENTS = {
    "AF": "Africa",
    "AS": "Asia",
    "EU": "Europe",
    "NA": "North America",
    "OC": "Oceania",
    "SA": "South America",
}


class DemographicsError(ValueError):
    """Invalid demographics; ``field`` names the offending answer."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class MinorRefused(DemographicsError):
    """Voters under 18 may not take part."""


@dataclass(frozen=True)
class Country:
    code: str
    name: str
    continent: str


@cache
def countries() -> dict[str, Country]:
    """ISO 3166-1 alpha-2 code -> Country, from the shipped ``data/countries.csv``."""
    text = resources.files("arena").joinpath("data/countries.csv").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    return {
        row["alpha2"]: Country(row["alpha2"], row["name"], row["continent"])
        for row in csv.DictReader(lines)
    }


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def clean_demographics(raw: dict | None) -> dict[str, str | None]:
    """Validate optional answers into stored values; missing or "undisclosed" become None.

    Raises
    ------
    MinorRefused
        For the 0-17 age group.
    DemographicsError
        For an unknown age group, gender or country code, or a non-string value.
    """
    raw = raw or {}
    if not isinstance(raw, dict):
        raise DemographicsError("demographics", "demographics must be an object")
    unknown = set(raw) - {"age_group", "gender", "country"}
    if unknown:
        field = min(unknown)
        raise DemographicsError(field, f"unknown field {field!r}")

    def value(field: str) -> str | None:
        v = raw.get(field)
        if v is None or v == "" or v == UNDISCLOSED:
            return None
        if not isinstance(v, str):
            raise DemographicsError(field, f"{field} must be a string")
        return v.strip()

    age, gender, country = value("age_group"), value("gender"), value("country")
    if age == MINOR_AGE_GROUP:
        raise MinorRefused("age_group", "Sorry, you must be 18 or older to take part.")
    if age is not None and age not in AGE_GROUPS:
        raise DemographicsError("age_group", f"age_group must be one of {', '.join(AGE_GROUPS)}")
    if gender is not None and gender not in GENDERS:
        raise DemographicsError("gender", f"gender must be one of {', '.join(GENDERS)}")
    continent = None
    if country is not None:
        country = country.upper()
        if country not in countries():
            raise DemographicsError("country", f"unknown ISO 3166 alpha-2 country {country!r}")
        continent = countries()[country].continent
    return {"age_group": age, "gender": gender, "country": country, "continent": continent}


def create_voter(demographics: dict | None = None, *, with_token: bool = False):
    """Add a new voter (not committed). Returns (voter, token or None); only the token's
    hash is stored, so the token can be shown once."""
    fields = clean_demographics(demographics)
    token = secrets.token_urlsafe(32) if with_token else None
    voter = Voter(
        public_id=secrets.token_hex(8),
        token_hash=hash_token(token) if token else None,
        **fields,
    )
    db.session.add(voter)
    return voter, token


def update_demographics(voter: Voter, demographics: dict | None) -> None:
    """Replace a voter's answers with newly given ones (not committed)."""
    for key, val in clean_demographics(demographics).items():
        setattr(voter, key, val)


def voter_by_token(token: str | None) -> Voter | None:
    if not token:
        return None
    return db.session.scalar(select(Voter).where(Voter.token_hash == hash_token(token)))


def voter_by_public_id(public_id: str | None) -> Voter | None:
    if not public_id:
        return None
    return db.session.scalar(select(Voter).where(Voter.public_id == public_id))
