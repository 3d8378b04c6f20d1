"""Domain errors: one root, a handful of kinds.

Services raise these and nothing else for a caller to report; each edge maps a *kind* to its
own vocabulary exactly once — HTTP statuses in :mod:`arena.web.errors`, exit codes in
:mod:`arena.cli` — so no view or command picks a status by catching errors one by one.

A service defines its own errors as subclasses of a kind (``class TaskNotFound(NotFound)``),
so callers may still catch the precise one where they need to.
"""

from __future__ import annotations


class ArenaError(Exception):
    """Root of every error a service raises for its caller to report.

    ``field`` names the input at fault, if one is (a form field, a JSON key); ``details``
    are extra facts a client can act on (``retry_after_ms``), sent along in API errors.
    """

    def __init__(self, message: str, *, field: str | None = None, **details):
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details

    def as_dict(self) -> dict:
        """The error as a JSON-ready object: ``{"error": message, "field"?, **details}``."""
        body = {"error": self.message}
        if self.field is not None:
            body["field"] = self.field
        body.update(self.details)
        return body


class Invalid(ArenaError):
    """The input is malformed or out of range (a missing field, an unknown criterion)."""


class Rejected(Invalid):
    """Well-formed input whose content is not acceptable (an upload that is not a usable
    image, a file with a bad line)."""


class Unauthorized(ArenaError):
    """No credentials, or credentials nobody issued (or that were revoked)."""


class Forbidden(ArenaError):
    """Known caller, but this is not theirs to do (someone else's task, a minor)."""


class NotFound(ArenaError):
    """The thing named does not exist."""


class Conflict(ArenaError):
    """The request is fine but the current state does not allow it (nothing left to vote
    on, a name already taken, a caption not yet read)."""


class Unavailable(ArenaError):
    """A dependency is down or not set up (the database, the image store)."""


KINDS = (Rejected, Invalid, Unauthorized, Forbidden, NotFound, Conflict, Unavailable)


def kind_of(exc: ArenaError) -> type[ArenaError]:
    """The most specific kind ``exc`` belongs to (``ArenaError`` itself for none)."""
    for kind in KINDS:
        if isinstance(exc, kind):
            return kind
    return ArenaError
