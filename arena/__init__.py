"""Arena: human evaluation of generative image models.

``create_app`` reads like a table of contents and does no I/O beyond reading configuration:
creating tables and loading data belong to CLI commands (``arena db upgrade``, ``arena demo``).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from flask import Flask, request

from arena.config import PACKAGE_DIR, SECRET_SETTINGS, Defaults
from arena.infra.instance import instance_folder


class EphemeralSecretError(RuntimeError):
    """Serving was asked for with secrets that exist only in this process."""


def _resource_dir(name: str) -> str:
    """``templates``/``static``/``prompts`` sit at the top of a checkout and inside the wheel."""
    inside = PACKAGE_DIR / name
    return str(inside if inside.is_dir() else PACKAGE_DIR.parent / name)


def create_app(config: dict | None = None, *, web: bool = True) -> Flask:
    """Build the application. ``config`` overrides every other source (tests use it).
    ``web=False``: the services without a page (no views, forms, limits or headers), for a
    command that serves nothing."""
    app = Flask(
        __name__,
        instance_relative_config=True,
        instance_path=instance_folder(config),
        template_folder=_resource_dir("templates"),
        static_folder=_resource_dir("static"),
    )
    configure_app(app, config)
    configure_extensions(app)
    if web:
        configure_proxies(app)
        configure_web_extensions(app)
        configure_input_guards(app)
        configure_blueprints(app)
        configure_templates(app)
        configure_security_headers(app)
        configure_errorhandlers(app)
        configure_server_timing(app)
    configure_events()
    configure_cli(app)
    return app


def wsgi_app() -> Flask:
    """The app for a server (``gunicorn wsgi:app``, ``arena serve``).

    Raises
    ------
    EphemeralSecretError
        When a secret is not configured: each server process would make up its own, so a
        session signed by one worker would be refused by the next.
    Unavailable
        When the database schema is not the newest migration (``arena db upgrade`` is a
        release step, not part of every start).
    """
    app = create_app()
    missing = app.config.get("EPHEMERAL_SECRETS")
    if missing:
        raise EphemeralSecretError(
            f"Arena will not serve without a persistent {' and '.join(missing)}: every worker "
            "would invent its own and sessions would break between them. Run `arena db upgrade` "
            "or `arena demo` once (they write the keys to instance/config.py), or set "
            + " and ".join(f"ARENA_{k}" for k in missing) + ".")
    from arena.infra.instance import check_schema

    with app.app_context():
        check_schema()
    from arena.infra.checkpoints import checkpoint_in_background

    checkpoint_in_background(app)  # (SQLite: WAL checkpoints out of the requests' way)
    return app


def database_url(app: Flask) -> str:
    url = app.config.get("DATABASE_URL")
    if not url:
        return "sqlite:///" + os.path.join(app.instance_path, "arena.sqlite3")
    # Plain postgresql:// means psycopg 3 here (psycopg2 is not a dependency).
    if url.startswith(("postgresql://", "postgres://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def configure_app(app: Flask, config: dict | None) -> None:
    app.config.from_object(Defaults)
    app.config.from_pyfile("config.py", silent=True)
    app.config.from_prefixed_env("ARENA")
    if config:
        app.config.update(config)
    app.config["SQLALCHEMY_DATABASE_URI"] = database_url(app)
    # a pooled PostgreSQL connection is pinged at check-out (SQLAlchemy's pool_pre_ping): one
    # that lived through a server restart is replaced before a request meets it
    options = dict(app.config.get("SQLALCHEMY_ENGINE_OPTIONS") or {})
    if not app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        options.setdefault("pool_pre_ping", True)
    app.config["SQLALCHEMY_ENGINE_OPTIONS"] = options
    for key in SECRET_SETTINGS:
        if not app.config.get(key):
            # Good enough for one-off CLI commands; `arena serve` and `arena demo` write
            # persistent keys to instance/config.py, and serving refuses to start without
            # them (see wsgi_app), so every worker signs and pseudonymises alike.
            app.config[key] = secrets.token_hex(32)
            app.config.setdefault("EPHEMERAL_SECRETS", []).append(key)
    # (one process's memory; several processes share limits only through redis://)
    app.config["RATELIMIT_STORAGE_URI"] = app.config.get("RATELIMIT_STORAGE_URI") or "memory://"
    app.config.setdefault("IMAGE_DIR", None)
    if not app.config["IMAGE_DIR"]:
        app.config["IMAGE_DIR"] = os.path.join(app.instance_path, "images")
    from arena import criteria

    criteria.configure(app)


def configure_proxies(app: Flask) -> None:
    """Behind ``TRUSTED_PROXIES`` reverse proxies, take the client address, scheme and host
    from their X-Forwarded-* headers (rate limits key on the real client, not the proxy).
    With 0 (the default) those headers are ignored: anyone could forge them. Cookies set in
    reply to an HTTPS request (as ProxyFix tells it) are marked Secure."""
    from arena.web.secure_cookies import SecureCookies

    app.wsgi_app = SecureCookies(app.wsgi_app)  # (inside ProxyFix: it sees the client's scheme)
    hops = int(app.config["TRUSTED_PROXIES"])
    if hops > 0:
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)


def configure_extensions(app: Flask) -> None:
    """What every service needs: the database, the job queue, the image store."""
    from arena.extensions import db
    from arena.infra import (
        database,  # noqa: F401  (it registers SQLite's hooks)
        devices,
        jobs,
    )
    from arena.infra.storage import open_storage

    db.init_app(app)
    devices.chosen(app.config["DEVICES"])  # (a name that is none is refused here)
    jobs.init_app(app)  # (the job queue: work in the background, and after an outage)
    # (a bucket's client is made on first use: no I/O here)
    app.extensions["arena_storage"] = open_storage(app.config["STORAGE_URL"],
                                                   app.config["IMAGE_DIR"])


def configure_web_extensions(app: Flask) -> None:
    """What pages need: forms' CSRF tokens, rate limits, compression, languages."""
    from arena.extensions import compress, csrf
    from arena.web import i18n, limits

    csrf.init_app(app)
    limits.init_app(app)
    compress.init_app(app)  # HTML, CSS, JS, JSON; never images (their bytes are the blinding)
    i18n.init_app(app)  # the voter's language (Flask-Babel) and the switcher
    app.after_request(_static_read_whole)  # (runs before Flask-Compress's: registered after)


def _static_read_whole(response):
    """A static CSS/JS file read into memory, so Flask-Compress compresses it whole (it
    leaves streamed responses alone: see COMPRESS_STREAMS). Reading it this way keeps the
    file's close() with the response."""
    if request.endpoint == "static" and response.is_streamed \
            and response.mimetype in ("text/css", "text/javascript", "image/svg+xml"):
        response.direct_passthrough = False
        response.make_sequence()
    return response


def configure_blueprints(app: Flask) -> None:
    from arena.web import admin, api, board, campaign, hype, images, owner, voter

    app.register_blueprint(voter.bp)
    app.register_blueprint(hype.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(campaign.bp)
    app.register_blueprint(owner.bp)
    app.register_blueprint(board.bp)
    app.register_blueprint(images.bp)
    app.register_blueprint(api.bp, url_prefix="/api/v1")


def configure_templates(app: Flask) -> None:
    """``asset(path)``: a static URL carrying a hash of the file's content, so browsers may
    cache static files for a year and still get a new file the moment it changes."""
    import hashlib
    from functools import cache, lru_cache

    from flask import request, url_for

    @cache
    def content_hash(filename: str) -> str:
        return hashlib.sha256(Path(app.static_folder, filename).read_bytes()).hexdigest()[:12]

    @lru_cache(maxsize=256)  # (per mount point: a page asks for the same few on every render)
    def asset_url(script_root: str, filename: str) -> str:
        return url_for("static", filename=filename, v=content_hash(filename))

    def asset(filename: str) -> str:
        return asset_url(request.script_root, filename)

    app.jinja_env.globals["asset"] = asset


def configure_security_headers(app: Flask) -> None:
    from arena.web import headers

    headers.init_app(app)


def configure_input_guards(app: Flask) -> None:
    """Before any route exists: ids bounded to what the database holds, NUL refused."""
    from arena.web.requests import DatabaseInt, refuse_nul

    app.url_map.converters["int"] = DatabaseInt
    app.before_request(refuse_nul)


def configure_server_timing(app: Flask) -> None:
    from arena.web import server_timing

    server_timing.install(app)


def configure_errorhandlers(app: Flask) -> None:
    from arena.web import errors

    errors.register(app)


def configure_events() -> None:
    """Reactions across features (:mod:`arena.events`): a model's new image adds its pairs
    to live campaigns, matchmaking short of gold pairs gets one made from a campaign's
    images, and a replay of the vote log has the public pages take their figures afresh."""
    from arena import events

    # (blinker keeps one connection of each function: a second app connects nothing more)
    events.image_added.connect(_on_new_image)
    events.gold_wanted.connect(_on_gold_wanted)
    events.log_replayed.connect(_on_log_replayed)


# each receiver's module imported when its signal first fires: a command that fires none
# (`arena rank`) imports none of them
def _on_new_image(sender, **details) -> None:
    from arena.campaigns import campaigns

    campaigns.on_new_image(sender, **details)


def _on_gold_wanted(sender, **details) -> None:
    from arena.campaigns import gold

    gold.on_gold_wanted(sender, **details)


def _on_log_replayed(sender, **details) -> None:
    from arena.analysis import published

    published.forget(sender, **details)


def configure_cli(app: Flask) -> None:
    from arena.cli import register

    register(app)
