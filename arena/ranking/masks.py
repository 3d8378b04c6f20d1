"""Noise masks for HYPE-time: phase-scrambled copies of the test images.

Keeping an image's amplitude spectrum and randomising its phase gives noise with the same
spatial-frequency content (and overall colour) as the images being tested, so a mask hides
the after-image without adding a new kind of signal, and no external model is needed.
"""

from __future__ import annotations

import numpy as np


def phase_scramble(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A phase-scrambled copy of ``image`` (H x W or H x W x C, uint8 or float).

    One random phase field is shared by all channels (so colours stay correlated as in the
    source); it is taken from the FFT of real white noise, which keeps the result real.
    Returns uint8 with each channel's mean and standard deviation matched to the source.
    """
    source = np.asarray(image, dtype=float)
    if source.ndim == 2:
        source = source[:, :, None]
    height, width, _ = source.shape
    noise_phase = np.angle(np.fft.fft2(rng.standard_normal((height, width))))
    out = np.empty_like(source)
    for c in range(source.shape[2]):
        channel = source[:, :, c]
        spectrum = np.fft.fft2(channel - channel.mean())
        scrambled = np.real(np.fft.ifft2(np.abs(spectrum) * np.exp(1j * (np.angle(spectrum)
                                                                          + noise_phase))))
        std = scrambled.std()
        scaled = (scrambled - scrambled.mean()) / (std if std > 0 else 1.0)
        out[:, :, c] = scaled * channel.std() + channel.mean()
    out = np.clip(np.round(out), 0, 255).astype(np.uint8)
    return out[:, :, 0] if np.asarray(image).ndim == 2 else out
