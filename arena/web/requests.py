"""Reading requests: the parsing every view shares. Anything unreadable is an ``Invalid``
error naming the parameter, which the error handlers turn into a 400 with that message."""

from __future__ import annotations

import json

from flask import current_app, g, request, session
from werkzeug.routing import IntegerConverter

from arena.errors import Invalid
from arena.infra.network import network_hash
from arena.models import Voter
from arena.voting import voters


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def bearer_token() -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def request_network() -> str:
    """A keyed hash of the client's network (its /24 or /48), never its address: what the
    rate limits count by and a new voter records."""
    return network_hash(current_app.config["SECRET_KEY"], request.remote_addr)


def request_voter() -> Voter | None:
    """The existing voter this request names: its bearer token on the JSON API, its signed
    cookie elsewhere; None for nobody. Looked up once per request and credential, since the
    rate limits and the view both ask."""
    kind, credential = (("token", bearer_token()) if request.blueprint == "api"
                        else ("public", session.get("voter")))
    cached = g.get("request_voter")
    if cached is None or cached[0] != (kind, credential):
        cached = ((kind, credential), voters.voter_by(kind, credential))
        g.request_voter = cached
    return cached[1]


def json_body(required: bool, what: str = "a JSON object") -> dict:
    """The request's JSON object; {} when optional and absent. Raises Invalid otherwise."""
    raw = request.get_data()
    if not raw:
        if required:
            raise Invalid(f"body must be {what}")
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise Invalid(f"body must be {what}") from None
    if not isinstance(body, dict):
        raise Invalid(f"body must be {what}")
    if _has_nul(body):
        raise Invalid(NUL_MESSAGE)
    return body


NUL_MESSAGE = "text may not contain NUL characters"
DB_INT_MAX = 2**31 - 1  # the largest id an INTEGER column holds (PostgreSQL's int4)


def _has_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def refuse_nul() -> None:
    """Before every request: a NUL character in the path, a query or a form field is refused
    with a 400 here. No text column can hold one on PostgreSQL, so it would otherwise fail
    the first query that used it (a 500); on SQLite it would be stored."""
    fields = [request.path, *request.args.keys(), *request.args.values()]
    if request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        fields += [*request.form.keys(), *request.form.values()]
    if any(_has_nul(field) for field in fields):  # (a multipart part may have no name)
        raise Invalid(NUL_MESSAGE)


class DatabaseInt(IntegerConverter):
    """``<int:...>`` in every route: at most ``DB_INT_MAX``, so a larger id is a 404 like any
    id that does not exist, never an overflow in the database driver."""

    def __init__(self, url_map, fixed_digits=0, min=None, max=DB_INT_MAX, signed=False):
        super().__init__(url_map, fixed_digits=fixed_digits, min=min, max=max, signed=signed)


def int_arg(name: str, default: int | None, low: int, high: int, source=None) -> int:
    """An integer query (or form) parameter within [low, high]; ``default`` when absent
    (``None``: it is required). Raises Invalid."""
    raw = (source if source is not None else request.args).get(name)
    if raw is None or raw == "":
        if default is None:
            raise Invalid(f"{name} is required", field=name)
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise Invalid(f"{name} must be an integer from {low} to {high}", field=name)
    return value


def float_arg(name: str, source=None) -> float | None:
    """A number from a query (or form) parameter, None when absent. Raises Invalid."""
    raw = (source if source is not None else request.args).get(name)
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise Invalid(f"{name} must be a number", field=name) from None


def choice_arg(name: str, default: str, choices, source=None) -> str:
    """A query (or form) parameter that must be one of ``choices``. Raises Invalid."""
    value = (source if source is not None else request.args).get(name, default)
    if value not in choices:
        raise Invalid(f"{name} must be one of {', '.join(choices)}", field=name)
    return value


def flag_arg(name: str, source=None) -> bool:
    value = (source if source is not None else request.args).get(name, "")
    return value.strip().lower() in ("1", "true", "yes", "on")
