"""Image ingestion: safe decoding with Pillow, re-encoding, content-hash names, variants.

Every stored image is re-encoded as WebP (EXIF and other metadata dropped, orientation
applied), named by the SHA-256 of the stored bytes, with a phone-sized variant. The name is
the only thing a voter's browser ever sees, so it reveals neither model, prompt nor gold status.
"""

from __future__ import annotations

import hashlib
import io
import warnings

from flask import current_app
from PIL import Image as PILImage
from PIL import ImageOps
from sqlalchemy import select

from .extensions import db
from .models import Image
from .storage import get_storage

ALLOWED_FORMATS = {"JPEG", "PNG", "WEBP"}
EXTENSIONS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP"}
VARIANTS = ("full", "phone")


class ImageRejected(ValueError):
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
    max_pixels = max_pixels or cfg["IMAGE_MAX_PIXELS"]
    if len(data) > cfg["IMAGE_MAX_BYTES"]:
        raise ImageRejected(f"{len(data):,} bytes exceeds the {cfg['IMAGE_MAX_BYTES']:,} byte limit")
    if not data:
        raise ImageRejected("empty file")
    suffix = _suffix(filename)
    if suffix and suffix not in EXTENSIONS:
        raise ImageRejected(f"file type {suffix} not accepted (.jpg, .png or .webp)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            img = PILImage.open(io.BytesIO(data))
            if img.format not in ALLOWED_FORMATS:
                raise ImageRejected(f"format {img.format} not accepted (JPEG, PNG or WebP)")
            claimed = EXTENSIONS.get(suffix)
            if claimed is not None and claimed != img.format:
                raise ImageRejected(f"the name says {claimed} but the content is {img.format}")
            if max(img.width, img.height) > cfg["IMAGE_MAX_SIDE"]:
                raise ImageRejected(f"{img.width}x{img.height}: a side exceeds "
                                    f"{cfg['IMAGE_MAX_SIDE']} pixels")
            if img.width * img.height > max_pixels:
                raise ImageRejected(
                    f"{img.width}x{img.height} exceeds the {max_pixels:,} pixel limit"
                )
            if getattr(img, "n_frames", 1) > 1:
                raise ImageRejected("animated images are not accepted")
            img.load()
    except ImageRejected:
        raise
    except (PILImage.DecompressionBombError, PILImage.DecompressionBombWarning) as exc:
        raise ImageRejected(f"too many pixels: {exc}") from exc
    except PILImage.UnidentifiedImageError as exc:
        raise ImageRejected("not a readable image: no JPEG, PNG or WebP data inside") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageRejected(f"not a readable image: {exc}") from exc
    img = ImageOps.exif_transpose(img)
    return img.convert("RGB")


def _suffix(filename: str | None) -> str:
    if not filename or "." not in filename:
        return ""
    return "." + filename.rsplit(".", 1)[1].lower()


def _encode(img: PILImage.Image, quality: int) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="WEBP", quality=quality, method=4)
    return buf.getvalue()


def store(
    img: PILImage.Image, *, model_id: int | None, prompt_id: int | None, is_real: bool = False
) -> Image:
    """Re-encode ``img``, write it and its phone variant, and add its row (not committed).

    An image whose bytes are already stored returns the existing row.
    """
    return store_new(img, model_id=model_id, prompt_id=prompt_id, is_real=is_real)[0]


def store_new(
    img: PILImage.Image, *, model_id: int | None, prompt_id: int | None, is_real: bool = False
) -> tuple[Image, bool]:
    """As :func:`store`, also saying whether the row is new (False: identical bytes exist)."""
    img = img.convert("RGB")
    full = _encode(img, quality=90)
    sha = hashlib.sha256(full).hexdigest()
    existing = db.session.scalar(select(Image).where(Image.sha256 == sha))
    if existing is not None:
        return existing, False
    phone_size = current_app.config["IMAGE_PHONE_SIZE"]
    small = img.copy()
    small.thumbnail((phone_size, phone_size), PILImage.Resampling.LANCZOS)
    storage = get_storage()
    storage.put(f"{sha}.full.webp", full)
    storage.put(f"{sha}.phone.webp", _encode(small, quality=82))
    row = Image(
        sha256=sha,
        model_id=model_id,
        prompt_id=prompt_id,
        is_real=is_real,
        width=img.width,
        height=img.height,
    )
    db.session.add(row)
    return row, True


def storage_name(sha256: str, variant: str) -> str:
    if variant not in VARIANTS:
        raise KeyError(variant)
    return f"{sha256}.{variant}.webp"
