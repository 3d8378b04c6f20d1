"""Blind presentation: the names and bytes of the images voters and evaluators see.

Nothing but pixels (docs/design.md). An image reaches a voter only as

* a **per-use name**: ``t<task><side>`` for a side of an arena task, ``h<trial>`` for a HYPE
  trial, ``m<stage>x<k>`` for a noise mask of a HYPE stage, followed by a MAC keyed with a
  secret derived from ``SECRET_KEY``. The same image gets a new name in every task, so a
  name says nothing about the image (not its storage hash, which anyone holding the source
  file could recompute), cannot be guessed for another voter's task, and a gold pair met
  twice does not look the same twice;
* **one size and one encoding**: the :func:`arena.catalog.images.present` square at one of
  ``PRESENT_SIZES``, whatever the source's resolution or aspect ratio;
* **one byte length per session**: every image of an arena session's tasks is padded to
  the longest of them at that size (:func:`pad_webp`), so "pick the smaller file" cannot
  answer a pair, nor "the shortest task" point at the gold pair; for HYPE, **one
  byte length per run**: every image and mask of a run is padded to the largest of them, so
  not even the length of a response tells real from fake.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from sqlalchemy import func, select
from sqlalchemy.orm import joinedload

from arena.catalog.images import presented_bytes, presented_length
from arena.errors import NotFound
from arena.extensions import db
from arena.infra.secrets import derived_key
from arena.models import HypeRun, HypeStage, HypeTrial, Image, Owner, Task

FILLER = 64  # bytes at least at the end of every arena file: keyed filler, never the picture's
NAME = re.compile(r"^([thm])(\d{1,18})(l|r|x\d{1,3})?-([A-Za-z0-9_-]{22})$")


def _key() -> bytes:
    return derived_key(current_app.config["SECRET_KEY"], b"arena image names")


def _mac(body: str) -> str:
    digest = hmac.digest(_key(), body.encode(), "sha256")[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def name_for(kind: str, ident: int, slot: str = "") -> str:
    body = f"{kind}{ident}{slot}"
    return f"{body}-{_mac(body)}"


def task_image_name(task: Task, side: str) -> str:
    return name_for("t", task.id, side[0])


def trial_image_name(trial: HypeTrial) -> str:
    return name_for("h", trial.id)


def mask_name(stage: HypeStage, index: int) -> str:
    return name_for("m", stage.id, f"x{index}")


def task_sizes(task) -> tuple[int, ...]:
    """The sizes a task's two images are offered at (``task`` an ORM task or a shown one,
    :class:`arena.voting.shown.ShownTask`: its ``left_image`` and ``right_image`` have a
    width and a height): those no larger than the smaller image's short side (the smallest
    size always). Upscaling one side only would make its large variant compress differently
    from its small one, and a script comparing the two could tell a low-resolution model
    apart; offering both sides the same sizes, none of them upscaled for the sharper one,
    leaves nothing to compare."""
    sizes = sorted(current_app.config["PRESENT_SIZES"])
    sides = [img for img in (task.left_image, task.right_image) if img is not None]
    native = min((min(i.width or 0, i.height or 0) for i in sides), default=0)
    fitting = tuple(s for s in sizes if s <= native)
    return fitting or (sizes[0],)


def zoom_size(task) -> int | None:
    """The full-screen view's larger size for ``task`` (as :func:`task_sizes` takes it):
    the largest of ``ZOOM_SIZES`` that both images reach at source, or None (the view
    shows the card's largest)."""
    sides = [img for img in (task.left_image, task.right_image) if img is not None]
    native = min((min(i.width or 0, i.height or 0) for i in sides), default=0)
    return max((s for s in current_app.config["ZOOM_SIZES"] if s <= native), default=None)


def presented(name: str, size: int) -> bytes:
    """The bytes behind a presented name at ``size``. Raises NotFound for a name the server
    did not make (or one whose task or trial is gone), and for a size it does not serve."""
    match = NAME.match(name)
    if match is None:
        raise NotFound("no such image")
    kind, ident, slot, mac = match.groups()
    if not hmac.compare_digest(mac, _mac(f"{kind}{ident}{slot or ''}")):
        raise NotFound("no such image")
    ident = int(ident)
    if kind == "t":
        task = db.session.get(Task, ident)
        if task is None or slot not in ("l", "r") or (
                size not in task_sizes(task) and size != zoom_size(task)):
            raise NotFound("no such image")
        data = presented_bytes(task.left_image if slot == "l" else task.right_image, size)
        return pad_webp(data, session_length(task, size), key=_key() + data[:64])
    if size != current_app.config["HYPE_PRESENT_SIZE"]:
        raise NotFound("no such image")
    if kind == "h":
        trial = db.session.get(HypeTrial, ident)
        if trial is None:
            raise NotFound("no such image")
        run = db.session.get(HypeStage, trial.stage_id).run
        return _padded(presented_bytes(trial.image, size), run)
    stage = db.session.get(HypeStage, ident)
    index = int(slot[1:]) if slot and slot.startswith("x") else -1
    if stage is None or not 0 <= index < len(stage.run.masks):
        raise NotFound("no such image")
    return _padded(presented_bytes(stage.run.masks[index], size), stage.run)


def session_length(task: Task, size: int) -> int:
    """The byte length every image of ``task``'s session is served at, at ``size``: the
    longest presented file among them (of the tasks that offer that size) and a little
    filler more, so that no file of a session ends as its picture does (the longest, left
    unpadded, was told by its ending). A damaged gold copy's grain made the longest file of
    its session (benchmarks/blinding.py)."""
    tasks = db.session.scalars(select(Task).where(Task.session_id == task.session_id).options(
        joinedload(Task.left_image), joinedload(Task.right_image))).all()
    shown = {image.id: image for t in tasks
             if size in task_sizes(t) or size == zoom_size(t)
             for image in (t.left_image, t.right_image)}
    return max(presented_length(image, size) for image in shown.values()) + FILLER


def _padded(data: bytes, run: HypeRun) -> bytes:
    return pad_webp(data, run.pad_bytes or 0, key=_key() + data[:64])


def pad_webp(data: bytes, total: int, key: bytes = b"") -> bytes:
    """``data`` (a simple lossy WebP, as :func:`arena.catalog.images.present` writes)
    grown to ``total`` bytes (rounded up to even) *inside* its VP8 chunk, with the RIFF and
    chunk sizes saying so. Bytes added after the file would leave the true length in its
    header, which tells real from fake; every size field says ``total``, and the filler is
    keyed pseudo-random, not a run of zeros, so it looks like the entropy-coded data around
    it. A VP8 decoder stops where the picture ends and never reads the filler: the pixels
    are unchanged (tests/security)."""
    total += total % 2
    if len(data) >= total:
        return data
    if data[:4] != b"RIFF" or data[8:16] != b"WEBPVP8 ":
        raise ValueError("pad_webp expects a simple lossy WebP")
    payload = int.from_bytes(data[16:20], "little")
    body = data[20:20 + payload]
    grown = total - 20
    filler = hashlib.shake_256(key + len(body).to_bytes(4, "little")).digest(grown - payload)
    return (b"RIFF" + (total - 8).to_bytes(4, "little") + b"WEBPVP8 "
            + grown.to_bytes(4, "little") + body + filler)


def refresh_padding(run: HypeRun) -> int:
    """Set the run's byte length to the largest presented HYPE variant among its pool (its
    models' images, the real images and its masks); not committed. Returns it."""
    size = current_app.config["HYPE_PRESENT_SIZE"]
    pool = db.session.scalars(select(Image).where(
        Image.quarantined.is_(False),
        Image.is_real.is_(True) | Image.model_id.in_([m.id for m in run.models]))).all()
    largest = max((presented_length(image, size) for image in [*pool, *run.masks]), default=0)
    run.pad_bytes = max(run.pad_bytes or 0, largest + largest % 2)
    return run.pad_bytes


def quarantined_count() -> int:
    """Uploads kept out of the arena because their bytes were held already (for operators)."""
    return db.session.scalar(select(func.count()).select_from(Image)
                             .where(Image.quarantined.is_(True)))


@dataclass(frozen=True)
class Collision:
    """A held upload and the image it repeats, for an operator to judge."""

    held_id: int
    held_model: str
    held_owner: str | None
    original_id: int
    original: str  # "model <name> (owner <name>)", "real image" or "gold / mask image"
    uploaded_at: datetime


def collisions() -> list[Collision]:
    """Every held upload with the first image of the same bytes, newest first."""
    out = []
    held = db.session.scalars(select(Image).where(Image.quarantined.is_(True))
                              .order_by(Image.id.desc())).all()
    for row in held:
        first = db.session.scalar(select(Image).where(
            Image.sha256 == row.sha256, Image.quarantined.is_(False)).order_by(Image.id)
            .limit(1))
        if first is None:
            continue
        if first.model is not None:
            original = f"model {first.model.name} (owner {_owner_name(first.model)})"
        else:
            original = "real image" if first.is_real else "gold / mask image"
        out.append(Collision(row.id, row.model.name if row.model else "?",
                             _owner_name(row.model), first.id, original, row.created_at))
    return out


def _owner_name(model) -> str | None:
    owner = db.session.get(Owner, model.owner_id) if model and model.owner_id else None
    return owner.name if owner else None
