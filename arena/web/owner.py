"""Owner pages: sign in with the owner token, register models, upload images, follow them.

The upload form posts every file at once without JavaScript; with it, static/js/upload.js
sends the files one by one (``HX-Request``), each with the manifest if one was chosen, and
appends each returned result row, so the owner sees a progress bar and a per-file result list.
"""

from __future__ import annotations

from functools import wraps

from flask import (
    Blueprint,
    current_app,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from arena.accounts import owners, signins
from arena.catalog import ingest, registry
from arena.web import limits
from arena.web.errors import renders_errors
from arena.web.requests import is_htmx

bp = Blueprint("owner", __name__, url_prefix="/owner")


def owner_required(view):
    @wraps(view)
    def wrapped(*args, **kwargs):
        g.owner = current_owner()
        if g.owner is None:
            session.pop("owner", None)
            return redirect(url_for("owner.home"))
        return view(*args, **kwargs)

    return wrapped


def _dashboard(owner, error=None, status=200):
    return render_template("owner/dashboard.html", owner=owner, error=error,
                           models=registry.owners_dashboard(owner)), status


def current_owner():
    """The owner this browser is signed in as (a cookie from before their last sign-out
    counts for nothing), or None."""
    return signins.current(owners.owner_by_id(session.get("owner")), session.get("signed_in"))


@bp.get("/")
def home():
    owner = current_owner()
    if owner is None:
        return render_template("owner/sign_in.html")
    return _dashboard(owner)


@bp.post("/sign-in")
@limits.per_network("RATE_LIMIT_SIGN_IN")
def sign_in():
    owner = owners.owner_by_token((request.form.get("token") or "").strip())
    if owner is None:
        return render_template("owner/sign_in.html",
                               error="That token is not valid (or was revoked)."), 401
    session.clear()
    session["owner"] = owner.id
    session["signed_in"] = signins.begin()
    return redirect(url_for("owner.home"), 303)


@bp.post("/sign-out")
def sign_out():
    owner = current_owner()
    if owner is not None:
        signins.end(owner)
    session.pop("owner", None)
    return redirect(url_for("owner.home"), 303)


@bp.post("/models")
@owner_required
@renders_errors(lambda exc, status: _dashboard(g.owner, str(exc), status))
def register():
    model = registry.register_model(g.owner, request.form.get("name"),
                                    request.form.get("description"), request.form.get("link"))
    return redirect(url_for("owner.model_page", name=model.name), 303)


def _render_model(model, status: int = 200, **extra):
    return render_template("owner/model.html", model=model,
                           stats=registry.model_stats(model),
                           max_bytes=current_app.config["IMAGE_MAX_BYTES"], **extra), status


@bp.get("/models/<name>")
@owner_required
def model_page(name: str):
    return _render_model(registry.owned_model(g.owner, name))


def _upload_refused(exc, status: int, name: str):
    """A refused batch (an unusable manifest): one result row for the page's script, the
    model page with the reason without it."""
    if is_htmx():
        row = ingest.IngestResult.refused("manifest.csv", exc)
        return render_template("owner/_results.html", results=[row]), status
    return _render_model(registry.owned_model(g.owner, name), status, error=str(exc))


@bp.post("/models/<name>/upload")
@owner_required
@limits.per_network("RATE_LIMIT_UPLOADS")
@renders_errors(lambda exc, status, name: _upload_refused(exc, status, name))
def upload(name: str):
    model = registry.owned_model(g.owner, name)
    files = [(f.filename or "upload", f.read()) for f in request.files.getlist("images")]
    results = ingest.ingest_uploads(model, files, request.form.get("prompt_id") or None,
                                    current_app.config["UPLOAD_REQUEST_SECONDS"])
    if is_htmx():
        response = current_app.make_response(
            render_template("owner/_results.html", results=results))
    else:
        response = current_app.make_response(_render_model(model, results=results))
    response.headers["Vary"] = "HX-Request"
    return response
