import numpy as np

from arena.campaigns.demo import render
from arena.ranking.masks import phase_scramble


def amplitude(channel):
    return np.abs(np.fft.fft2(channel - channel.mean()))


def test_mask_keeps_the_spectrum_but_not_the_picture():
    image = np.asarray(render("A red colored car.", 0, 0).resize((128, 128)))
    mask = phase_scramble(image, np.random.default_rng(0))
    assert mask.shape == image.shape and mask.dtype == np.uint8
    for c in range(3):
        src, out = image[:, :, c].astype(float), mask[:, :, c].astype(float)
        # same amplitude spectrum (up to clipping and rounding) ...
        corr = np.corrcoef(np.log1p(amplitude(src)).ravel(),
                           np.log1p(amplitude(out)).ravel())[0, 1]
        assert corr > 0.9
        # ... and the same mean brightness
        assert abs(src.mean() - out.mean()) < 3
    # but the picture itself is gone: over many masks, no correlation with the source (one
    # mask of a smooth picture can correlate by chance through its few strong low frequencies)
    corrs = [np.corrcoef(image[:, :, 0].ravel().astype(float),
                         phase_scramble(image, np.random.default_rng(s))[:, :, 0].ravel()
                         .astype(float))[0, 1] for s in range(20)]
    assert abs(np.mean(corrs)) < 0.15


def test_masks_are_seeded_and_differ_between_seeds():
    image = np.asarray(render("Two cats.", 1, 0).resize((64, 64)))
    a = phase_scramble(image, np.random.default_rng(1))
    assert np.array_equal(a, phase_scramble(image, np.random.default_rng(1)))
    assert not np.array_equal(a, phase_scramble(image, np.random.default_rng(2)))


def test_grey_image():
    grey = np.full((16, 16), 128, np.uint8)
    assert phase_scramble(grey, np.random.default_rng(0)).shape == (16, 16)
