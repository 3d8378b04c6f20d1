"""One setting scales every wait in the suite: ``ARENA_TEST_TIMEOUT_SCALE`` (default 1), for a
machine busy with other work, where a deadline that holds on an idle box would fail."""

from __future__ import annotations

import os

SCALE = max(float(os.environ.get("ARENA_TEST_TIMEOUT_SCALE", "1") or 1), 1.0)


def seconds(value: float) -> float:
    """``value`` seconds, scaled for this machine."""
    return value * SCALE
