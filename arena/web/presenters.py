"""What a voter may see of a task: the question, the caption for alignment, two opaque URLs.

Shared by the HTML pages and the JSON API so neither can leak more than the other.
"""

from __future__ import annotations

from flask import current_app
from flask_babel import gettext

from arena import criteria
from arena.catalog.presentation import name_for, task_image_name, task_sizes, zoom_size
from arena.voting.shown import ShownTask
from arena.voting.tasks import reveal_ms
from arena.web.images import image_url, image_urls

API_TASK_FIELDS = ("task_id", "prompt", "reveal_ms", "left", "right")


def task_view(task: ShownTask, external: bool = False) -> dict:
    """The task as the voter sees it. ``prompt`` is the caption of an alignment task (else
    None); ``reveal_ms`` how long its word-by-word reveal lasts, after which the server
    accepts the confirmation that it was read; ``needs_reading`` whether that is still due."""
    criterion, caption = task.criterion, task.caption
    sizes = task_sizes(task)
    return {
        "task_id": task.id,
        "position": task.position + 1,
        "total": task.total,
        "criterion": criterion,
        "question": gettext(criteria.get(criterion).question),
        "prompt": caption,
        "reveal_ms": reveal_ms(caption),
        "word_ms": int(current_app.config["REVEAL_WORD_MS"]),
        "needs_reading": caption is not None and task.read_confirmed_at is None,
        "left": _side(task, "left", external, sizes),
        "right": _side(task, "right", external, sizes),
    }


def _side(task: ShownTask, side: str, external: bool, sizes: tuple[int, ...]) -> dict:
    """One side's image: the smallest size as ``url``, every size in ``urls`` (for a
    srcset), all under a name made for this task alone."""
    name = task_image_name(task, side)
    urls = image_urls(name, external, sizes=sizes)
    zoom = zoom_size(task)
    return {"url": next(iter(urls.values())),
            # the full-screen view's: a larger square where both sources allow
            "large": (image_urls(name, external, sizes=(zoom,))[zoom] if zoom
                      else list(urls.values())[-1]),
            "urls": {str(size): url for size, url in urls.items()},
            "srcset": ", ".join(f"{url} {size}w" for size, url in urls.items())}


def preload_view(task: ShownTask | None) -> list[dict]:
    """What the page fetches ahead, at low priority, while the voter looks at the current
    task: the next task's two images (the same srcset, so the browser picks the variant the
    next card will show). Nothing for the last task of a session."""
    if task is None:
        return []
    sizes = task_sizes(task)
    return [_side(task, side, False, sizes) for side in ("left", "right")]


def api_task(task: ShownTask) -> dict:
    """``API_TASK_FIELDS`` of :func:`task_view`, each side's ``url`` and ``urls`` (the
    session's question is said once, beside its tasks)."""
    caption, sizes = task.caption, task_sizes(task)
    view = {"task_id": task.id, "prompt": caption, "reveal_ms": reveal_ms(caption)}
    for side in ("left", "right"):
        urls = image_urls(task_image_name(task, side), True, sizes=sizes)
        view[side] = {"url": next(iter(urls.values())),
                      "urls": {str(size): url for size, url in urls.items()}}
    return view


def reported_image_url(item) -> str:
    """A reported image as the reporting voter saw it (under that task's name): the
    operator judges the same bytes."""
    return image_url(name_for("t", item.task_id, item.side[0]))
