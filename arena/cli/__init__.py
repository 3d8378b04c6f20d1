"""The ``arena`` command group: thin click wrappers over service functions, one module per
feature. Also available as ``flask --app arena <command>``; Flask-Migrate adds
``arena db ...``.

A domain error ends a command with its message and the exit code of its kind, mapped here
once for every command (see :data:`EXIT_CODES`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib

import click
from flask import Flask
from flask.cli import AppGroup, FlaskGroup, ScriptInfo

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
        except Exception as exc:
            # Imported here: listing the commands (`arena --help`) imports no SQLAlchemy.
            from arena.infra.database import database_outage

            outage = database_outage(exc)
            if outage is None:
                raise
            cause = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            raise CommandError(type(outage)(f"{outage.message} ({cause})")) from exc

    wrapped.reports_errors = True
    return wrapped


@contextlib.contextmanager
def resumable(what: str, total: int):
    """Count the items of a long import as they are handled (call the counter once each);
    if it stops early (an outage, Ctrl+C), say how far it got and that running it again is
    safe, then end as it would have."""
    done = [0]

    def counter() -> None:
        done[0] += 1

    try:
        yield counter
    except BaseException:
        click.echo(f"Stopped after {done[0]} of {total} {what}: running the same command "
                   f"again takes up the rest (the {what} stored already are skipped).", err=True)
        raise


def _wrap(command: click.Command) -> None:
    """Wrap ``command`` and its subcommands once (commands are module-level singletons that
    every app created in a process registers again)."""
    if command.callback is not None and not getattr(command.callback, "reports_errors", False):
        command.callback = reports_errors(command.callback)
    for sub in getattr(command, "commands", {}).values():
        _wrap(sub)


class MigrationCommands(click.Group):
    """``arena db ...``: stands in for Flask-Migrate's group, which is bound and imported only
    when a ``db`` command is run (its context is the real group's)."""

    def make_context(self, info_name, args, parent=None, **extra) -> click.Context:
        from flask_migrate.cli import db

        from arena.infra.instance import bind_migrations, ensure_instance

        info = (parent.find_object(ScriptInfo) if parent else None) or ScriptInfo()
        app = info.load_app()
        bind_migrations(app)
        context = db.make_context(info_name, args, parent=parent, **extra)
        if args[:1] == ["upgrade"]:  # a new instance: the folder, then the secrets
            with app.app_context():
                ensure_instance()
            context.call_on_close(lambda: _rating_rows(app))
        return context


def _rating_rows(app: Flask) -> None:
    """After ``arena db upgrade``: every model's rating rows, once the schema is current."""
    from arena.infra.instance import check_schema
    from arena.voting.votes import ensure_all_ratings

    with app.app_context():
        try:
            check_schema()
        except Unavailable:  # (the upgrade failed, or went to an older revision)
            return
        ensure_all_ratings()


# The module of each command: running one imports its module alone (`arena rank` need not
# import the campaign commands' SciPy, nor the exports'). A test holds this table equal to
# the modules' COMMANDS.
COMMAND_MODULES = {
    "backup": "server", "demo": "server", "jobs": "server", "restore": "server",
    "serve": "server", "worker": "server",
    "images": "catalog", "import": "catalog", "import-prompts": "catalog", "model": "catalog",
    "owner": "accounts", "token": "accounts",
    "campaign": "campaigns",
    "elo": "analysis", "rank": "analysis", "votes": "analysis",
    "hype": "hype",
    "storage": "storage",
}


class ArenaCommands(AppGroup):
    """The app's commands (``app.cli``), each module imported when one of its commands is
    looked up: click's lazily loaded subcommands, over :data:`COMMAND_MODULES`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMAND_MODULES:
            module = importlib.import_module(f"arena.cli.{COMMAND_MODULES[name]}")
            command = next(c for c in module.COMMANDS if c.name == name)
            _wrap(command)
            self.add_command(command)
        return super().get_command(ctx, name)


def register(app: Flask) -> None:
    app.cli = ArenaCommands(app.name)
    app.cli.add_command(MigrationCommands("db", help=COMMAND_SUMMARIES["db"]))


def _make_app(web: bool = True):
    from arena import create_app

    return create_app(web=web)


# the commands that need the app's pages (Flask's own); every other builds the app without
# them (`arena serve` makes its servers' apps itself)
WEB_COMMANDS = ("routes", "run", "shell")


# What ``arena --help`` lists, so that listing needs neither the app nor the command modules
# (building the app imports Alembic, SciPy and every view: over a second). A test holds this
# table equal to the commands the app registers.
COMMAND_SUMMARIES = {
    "backup": "Back up the database, images and secrets to one file (.tar or .tar.gz).",
    "campaign": "Benchmark campaigns: define, publish, add models and gold pairs, follow progress.",
    "db": "Perform database migrations.",
    "demo": "Create the database and load the demo campaign (does nothing if already loaded).",
    "elo": "Online Elo ratings.",
    "hype": "HYPE real/fake evaluation.",
    "images": "Stored images.",
    "import": "Import a model's images from a folder or a .zip.",
    "jobs": "The queue's jobs waiting (retries included) and the unique ones under way.",
    "import-prompts": "Import a prompt set from a CSV/TSV (Prompt, Category columns) or JSON lines "
                      "file.",
    "model": "Models taking part.",
    "owner": "Model owner accounts.",
    "rank": "Rank models with Bradley-Terry or Elo, with 95% intervals and rank sets.",
    "restore": "Restore a backup into a new instance (its database must be empty).",
    "routes": "Show the routes for the app.",
    "run": "Run a development server.",
    "serve": "Serve the app (the schema must be current: `arena db upgrade`).",
    "shell": "Run a shell in the app context.",
    "storage": "The image store: copy it between the local folder and an S3 bucket.",
    "token": "Staff API tokens: analysts (exports) and operators (the /admin pages).",
    "votes": "The vote log.",
    "worker": "Take the queue's jobs (gold fills, releases, retries after an outage, the period's "
              "tick every TICK_EVERY_MIN minutes) until stopped (Ctrl+C or TERM: the job under "
              "way finishes).",
}


class ArenaGroup(FlaskGroup):
    """Flask's command group, except that listing the commands (``arena --help``) reads
    :data:`COMMAND_SUMMARIES` instead of building the app; running one builds it as before."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_SUMMARIES)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """The command ``name``, from an app built with its pages only for
        :data:`WEB_COMMANDS` (a command that serves nothing imports no view or form)."""
        info = ctx.ensure_object(ScriptInfo)
        if info.create_app is _make_app:
            info.create_app = functools.partial(_make_app, web=name in WEB_COMMANDS)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMAND_SUMMARIES)
        rows = [(name, click.Command(name, help=COMMAND_SUMMARIES[name]).get_short_help_str(limit))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


main = ArenaGroup(create_app=_make_app, help="Arena: human evaluation of image models.")
