"""Voters: anonymous identities, their tokens and their optional, coarse demographics."""

from __future__ import annotations

import csv
import secrets
from dataclasses import dataclass
from functools import cache
from importlib import resources

from sqlalchemy import select
from sqlalchemy.orm import configure_mappers, make_transient_to_detached

from arena.errors import Forbidden, Invalid, Unauthorized
from arena.extensions import db
from arena.infra.database import param
from arena.infra.prepared import run
from arena.infra.secrets import hash_token, new_token
from arena.models import Voter

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


def create_voter(demographics: dict | None = None, *, with_token: bool = False):
    """Add a new voter (not committed). Returns (voter, token or None); only the token's
    hash is stored, so the token can be shown once."""
    fields = clean_demographics(demographics)
    token = new_token() if with_token else None
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
    return _remembered("token", key_of("token", token))


def voter_by_public_id(public_id: str | None) -> Voter | None:
    return _remembered("public", key_of("public", public_id))


def voter_by(kind: str, credential: str | None) -> Voter | None:
    """:func:`voter_by_token` (``kind`` "token") or :func:`voter_by_public_id` ("public")."""
    return _remembered(kind, key_of(kind, credential))


def key_of(kind: str, credential: str | None) -> str | None:
    """What a voter is looked up by: the hash of a token (``kind`` "token"), a public id as
    it is ("public"); None for no credential."""
    if not credential:
        return None
    return hash_token(credential) if kind == "token" else credential


def _remembered(kind: str, key: str | None) -> Voter | None:
    """The voter whose token hash (``kind`` "token") or public id ("public") is ``key``,
    looked up once per database session (one request): whoever asks again in the request
    gets the same voter (a task route reads it with its task:
    :func:`arena.voting.tasks.voter_and_task`)."""
    if key is None:
        return None
    return known(kind, key) or remember(
        kind, key, _values(run(voter_query(kind), {"p_key": key}).first()))


def known(kind: str, key: str) -> Voter | None:
    """The voter of ``kind`` and ``key`` if found in this database session and still there,
    else None (one not found may have been created since, one deleted is looked for
    again)."""
    voter = db.session.info.get(_KNOWN, {}).get((kind, key))
    return voter if voter is not None and voter in db.session else None


def remember(kind: str, key: str, values: dict | None) -> Voter | None:
    """Keep the voter read elsewhere (``values``: every column by name; None: nobody holds
    the key) as this request's voter of ``kind`` and ``key``, and return it."""
    voter = db.session.info.setdefault(_KNOWN, {})[kind, key] = _loaded(values)
    return voter


_KNOWN = "arena_voters"


def _values(row) -> dict | None:
    return None if row is None else row._asdict()


def _loaded(values: dict | None) -> Voter | None:
    """The voter of ``values`` (all its columns by name) as the session's object, as a query
    for the entity would give it: the one the session holds already, else one made from the
    row and added as loaded (SQLAlchemy's way for objects read elsewhere:
    ``make_transient_to_detached``). Every request looks its voter up first: through the
    ORM's query the lookup cost about twice the Core row's."""
    if values is None:
        return None
    session = db.session()
    held = session.identity_map.get(_VOTER.identity_key_from_primary_key((values["id"],)))
    if held is not None:
        return held
    configure_mappers()  # (at once when done; a process's first voter may come first)
    voter = _VOTER.class_manager.new_instance()
    # the values straight into the instance's dict: make_transient_to_detached takes what is
    # there as loaded, history reset (setting each through the attribute was 30% of this);
    # every column is named as its attribute (tests/unit/test_voters.py holds it so)
    voter.__dict__.update(values)
    make_transient_to_detached(voter)
    session.add(voter)
    return voter


_VOTER = Voter.__mapper__


@cache
def voter_query(kind: str):
    table = Voter.__table__.c
    column = table.token_hash if kind == "token" else table.public_id
    return select(*table).where(column == param("p_key", column))


def identify_by_cookie(public_id: str | None, demographics: dict | None = None) -> Voter:
    """The voter whose cookie carries ``public_id``, or a new one. ``demographics``, when
    given, replace their answers. Commits what changed.

    Raises
    ------
    DemographicsError, MinorRefused
        Before anything is written.
    """
    voter = voter_by_public_id(public_id)
    if voter is None:
        voter, _ = create_voter(demographics)
    elif demographics is not None:
        update_demographics(voter, demographics)
    if voter in db.session.new or voter in db.session.dirty:
        db.session.commit()  # (only then: a commit would have the voter read again)
    return voter


def identify_by_token(token: str | None, demographics: dict | None = None
                      ) -> tuple[Voter, str | None]:
    """API voters. Without ``token``: a new voter and its token (returned this once). With
    one: the voter holding it. ``demographics``, when given, replace the answers. Commits.

    Raises
    ------
    Unauthorized
        A token nobody holds.
    DemographicsError, MinorRefused
        Before anything is written.
    """
    if not token:
        voter, new = create_voter(demographics, with_token=True)
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
