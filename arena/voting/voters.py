"""Voters: anonymous identities, their tokens and their optional, coarse demographics."""

from __future__ import annotations

import csv
import secrets
from dataclasses import dataclass
from functools import cache
from importlib import resources

from sqlalchemy import func, select

from arena.errors import Forbidden, Invalid, Unauthorized
from arena.extensions import db
from arena.infra.database import param
from arena.infra.secrets import hash_token, new_token
from arena.models import Vote, Voter, utcnow
from arena.voting import trust

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


class DemographicsError(Invalid):
    """Invalid demographics; ``field`` names the offending answer."""


class MinorRefused(Forbidden):
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
        raise DemographicsError("demographics must be an object", field="demographics")
    unknown = set(raw) - {"age_group", "gender", "country"}
    if unknown:
        field = min(unknown)
        raise DemographicsError(f"unknown field {field!r}", field=field)
    age, gender, country = (_answer(raw, f) for f in ("age_group", "gender", "country"))
    if age == MINOR_AGE_GROUP:
        raise MinorRefused("Sorry, you must be 18 or older to take part.", field="age_group")
    if age is not None and age not in AGE_GROUPS:
        raise DemographicsError(f"age_group must be one of {', '.join(AGE_GROUPS)}",
                                field="age_group")
    if gender is not None and gender not in GENDERS:
        raise DemographicsError(f"gender must be one of {', '.join(GENDERS)}", field="gender")
    continent = None
    if country is not None:
        country = country.upper()
        if country not in countries():
            raise DemographicsError(f"unknown ISO 3166 alpha-2 country {country!r}",
                                    field="country")
        continent = countries()[country].continent
    return {"age_group": age, "gender": gender, "country": country, "continent": continent}


def _answer(raw: dict, field: str) -> str | None:
    """One optional answer: None when missing, empty or "prefer not to say"."""
    value = raw.get(field)
    if value is None or value == "" or value == UNDISCLOSED:
        return None
    if not isinstance(value, str):
        raise DemographicsError(f"{field} must be a string", field=field)
    return value.strip()


def create_voter(demographics: dict | None = None, *, with_token: bool = False,
                 network: str | None = None, trusted: bool = False):
    """Add a new voter (not committed), first seen on ``network`` (a keyed hash,
    :func:`arena.infra.network.network_hash`), trusted from the start when ``trusted`` (a
    simulated crowd) or when nobody needs to earn it (:mod:`arena.voting.trust`). Returns
    (voter, token or None); only the token's hash is stored, so the token can be shown
    once."""
    fields = clean_demographics(demographics)
    token = new_token() if with_token else None
    now = utcnow()
    voter = Voter(
        public_id=secrets.token_hex(8),
        token_hash=hash_token(token) if token else None,
        network=network,
        created_at=now,
        earned_at=now if trusted or trust.trusted_from_the_start() else None,
        **fields,
    )
    db.session.add(voter)
    return voter, token


def answer_count(voter: Voter) -> int:
    """The votes ``voter`` has given (the thank-you card shows them)."""
    return db.session.scalar(select(func.count()).where(Vote.voter_id == voter.id)) or 0


def update_demographics(voter: Voter, demographics: dict | None) -> None:
    """Replace a voter's answers with newly given ones (not committed)."""
    fields = clean_demographics(demographics)
    if any(getattr(voter, key) != val for key, val in fields.items()):
        voter.profile_at = utcnow()  # (the sliced rollups move the voter's votes)
    for key, val in fields.items():
        setattr(voter, key, val)


def voter_by_token(token: str | None) -> Voter | None:
    return _voter_by_key("token", key_of("token", token))


def voter_by_public_id(public_id: str | None) -> Voter | None:
    return _voter_by_key("public", key_of("public", public_id))


def voter_by(kind: str, credential: str | None) -> Voter | None:
    """:func:`voter_by_token` (``kind`` "token") or :func:`voter_by_public_id` ("public")."""
    return _voter_by_key(kind, key_of(kind, credential))


def key_of(kind: str, credential: str | None) -> str | None:
    """What a voter is looked up by: the hash of a token (``kind`` "token"), a public id as
    it is ("public"); None for no credential."""
    if not credential:
        return None
    return hash_token(credential) if kind == "token" else credential


def _voter_by_key(kind: str, key: str | None) -> Voter | None:
    """The voter whose token hash (``kind`` "token") or public id ("public") is ``key``."""
    if key is None:
        return None
    return db.session.scalar(voter_query(kind), {"p_key": key})


@cache
def voter_query(kind: str):
    column = Voter.token_hash if kind == "token" else Voter.public_id
    return select(Voter).where(column == param("p_key", column))


def identify_by_cookie(public_id: str | None, demographics: dict | None = None,
                       network: str | None = None) -> Voter:
    """The voter whose cookie carries ``public_id``, or a new one (first seen on
    ``network``). ``demographics``, when given, replace their answers. Commits what
    changed.

    Raises
    ------
    DemographicsError, MinorRefused
        Before anything is written.
    """
    voter = voter_by_public_id(public_id)
    if voter is None:
        voter, _ = create_voter(demographics, network=network)
    elif demographics is not None:
        update_demographics(voter, demographics)
    if voter in db.session.new or voter in db.session.dirty:
        db.session.commit()  # (only then: a commit would have the voter read again)
    return voter


def identify_by_token(token: str | None, demographics: dict | None = None,
                      network: str | None = None) -> tuple[Voter, str | None]:
    """API voters. Without ``token``: a new voter (first seen on ``network``) and its token
    (returned this once). With one: the voter holding it. ``demographics``, when given,
    replace the answers. Commits.

    Raises
    ------
    Unauthorized
        A token nobody holds.
    DemographicsError, MinorRefused
        Before anything is written.
    """
    if not token:
        voter, new = create_voter(demographics, with_token=True, network=network)
        db.session.commit()
        return voter, new
    voter = require_voter(token)
    if demographics is not None:
        update_demographics(voter, demographics)
        db.session.commit()
    return voter, None


def require_voter(token: str | None) -> Voter:
    """The voter holding ``token``. Raises Unauthorized for none or an unknown one."""
    return required(voter_by_token(token))


def required(voter: Voter | None) -> Voter:
    """``voter``, found by an API token; Unauthorized when nobody held it."""
    if voter is None:
        raise Unauthorized("send your voter token as 'Authorization: Bearer <voter_token>' "
                           "(POST /api/v1/sessions without one issues a token)")
    return voter
