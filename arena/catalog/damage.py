"""Visibly damaged copies of images, for gold pairs built from a campaign's own images: the
intact image is the right answer to "which do you prefer?" and "which has fewer odd or
impossible-looking things?". Pure numpy and Pillow; the ``rng`` decides where it strikes.
"""

from __future__ import annotations

import numpy as np
from PIL import Image as PILImage


def damage(img: PILImage.Image, rng: np.random.Generator) -> PILImage.Image:
    """A copy of ``img`` with faults no careful viewer misses: a large block turned to coarse
    pixels, bands torn sideways, a strip with its colour channels swapped, and grain."""
    arr = np.asarray(img.convert("RGB"), dtype=np.float64).copy()
    h, w = arr.shape[:2]
    # coarse pixels over 30-50% of the picture
    bh, bw = int(h * rng.uniform(0.55, 0.7)), int(w * rng.uniform(0.55, 0.7))
    top, left = int(rng.integers(0, h - bh + 1)), int(rng.integers(0, w - bw + 1))
    block = PILImage.fromarray(arr[top:top + bh, left:left + bw].astype(np.uint8))
    cell = max(4, min(bh, bw) // 10)
    coarse = block.resize((max(1, bw // cell), max(1, bh // cell)), PILImage.Resampling.BOX)
    arr[top:top + bh, left:left + bw] = np.asarray(
        coarse.resize((bw, bh), PILImage.Resampling.NEAREST), dtype=np.float64)
    # bands torn sideways
    for _ in range(int(rng.integers(3, 6))):
        y, height = int(rng.integers(0, h - 2)), int(rng.integers(max(2, h // 40), h // 12 + 3))
        arr[y:y + height] = np.roll(arr[y:y + height], int(rng.integers(w // 10, w // 3)),
                                    axis=1)
    # a vertical strip with its colour channels swapped
    x, width = int(rng.integers(0, w - w // 6)), w // 6
    arr[:, x:x + width] = arr[:, x:x + width, ::-1]
    # (faint: a heavy grain made the copy's file up to 58 times its source's, and every
    # file of its session is served as long as the longest)
    arr += rng.normal(0, 4, arr.shape)
    return PILImage.fromarray(arr.clip(0, 255).astype(np.uint8))
