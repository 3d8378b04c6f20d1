import io

import pytest
from PIL import Image as PILImage

from arena import images
from arena.storage import get_storage


def png_bytes(img, fmt="PNG", **kw):
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def test_store_writes_full_and_phone_variants_under_content_hash(ctx):
    img = PILImage.new("RGB", (1000, 500), (10, 200, 30))
    row = images.store(img, model_id=None, prompt_id=None)
    storage = get_storage()
    with storage.open(images.storage_name(row.sha256, "phone")) as fh:
        phone = PILImage.open(fh)
        phone.load()
    assert phone.format == "WEBP" and max(phone.size) == 384
    assert (row.width, row.height) == (1000, 500)
    assert storage.exists(images.storage_name(row.sha256, "full"))


def test_identical_image_is_stored_once(ctx):
    a = images.store(PILImage.new("RGB", (30, 30), "red"), model_id=None, prompt_id=None)
    b = images.store(PILImage.new("RGB", (30, 30), "red"), model_id=None, prompt_id=None)
    assert a is b


def test_decode_applies_exif_orientation_and_drops_metadata(ctx):
    img = PILImage.new("RGB", (40, 20), "blue")
    exif = PILImage.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    decoded = images.decode(png_bytes(img, "JPEG", exif=exif))
    assert decoded.size == (20, 40)
    assert not decoded.getexif()


@pytest.mark.parametrize("data,reason", [
    (b"definitely not an image", "not a readable image"),
    (png_bytes(PILImage.new("RGB", (10, 10)), "GIF"), "format GIF not accepted"),
    (png_bytes(PILImage.new("RGB", (64, 64)))[:60], "not a readable image"),
])
def test_decode_refuses_bad_bytes(ctx, data, reason):
    with pytest.raises(images.ImageRejected, match=reason):
        images.decode(data)


def test_decode_refuses_too_many_pixels(ctx):
    data = png_bytes(PILImage.new("L", (3000, 3000)))
    with pytest.raises(images.ImageRejected, match="pixel limit"):
        images.decode(data, max_pixels=1_000_000)
