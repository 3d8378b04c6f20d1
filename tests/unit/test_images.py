import io

import pytest
from PIL import Image as PILImage

from arena.catalog import images
from arena.errors import NotFound
from arena.infra.storage import get_storage


def png_bytes(img, fmt="PNG", **kw):
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def test_store_keeps_the_full_image_and_presents_centred_squares(ctx):
    # a wide image, red on the left, green in the middle, blue on the right
    img = PILImage.new("RGB", (1000, 500), (200, 20, 20))
    img.paste((20, 200, 20), (250, 0, 750, 500))
    img.paste((20, 20, 200), (750, 0, 1000, 500))
    row = images.store(img, model_id=None, prompt_id=None)
    storage = get_storage()
    assert storage.exists(images.full_name(row.sha256))
    assert (row.width, row.height) == (1000, 500)
    for size in ctx.config["PRESENT_SIZES"]:
        shown = PILImage.open(io.BytesIO(images.presented_bytes(row, size)))
        shown.load()
        assert shown.format == "WEBP" and shown.size == (size, size)
        assert not shown.info.get("exif") and not shown.info.get("icc_profile")
        # centre-cropped: only the green middle half is left, no bars, no squashing
        corners = [shown.getpixel(p) for p in ((2, 2), (size - 3, size - 3))]
        assert all(g > 150 and r < 80 and b < 80 for r, g, b in corners), corners
        assert storage.exists(images.presented_name(row.sha256, size))
    with pytest.raises(NotFound):
        images.presented_bytes(row, 500)


def test_variants_are_made_when_stored_and_prepare_fills_gaps(ctx):
    """Rendered at storage, so a first view is as quick as any later one (a slow first
    fetch told a script which images were fresh gold copies). ``arena images
    prepare`` makes what is missing after the sizes change or files are lost."""
    rows = [images.store(PILImage.new("RGB", (60, 90), "red"), model_id=None, prompt_id=None),
            images.store(PILImage.new("RGB", (90, 60), "blue"), model_id=None, prompt_id=None)]
    storage = get_storage()
    sizes = ctx.config["PRESENT_SIZES"]
    assert all(storage.exists(images.presented_name(r.sha256, s)) for r in rows for s in sizes)
    assert images.prepare_presented() == 0
    for row in rows:
        storage.path(images.presented_name(row.sha256, sizes[0])).unlink()
    assert images.prepare_presented() == 2
    assert images.prepare_presented() == 0


def test_prepare_again_makes_an_upgraded_instances_variants_at_their_keyed_phase(ctx):
    """Variants made before the keyed phase were an owner's offline re-encode byte for
    byte; ``arena images prepare --again`` makes every one again."""
    import numpy as np

    rng = np.random.default_rng(0)
    img = PILImage.fromarray(rng.integers(0, 255, (300, 300, 3), dtype=np.uint8))
    row = images.store(img, model_id=None, prompt_id=None)
    size = ctx.config["PRESENT_SIZES"][0]
    keyed = images.presented_bytes(row, size)
    old = images.present(img, size, (0.0, 0.0))  # (as an owner, or the old code, makes it)
    assert old[20:84] != keyed[20:84]
    get_storage().put(images.presented_name(row.sha256, size), old)
    result = ctx.test_cli_runner().invoke(args=["images", "prepare", "--again"])
    assert result.exit_code == 0, result.output
    assert images.presented_bytes(row, size) == keyed


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
