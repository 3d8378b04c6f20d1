"""Regenerate the image fixtures of this folder (run from the repository root):

    .venv/bin/python tests/data/images/make_images.py

Each file exercises one outcome of ingestion; tests/unit/test_ingest.py says which.
"""

import io
from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent


def scene(size=(64, 48), colour=(200, 60, 40)):
    img = Image.new("RGB", size, (230, 230, 240))
    ImageDraw.Draw(img).rectangle((8, 8, size[0] // 2, size[1] - 8), fill=colour)
    return img


def main():
    scene().save(HERE / "ok.png")
    scene(colour=(40, 120, 200)).save(HERE / "ok.jpg", quality=90)
    scene(colour=(60, 160, 60)).save(HERE / "ok.webp", quality=90)
    exif = Image.Exif()
    exif[0x0112] = 6  # display rotated 90 degrees clockwise
    exif[0x010F] = "ArenaTestCam"  # a maker tag that must not survive
    scene((60, 40), (240, 200, 30)).save(HERE / "exif_rotated.jpg", exif=exif)
    scene(colour=(120, 40, 160)).convert("CMYK").save(HERE / "cmyk.jpg")
    buf = io.BytesIO()
    scene((256, 256)).save(buf, "PNG")
    (HERE / "truncated.png").write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    Image.new("1", (9000, 9000)).save(HERE / "bomb.png", optimize=True)  # 81 Mpx in ~10 KB
    Image.new("RGB", (20000, 2)).save(HERE / "huge_dimensions.png")
    (HERE / "text.png").write_text("this is not an image, just text renamed to .png\n")
    frames = [scene(colour=c) for c in ((255, 0, 0), (0, 0, 255))]
    frames[0].save(HERE / "animated.webp", save_all=True, append_images=frames[1:],
                   duration=100, loop=0)
    scene(colour=(10, 10, 10)).save(HERE / "lying.png", format="JPEG")  # JPEG named .png


if __name__ == "__main__":
    main()
