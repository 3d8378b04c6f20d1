"""The instance folder: where a deployment keeps its database, images and secrets."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from flask import Flask, current_app

from arena.config import SECRET_SETTINGS
from arena.errors import Unavailable


def instance_folder(config: dict | None = None) -> str:
    """The instance folder: ``INSTANCE_PATH`` in ``config``, else ``ARENA_INSTANCE_PATH``,
    else Flask's default for the package (``instance/`` beside it in a checkout)."""
    instance_path = (config or {}).get("INSTANCE_PATH") or os.environ.get("ARENA_INSTANCE_PATH")
    return str(Path(instance_path).resolve()) if instance_path else Flask("arena").instance_path


def ensure_instance() -> list[str]:
    """Create the instance folder and persist every secret that is not configured yet
    (``SECRET_KEY``, ``PSEUDONYM_KEY``) to ``instance/config.py`` (mode 0600, not in git),
    so every server process signs and pseudonymises with the same keys. Returns the names of
    the keys written (also set on the running app)."""
    instance = Path(current_app.instance_path)
    instance.mkdir(mode=0o700, parents=True, exist_ok=True)  # (the mode of a new folder)
    config_file = instance / "config.py"
    text = config_file.read_text() if config_file.exists() else ""
    written = []
    for key in SECRET_SETTINGS:
        ephemeral = key in current_app.config.get("EPHEMERAL_SECRETS", [])
        if not ephemeral or f"ARENA_{key}" in os.environ or f"{key} =" in text:
            continue
        value = secrets.token_hex(32)
        with config_file.open("a") as fh:
            fh.write(f"{key} = {value!r}\n")
        current_app.config[key] = value
        current_app.config["EPHEMERAL_SECRETS"].remove(key)
        written.append(key)
    if config_file.exists():
        os.chmod(config_file, 0o600)
    return written


def bind_migrations(app: Flask) -> None:
    """Bind Flask-Migrate to ``app`` on first use. Importing it imports Alembic (0.2 s), which
    the server and commands that never migrate should not pay for."""
    if "migrate" not in app.extensions:
        from flask_migrate import Migrate

        from arena.config import PACKAGE_DIR
        from arena.extensions import db

        Migrate(app, db, directory=str(PACKAGE_DIR / "migrations"), render_as_batch=True)


def upgrade_schema(revision: str = "head") -> None:
    """Bring the current app's schema to ``revision`` (the newest migration by default)."""
    from flask_migrate import upgrade

    bind_migrations(current_app)
    upgrade(revision=revision)


def upgrade_database() -> list[str]:
    """Persist the secrets, then bring the schema to the newest migration. Returns the
    names of the secrets written."""
    written = ensure_instance()
    upgrade_schema()
    return written


def schema_revisions() -> tuple[set[str], set[str], set[str]]:
    """The current app's database revisions, the newest ones this release ships, and every
    one it knows."""
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from arena.config import PACKAGE_DIR
    from arena.extensions import db

    with db.engine.connect() as connection:
        current = set(MigrationContext.configure(connection).get_current_heads())
    script = ScriptDirectory(str(PACKAGE_DIR / "migrations"))
    return current, set(script.get_heads()), {s.revision for s in script.walk_revisions()}


def check_schema() -> None:
    """Raises Unavailable when the database is behind this release's newest migration:
    schema upgrades are a release step (``arena db upgrade``), run once before the new
    servers start. A schema newer than the release (one this release does not know) is
    served, with a warning: during a release the old servers run on the upgraded schema."""
    current, shipped, known = schema_revisions()
    if current == shipped:
        return
    if current - known:
        logging.getLogger(__name__).warning(
            "the database schema is at %s, newer than this release's %s",
            ", ".join(sorted(current)), ", ".join(sorted(shipped)))
        return
    found = (f"schema is at {', '.join(sorted(current))}, not {', '.join(sorted(shipped))}"
             if current else "has no schema yet")
    raise Unavailable(f"The database {found}. Run `arena db upgrade` (once, before "
                      "the servers start), then start the server again.")
