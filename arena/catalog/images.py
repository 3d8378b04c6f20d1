"""Images: safe decoding with Pillow, re-encoding, storage, and the presented variants.

Every stored image is re-encoded as WebP (EXIF and other metadata dropped, orientation
applied, a short side over twice the largest presented size reduced by an integer factor:
:func:`reduction`) and stored under the SHA-256 of those bytes -- a storage name only, never
shown to anyone: voters and evaluators get :func:`present`-ed squares at ``PRESENT_SIZES``
under per-task names (see :mod:`arena.catalog.presentation`).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import logging
import math
import warnings
from dataclasses import dataclass

from flask import current_app, has_request_context
from PIL import Image as PILImage
from PIL import ImageOps
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from arena.errors import NotFound, Rejected, Unavailable
from arena.extensions import db
from arena.infra import deferred
from arena.infra.secrets import derived_key
from arena.infra.storage import get_storage
from arena.models import Image

log = logging.getLogger(__name__)
ALLOWED_FORMATS = {"JPEG", "PNG", "WEBP"}
EXTENSIONS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP"}


class ImageRejected(Rejected):
    """The bytes are not an acceptable image; the message says why, for the uploader."""


def decode(data: bytes, *, max_pixels: int | None = None, filename: str | None = None
           ) -> PILImage.Image:
    """Decode untrusted bytes into an RGB image.

    Raises
    ------
    ImageRejected
        For more bytes than allowed, a format outside JPEG/PNG/WebP or other than the file
        name's extension says, more pixels or a longer side than allowed (decompression
        bombs, absurd dimensions), animation, or a truncated or corrupt file.
    """
    cfg = current_app.config
    if len(data) > cfg["IMAGE_MAX_BYTES"]:
        raise ImageRejected(f"{len(data):,} bytes exceeds the {cfg['IMAGE_MAX_BYTES']:,} "
                            "byte limit")
    if not data:
        raise ImageRejected("empty file")
    suffix = _suffix(filename)
    if suffix and suffix not in EXTENSIONS:
        raise ImageRejected(f"file type {suffix} not accepted (.jpg, .png or .webp)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            img = PILImage.open(io.BytesIO(data))
            _check_header(img, EXTENSIONS.get(suffix), max_pixels or cfg["IMAGE_MAX_PIXELS"])
            img = _decoded_small(img)
    except ImageRejected:
        raise
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:
        raise ImageRejected(f"too many pixels: {exc}") from exc
    except PILImage.UnidentifiedImageError as exc:
        raise ImageRejected("not a readable image: no JPEG, PNG or WebP data inside") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageRejected(f"not a readable image: {exc}") from exc
    ImageOps.exif_transpose(img, in_place=True)  # (no copy of the picture when upright)
    return img if img.mode == "RGB" else img.convert("RGB")


# bytes per pixel of Pillow's decoded buffer by mode (three bands are stored in four)
_PIXEL_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16B": 2, "I;16L": 2, "LA": 4, "PA": 4}


def decoded_bytes(img: PILImage.Image) -> int:
    """The bytes Pillow's buffer for ``img`` takes once decoded, from its header."""
    return img.width * img.height * _PIXEL_BYTES.get(img.mode, 4)


def reduction(width: int, height: int) -> int:
    """The integer factor the stored copy of an image is reduced by: a short side over
    twice the largest presented size comes down to between that size and twice it, and a
    picture of more pixels than a square of twice that side (a panorama) to no more, so
    presenting never upscales and the stored copy costs no more than it needs (encoding
    WebP holds about 5.5 bytes a pixel: 220 MB for 40 million)."""
    side = 2 * max(*presentable_sizes(), current_app.config["HYPE_PRESENT_SIZE"])
    return max(1, -(-min(width, height) // side),
               math.ceil(math.sqrt(width * height / side ** 2)))


def _decoded_small(img: PILImage.Image) -> PILImage.Image:
    """Decode ``img`` (opened, header checked) at no more than the stored size: a JPEG is
    decoded already scaled down (its DCT does it), anything else is decoded once and
    reduced by an integer factor before any other copy is made. The decoded buffer is
    checked against IMAGE_MAX_DECODED_BYTES before a pixel is decoded."""
    budget = current_app.config["IMAGE_MAX_DECODED_BYTES"]
    factor = reduction(img.width, img.height)
    if factor > 1 and img.format == "JPEG":
        img.draft(img.mode, (img.width // factor, img.height // factor))
    if decoded_bytes(img) > budget:
        raise ImageRejected(f"{img.width}x{img.height} in mode {img.mode} decodes to "
                            f"{decoded_bytes(img):,} bytes, over the {budget:,} byte limit")
    img.load()
    factor = reduction(img.width, img.height)
    if factor == 1:
        return img
    if img.mode not in ("L", "LA", "RGB", "RGBA", "I", "F"):
        img = img.convert("RGBA" if "A" in img.getbands() or "transparency" in img.info
                          else "RGB")
    return img.reduce(factor)  # (keeps the EXIF orientation, applied after)


def _check_header(img: PILImage.Image, claimed: str | None, max_pixels: int) -> None:
    """What the header says, checked before a single pixel is decoded."""
    if img.format not in ALLOWED_FORMATS:
        raise ImageRejected(f"format {img.format} not accepted (JPEG, PNG or WebP)")
    if claimed is not None and claimed != img.format:
        raise ImageRejected(f"the name says {claimed} but the content is {img.format}")
    max_side = current_app.config["IMAGE_MAX_SIDE"]
    if max(img.width, img.height) > max_side:
        raise ImageRejected(f"{img.width}x{img.height}: a side exceeds {max_side} pixels")
    if img.width * img.height > max_pixels:
        raise ImageRejected(f"{img.width}x{img.height} exceeds the {max_pixels:,} pixel limit")
    if getattr(img, "n_frames", 1) > 1:
        raise ImageRejected("animated images are not accepted")


def _suffix(filename: str | None) -> str:
    if not filename or "." not in filename:
        return ""
    return "." + filename.rsplit(".", 1)[1].lower()


def _encode(img: PILImage.Image, quality: int) -> bytes:
    """WebP without metadata: Pillow writes EXIF or ICC only when asked, and we never ask."""
    buf = io.BytesIO()
    img.save(buf, format="WEBP", quality=quality, method=4)
    return buf.getvalue()


def present(img: PILImage.Image, size: int, phase: tuple[float, float]) -> bytes:
    """The one way every image is shown to voters and evaluators: centre-cropped to a square
    (letterbox bars would show the aspect ratio to the eye), resampled to ``size`` pixels a
    side at a sub-pixel ``phase`` (:func:`presentation_phase`), encoded as WebP at
    ``PRESENT_QUALITY``. Native sizes and aspect ratios never reach a voter's browser."""
    side = min(img.width, img.height)
    left, top = (img.width - side) // 2, (img.height - side) // 2
    square = img.crop((left, top, left + side, top + side))  # (converted alone: less memory)
    square = square if square.mode == "RGB" else square.convert("RGB")
    # (a pixel less than the square: a shift of under one pixel stays inside it)
    square = square.resize((size, size), PILImage.Resampling.LANCZOS,
                           box=(phase[0], phase[1], phase[0] + side - 1, phase[1] + side - 1))
    return _encode(square, quality=int(current_app.config["PRESENT_QUALITY"]))


def presentation_phase(sha256: str) -> tuple[float, float]:
    """The sub-pixel offset an image is presented at, keyed by ``SECRET_KEY`` (between 0.2
    and 0.8 pixels each way): the same for every presentation of the image, but an owner
    who re-encodes an upload offline as :func:`present` would cannot make the served bytes
    and match them byte for byte."""
    key = derived_key(current_app.config["SECRET_KEY"], b"arena presentation phase")
    digest = hmac.digest(key, sha256.encode(), "sha256")
    return tuple(0.2 + 0.6 * int.from_bytes(digest[k:k + 2], "big") / 65535 for k in (0, 2))


def presentable_sizes() -> tuple[int, ...]:
    """Every size an image may be presented at: the cards' (``PRESENT_SIZES``, made with
    the image) and the full-screen view's (``ZOOM_SIZES``, made when asked for)."""
    cfg = current_app.config
    return tuple(cfg["PRESENT_SIZES"]) + tuple(cfg["ZOOM_SIZES"])


def presented_name(sha256: str, size: int) -> str:
    return f"{sha256}.p{size}.webp"


def full_name(sha256: str) -> str:
    return f"{sha256}.full.webp"


def store(
    img: PILImage.Image, *, model_id: int | None, prompt_id: int | None, is_real: bool = False
) -> Image:
    """Re-encode ``img``, write it and its presented variants, and add its row (not
    committed). An image whose bytes are already stored returns the existing row."""
    return store_new(img, model_id=model_id, prompt_id=prompt_id, is_real=is_real)[0]


def store_new(
    img: PILImage.Image, *, model_id: int | None, prompt_id: int | None, is_real: bool = False
) -> tuple[Image, bool]:
    """As :func:`store`, also saying whether the row is new (False: identical bytes exist).
    The presented variants are made now, not when first shown: a first view that took longer
    than the others would tell a script the image is new (a fresh gold copy, say)."""
    return add_prepared(prepare(img), model_id=model_id, prompt_id=prompt_id, is_real=is_real)


@dataclass(frozen=True)
class Prepared:
    """An image re-encoded and written with its presented variants, not yet a row;
    ``written``: its files were written now (no earlier store had them)."""

    sha256: str
    width: int
    height: int
    written: bool = False


def prepare(img: PILImage.Image) -> Prepared:
    """Re-encode ``img`` and write it and its presented variants (content-addressed files:
    writing them twice is harmless). The expensive half of :func:`store_new`, which needs
    no transaction: callers holding a write lock do this before taking it. A caller whose
    row then fails to commit calls :func:`discard` so no file is left without a row.

    Raises Unavailable when the image store is; what was written before it failed is
    deleted."""
    img = img if img.mode == "RGB" else img.convert("RGB")
    full = _encode(img, quality=90)
    sha = hashlib.sha256(full).hexdigest()
    storage = get_storage()
    prepared = Prepared(sha, img.width, img.height, written=not storage.exists(full_name(sha)))
    if prepared.written:  # the full file last: it vouches for the rest
        try:
            for size in current_app.config["PRESENT_SIZES"]:
                storage.put(presented_name(sha, size),
                            present(img, size, presentation_phase(sha)))
            storage.put(full_name(sha), full)
        except BaseException:
            discard(prepared)
            raise
    return prepared


def discard(prepared: Prepared) -> None:
    """Delete the files :func:`prepare` wrote for ``prepared`` unless a committed row names
    them: a store whose row did not commit (a database error, a lost race, a worker stopped)
    leaves nothing in the image store. Call after the rollback. Never raises for an image
    store that fails to delete them: in a request the job worker deletes them once it
    answers again (:mod:`arena.infra.deferred`); elsewhere the log names them."""
    if not prepared.written:
        return
    try:
        delete_unnamed(prepared.sha256)
    except Unavailable:
        if has_request_context():
            deferred.after_response("delete-unnamed", sha256=prepared.sha256)
        else:
            log.warning("image store: the files of %s were left behind (the store failed "
                        "to delete them)", full_name(prepared.sha256))


def delete_unnamed(sha256: str) -> None:
    """Delete the stored files of ``sha256`` unless a committed row names them."""
    try:
        named = db.session.scalar(select(Image.id).where(Image.sha256 == sha256)
                                  .limit(1)) is not None
    except SQLAlchemyError:  # (the database is what failed: no row can vouch for them)
        db.session.rollback()
        named = False
    if named:
        return
    storage = get_storage()
    storage.delete(full_name(sha256))  # first: without it the rest is rewritten
    for size in presentable_sizes():
        storage.delete(presented_name(sha256, size))


def add_prepared(prepared: Prepared, *, model_id: int | None, prompt_id: int | None,
                 is_real: bool = False) -> tuple[Image, bool]:
    """The row of a prepared image (not committed), or the existing one with its bytes
    (False)."""
    existing = db.session.scalar(select(Image).where(Image.sha256 == prepared.sha256)
                                 .order_by(Image.id).limit(1))
    if existing is not None:
        return existing, False
    row = Image(sha256=prepared.sha256, model_id=model_id, prompt_id=prompt_id,
                is_real=is_real, width=prepared.width, height=prepared.height)
    db.session.add(row)
    return row, True


def quarantined_copy(original: Image, *, model_id: int, prompt_id: int) -> Image:
    """A model's upload of bytes the arena holds already (another owner's image, a gold or
    a real one): a row of its own, sharing the files, that never enters a comparison or a
    HYPE pool (not committed). Telling the uploader would be an oracle for what is stored."""
    row = Image(sha256=original.sha256, model_id=model_id, prompt_id=prompt_id,
                is_real=False, width=original.width, height=original.height,
                quarantined=True)
    db.session.add(row)
    return row


def decode_stored(image: Image) -> PILImage.Image:
    """The stored full-resolution re-encode of ``image``, decoded."""
    return decode_stored_bytes(image.sha256)


def decode_stored_bytes(sha256: str) -> PILImage.Image:
    """The stored full-resolution file named by ``sha256``, decoded (no database)."""
    with get_storage().open(full_name(sha256)) as fh:
        return PILImage.open(fh).convert("RGB")


def presented_bytes(image: Image, size: int) -> bytes:
    """The presented variant of ``image`` at ``size`` (one of :func:`presentable_sizes`),
    made and stored the first time it is asked for. Raises NotFound for another size."""
    name = _presented_name(image, size)
    try:
        with get_storage().open(name) as fh:
            return fh.read()
    except FileNotFoundError:
        return _make(image, size, name)


def presented_length(image: Image, size: int) -> int:
    """The byte length of :func:`presented_bytes` (made if need be), without reading it."""
    name = _presented_name(image, size)
    try:
        return get_storage().size(name)
    except FileNotFoundError:
        return len(_make(image, size, name))


def _presented_name(image: Image, size: int) -> str:
    if size not in presentable_sizes():
        raise NotFound("no such image")
    return presented_name(image.sha256, size)


def _make(image: Image, size: int, name: str) -> bytes:
    data = present(decode_stored(image), size, presentation_phase(image.sha256))
    get_storage().put(name, data)
    return data


def stored_count() -> int:
    """How many distinct stored images there are (files, not rows)."""
    return db.session.scalar(select(func.count(func.distinct(Image.sha256))))


def prepare_presented(progress=None, again: bool = False) -> int:
    """Make every missing presented variant of every image now (after a large import, so
    first views are as quick as later ones); ``again``: every variant, the made ones too
    (made before :func:`presentation_phase`, or under another ``SECRET_KEY``). Returns how
    many were made."""
    storage = get_storage()
    sizes = current_app.config["PRESENT_SIZES"]
    made = 0
    for sha in db.session.scalars(select(Image.sha256).distinct()):
        have = {s for s in set(presentable_sizes()) if storage.exists(presented_name(sha, s))}
        missing = sorted((have if again else set()) | (set(sizes) - have))
        if missing:
            with storage.open(full_name(sha)) as fh:
                img = PILImage.open(fh).convert("RGB")
            for size in missing:
                storage.put(presented_name(sha, size),
                            present(img, size, presentation_phase(sha)))
                made += 1
        if progress is not None:
            progress(1)
    return made
