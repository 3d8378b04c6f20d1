"""Owner pages: sign in with the owner token, register models, upload images, follow them.

The upload form posts every file at once without JavaScript; with it, static/js/upload.js
sends the files one by one (``HX-Request``) and appends each returned result row, so the
owner sees a progress bar and a per-file result list.
"""

from __future__ import annotations

from functools import wraps

from flask import (
    Blueprint,
    abort,
    current_app,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from .. import ingest, owners
from ..extensions import limiter

bp = Blueprint("owner", __name__, url_prefix="/owner")


def owner_required(view):
    @wraps(view)
    def wrapped(*args, **kwargs):
        g.owner = owners.owner_by_id(session.get("owner"))
        if g.owner is None:
            session.pop("owner", None)
            return redirect(url_for("owner.home"))
        return view(*args, **kwargs)

    return wrapped


def _model_or_404(name: str):
    try:
        return owners.owned_model(g.owner, name)
    except LookupError:
        abort(404)
    except PermissionError:
        abort(403)


@bp.get("/")
def home():
    owner = owners.owner_by_id(session.get("owner"))
    if owner is None:
        return render_template("owner/sign_in.html")
    models = owners.owner_models(owner)
    return render_template("owner/dashboard.html", owner=owner,
                           models=[(m, owners.model_stats(m)) for m in models])


@bp.post("/sign-in")
@limiter.limit("20/hour")
def sign_in():
    owner = owners.owner_by_token((request.form.get("token") or "").strip())
    if owner is None:
        return render_template("owner/sign_in.html",
                               error="That token is not valid (or was revoked)."), 401
    session.clear()
    session["owner"] = owner.id
    return redirect(url_for("owner.home"), 303)


@bp.post("/sign-out")
def sign_out():
    session.pop("owner", None)
    return redirect(url_for("owner.home"), 303)


@bp.post("/models")
@owner_required
def register():
    try:
        model = owners.register_model(g.owner, request.form.get("name"),
                                      request.form.get("description"), request.form.get("link"))
    except owners.OwnerError as exc:
        models = owners.owner_models(g.owner)
        return render_template("owner/dashboard.html", owner=g.owner, error=str(exc),
                               models=[(m, owners.model_stats(m)) for m in models]), 422
    return redirect(url_for("owner.model_page", name=model.name), 303)


def _render_model(model, status: int = 200, **extra):
    return render_template("owner/model.html", model=model, stats=owners.model_stats(model),
                           max_bytes=current_app.config["IMAGE_MAX_BYTES"], **extra), status


@bp.get("/models/<name>")
@owner_required
def model_page(name: str):
    return _render_model(_model_or_404(name))


@bp.post("/models/<name>/upload")
@owner_required
@limiter.limit(lambda: current_app.config["RATE_LIMIT_UPLOADS"])
def upload(name: str):
    model = _model_or_404(name)
    files = request.files.getlist("images")
    manifest = {}
    for f in files:
        if f.filename and f.filename.rsplit("/", 1)[-1] == "manifest.csv":
            try:
                rows = ingest.read_manifest(f.read().decode("utf-8-sig"), "manifest.csv")
            except (ingest.ManifestError, UnicodeDecodeError) as exc:
                return _render_model(model, 422, error=str(exc))
            manifest = {rel: pid for _, pid, rel in rows}
    results = []
    for f in files:
        filename = (f.filename or "upload").rsplit("/", 1)[-1]
        if filename == "manifest.csv":
            continue
        prompt_id = (request.form.get("prompt_id") or manifest.get(filename)
                     or ingest.prompt_id_from_filename(filename))
        if prompt_id is None:
            results.append(ingest.IngestResult(
                filename, False, "name it <prompt_id>_<n>.png or list it in manifest.csv"))
            continue
        results.append(ingest.ingest_image(model, prompt_id, f.read(), filename))
    if request.headers.get("HX-Request") == "true":
        response = current_app.make_response(
            render_template("owner/_results.html", results=results))
    else:
        response = current_app.make_response(_render_model(model, results=results))
    response.headers["Vary"] = "HX-Request"
    return response
