"""Immutable image files under opaque content-hash URLs."""

import re

from flask import Blueprint, abort, send_file

from ..images import storage_name
from ..storage import get_storage

bp = Blueprint("images", __name__)
SHA256 = re.compile(r"^[0-9a-f]{64}$")
ONE_YEAR = 31_536_000


@bp.get("/img/<sha>/<variant>.webp")
def serve(sha: str, variant: str):
    if not SHA256.match(sha):
        abort(404)
    try:
        name = storage_name(sha, variant)
    except KeyError:
        abort(404)
    storage = get_storage()
    if not storage.exists(name):
        abort(404)
    response = send_file(
        storage.open(name), mimetype="image/webp", max_age=ONE_YEAR, etag=f"{sha}-{variant}"
    )
    response.headers["Cache-Control"] = f"public, max-age={ONE_YEAR}, immutable"
    return response


def image_url(sha: str, variant: str = "phone", external: bool = False) -> str:
    from flask import url_for

    return url_for("images.serve", sha=sha, variant=variant, _external=external)
