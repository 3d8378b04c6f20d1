"""Arena: human evaluation of generative image models.

``create_app`` reads like a table of contents and does no I/O beyond reading configuration:
creating tables and loading data belong to CLI commands (``arena db upgrade``, ``arena demo``).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from flask import Flask, jsonify, render_template, request

from .config import Defaults

PACKAGE_DIR = Path(__file__).resolve().parent


def _resource_dir(name: str) -> str:
    """``templates``/``static``/``prompts`` sit at the top of a checkout and inside the wheel."""
    inside = PACKAGE_DIR / name
    return str(inside if inside.is_dir() else PACKAGE_DIR.parent / name)


def create_app(config: dict | None = None) -> Flask:
    """Build the application. ``config`` overrides every other source (tests use it)."""
    instance_path = (config or {}).get("INSTANCE_PATH") or os.environ.get("ARENA_INSTANCE_PATH")
    app = Flask(
        __name__,
        instance_relative_config=True,
        instance_path=str(Path(instance_path).resolve()) if instance_path else None,
        template_folder=_resource_dir("templates"),
        static_folder=_resource_dir("static"),
    )
    configure_app(app, config)
    configure_extensions(app)
    configure_blueprints(app)
    configure_templates(app)
    configure_security_headers(app)
    configure_errorhandlers(app)
    configure_cli(app)
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
    app.config.setdefault("SQLALCHEMY_ENGINE_OPTIONS", {})
    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("postgresql"):
        app.config["SQLALCHEMY_ENGINE_OPTIONS"] = {
            "pool_pre_ping": True,
            **app.config["SQLALCHEMY_ENGINE_OPTIONS"],
        }
    if not app.config.get("SECRET_KEY"):
        # Good enough for one-off CLI commands; `arena serve` writes a persistent key to
        # instance/config.py before any server starts, so sessions survive restarts.
        app.config["SECRET_KEY"] = secrets.token_hex(32)
        app.config["SECRET_KEY_EPHEMERAL"] = True
    app.config.setdefault("IMAGE_DIR", None)
    if not app.config["IMAGE_DIR"]:
        app.config["IMAGE_DIR"] = os.path.join(app.instance_path, "images")


def configure_extensions(app: Flask) -> None:
    from . import database  # noqa: F401  (registers the SQLite engine hooks)
    from .extensions import csrf, db, limiter, migrate
    from .storage import LocalStorage

    db.init_app(app)
    migrate.init_app(app, db, directory=str(PACKAGE_DIR / "migrations"), render_as_batch=True)
    csrf.init_app(app)
    limiter.init_app(app)
    app.extensions["arena_storage"] = LocalStorage(app.config["IMAGE_DIR"])


def configure_blueprints(app: Flask) -> None:
    from .views import admin, analyst, api, campaign, hype, images, owner, voter

    app.register_blueprint(voter.bp)
    app.register_blueprint(hype.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(campaign.bp)
    app.register_blueprint(owner.bp)
    app.register_blueprint(analyst.bp)
    app.register_blueprint(images.bp)
    app.register_blueprint(api.bp, url_prefix="/api/v1")


def configure_templates(app: Flask) -> None:
    """``asset(path)``: a static URL carrying a hash of the file's content, so browsers may
    cache static files for a year and still get a new file the moment it changes."""
    import hashlib
    from functools import cache

    from flask import url_for

    @cache
    def content_hash(filename: str) -> str:
        return hashlib.sha256(Path(app.static_folder, filename).read_bytes()).hexdigest()[:12]

    def asset(filename: str) -> str:
        return url_for("static", filename=filename, v=content_hash(filename))

    app.jinja_env.globals["asset"] = asset


SECURITY_HEADERS = {
    # Everything comes from this origin; no inline script or style is used anywhere.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'self'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


def configure_security_headers(app: Flask) -> None:
    @app.after_request
    def add_headers(response):
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def configure_errorhandlers(app: Flask) -> None:
    from flask_wtf.csrf import CSRFError

    def wants_json() -> bool:
        return request.path.startswith("/api/")

    def handle(status: int, message: str):
        if wants_json():
            return jsonify(error=message), status
        return render_template("error.html", status=status, message=message), status

    @app.errorhandler(404)
    def not_found(exc):
        return handle(404, "Not found.")

    @app.errorhandler(405)
    def not_allowed(exc):
        return handle(405, "Method not allowed.")

    @app.errorhandler(413)
    def too_large(exc):
        limit = app.config["MAX_CONTENT_LENGTH"] // (1024 * 1024)
        return handle(413, f"Upload too large: at most {limit} MB per request.")

    @app.errorhandler(429)
    def too_many(exc):
        return handle(429, "Too many requests, please slow down and try again in a while.")

    @app.errorhandler(CSRFError)
    def csrf_failed(exc):
        return handle(400, "Your form expired. Please go back, reload the page and try again.")

    from sqlalchemy.exc import OperationalError, ProgrammingError

    @app.errorhandler(OperationalError)
    @app.errorhandler(ProgrammingError)
    def database_error(exc):
        message = str(getattr(exc, "orig", exc)).lower()
        missing = ("no such table", "unable to open database", "does not exist",
                   "undefinedtable")
        app.logger.error("database error: %s", exc)
        if any(m in message for m in missing):
            return handle(503, "The database is not set up yet. The operator should run "
                          "`arena db upgrade` (or `arena demo`).")
        return handle(503, "The database is unavailable right now. Please try again.")

    @app.errorhandler(500)
    def server_error(exc):
        return handle(500, "Something went wrong on our side. Please try again.")


def configure_cli(app: Flask) -> None:
    from .cli import register

    register(app)
