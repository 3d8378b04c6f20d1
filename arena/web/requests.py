"""Reading requests: the parsing every view shares. Anything unreadable is an ``Invalid``
error naming the parameter, which the error handlers turn into a 400 with that message."""

from __future__ import annotations

import json

from flask import request

from arena.errors import Invalid

MAX_JSON_DEPTH = 32


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def bearer_token() -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


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
    return body


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
