"""Presented images under per-use names (see :mod:`arena.catalog.presentation`): one size,
one encoding, and headers that are the same for every image -- no ETag or Last-Modified
from the file, nothing but the bytes."""

from flask import Blueprint, Response, current_app, g, url_for

from arena.catalog.presentation import presented

bp = Blueprint("images", __name__)
ONE_YEAR = 31_536_000


@bp.get("/img/<name>/<int:size>.webp")
def serve(name: str, size: int):
    response = Response(presented(name, size), mimetype="image/webp")
    # a name is made for one task and never changes meaning: cache it for as long as wanted
    response.headers["Cache-Control"] = f"private, max-age={ONE_YEAR}, immutable"
    return response


def image_urls(name: str, external: bool = False, sizes=None) -> dict[int, str]:
    """The URL of ``name`` at each of ``sizes`` (default: every presented size), smallest
    first."""
    sizes = sorted(sizes or current_app.config["PRESENT_SIZES"])
    head, tail = _route(external)
    return {size: f"{head}{name}{tail}/{size}.webp" for size in sizes}


# An image's URLs differ only in its name and size, and url_for for each was a fifth of a
# session's response (benchmarks/request_cost.py): the route is built once per request
# with this in place of the name (a name is letters, digits, "-" and "_": nothing of it
# is escaped) and split around it; the rest is string work.
_PLACEHOLDER = "arena-image-name"


def _route(external: bool) -> tuple[str, str]:
    """The route's URL before and after the name, up to the size (once per request)."""
    routes = g.get("arena_image_routes")
    if routes is None:
        routes = g.arena_image_routes = {}
    route = routes.get(external)
    if route is None:
        url = url_for("images.serve", name=_PLACEHOLDER, size=0, _external=external)
        head, _, tail = url.removesuffix("/0.webp").rpartition(_PLACEHOLDER)
        route = routes[external] = (head, tail)
    return route


def image_url(name: str, size: int | None = None, external: bool = False) -> str:
    size = size or current_app.config["PRESENT_SIZES"][0]
    return url_for("images.serve", name=name, size=size, _external=external)
