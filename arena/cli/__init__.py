"""The ``arena`` command group: thin click wrappers over service functions, one module per
feature. Also available as ``flask --app arena <command>``; Flask-Migrate adds
``arena db ...``.

A domain error ends a command with its message and the exit code of its kind, mapped here
once for every command (see :data:`EXIT_CODES`).
"""

from __future__ import annotations

import functools

import click
from flask import Flask
from flask.cli import FlaskGroup

from arena.errors import (
    ArenaError,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Rejected,
    Unauthorized,
    Unavailable,
    kind_of,
)

# 1 as for any failure (bad input), then one code per kind a script may want to tell apart.
EXIT_CODES = {Invalid: 1, Rejected: 1, ArenaError: 1, NotFound: 3, Unauthorized: 4,
              Forbidden: 4, Conflict: 5, Unavailable: 6}


class CommandError(click.ClickException):
    """A domain error, printed as ``Error: <message>`` with its kind's exit code."""

    def __init__(self, exc: ArenaError):
        super().__init__(exc.message)
        self.exit_code = EXIT_CODES[kind_of(exc)]


def reports_errors(callback):
    """Turn a domain error raised by a command into its message and exit code."""

    @functools.wraps(callback)
    def wrapped(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except ArenaError as exc:
            raise CommandError(exc) from exc

    wrapped.reports_errors = True
    return wrapped


def _wrap(command: click.Command) -> None:
    """Wrap ``command`` and its subcommands once (commands are module-level singletons that
    every app created in a process registers again)."""
    if command.callback is not None and not getattr(command.callback, "reports_errors", False):
        command.callback = reports_errors(command.callback)
    for sub in getattr(command, "commands", {}).values():
        _wrap(sub)


def register(app: Flask) -> None:
    from arena.cli import accounts, analysis, campaigns, catalog, hype, server

    for module in (server, catalog, accounts, campaigns, analysis, hype):
        for command in module.COMMANDS:
            _wrap(command)
            app.cli.add_command(command)


def _make_app():
    from arena import create_app

    return create_app()


main = FlaskGroup(create_app=_make_app, help="Arena: human evaluation of image models.")
