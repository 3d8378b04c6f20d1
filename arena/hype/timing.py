"""HYPE-time exposures, on the server's clock of record.

The page shows each image for a whole number of frames and reports what it measured: the
refresh interval (``frame_ms``), how many frames the image was up (``frames``), the time from
its first frame to the first mask frame (``actual_ms``), and whether it saw the tab hidden
or a frame dropped (``voided``). The server asked for the exposure, so it bounds the report:

* the refresh interval must be one a display has (``HYPE_FRAME_MS``: 4 to 34 ms, 240-30 Hz),
  and the one this evaluator's display reported on their first counted trial, within 5%
  (a display does not change its refresh rate between images; a page that claims 34 ms on
  one trial and 16.7 on the next is steering its exposures);
* the frame count must be exactly the one the request makes at that interval (the page
  rounds the same way); a page that drops or adds a frame voids the trial itself;
* the measured time must match the frames shown, give or take one frame;
* the answer cannot come sooner after the server served the trial than the 3-2-1 countdown
  and the exposure take, nor later than ``HYPE_ANSWER_LIMIT_MS`` after the image went.

A report that fails a bound is not believed: the trial is voided for "timing" (it does not
count, and it counts towards the evaluator's void limit) and the exposure the server records
is never the page's claim but ``frames x frame_ms`` of a report that passed, held within
the staircase's range.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from scipy.special import bdtr


@dataclass(frozen=True)
class Report:
    """What the page says about one timed trial."""

    frames: int | None = None
    frame_ms: float | None = None
    actual_ms: float | None = None
    voided: bool = False


def judge(requested_ms: float, served_at: datetime | None, now: datetime,
          report: Report, display_ms: float | None = None,
          exposure_range: tuple[float, float] = (0.0, math.inf)) -> dict:
    """The values a timed trial is recorded with: ``actual_ms``, ``frames``, ``frame_ms``,
    ``voided`` and ``void_reason`` ("page" when the page voided it, "timing" when the report
    is not believable, None when it counts). ``display_ms`` is the refresh interval the
    evaluator's earlier counted trials reported (None before the first)."""
    recorded = {"frames": report.frames, "frame_ms": report.frame_ms, "actual_ms": None,
                "voided": True}
    if report.voided:
        return {**recorded, "void_reason": "page"}
    if not believable(requested_ms, served_at, now, report, display_ms):
        return {**recorded, "void_reason": "timing"}
    low, high = exposure_range
    actual = min(max(report.frames * report.frame_ms, low), high)
    return {**recorded, "actual_ms": actual, "voided": False, "void_reason": None}


def frames_for(requested_ms: float, frame_ms: float) -> int:
    """The frame count the page shows for ``requested_ms``: JavaScript's Math.round."""
    return max(1, math.floor(requested_ms / frame_ms + 0.5))


def believable(requested_ms: float, served_at: datetime | None, now: datetime,
               report: Report, display_ms: float | None = None) -> bool:
    cfg = current_app.config
    low, high = cfg["HYPE_FRAME_MS"]
    frames, frame_ms, actual = report.frames, report.frame_ms, report.actual_ms
    if frames is None or frame_ms is None or actual is None or served_at is None:
        return False
    if not (math.isfinite(frame_ms) and math.isfinite(actual) and low <= frame_ms <= high):
        return False
    if display_ms is not None and abs(frame_ms - display_ms) > 0.05 * display_ms:
        return False
    if frames != frames_for(requested_ms, frame_ms) or abs(actual - frames * frame_ms) > frame_ms:
        return False
    elapsed = (now - served_at).total_seconds() * 1000
    shown = cfg["HYPE_COUNTDOWN_MS"] + (frames - 1) * frame_ms
    return shown <= elapsed <= shown + frame_ms + cfg["HYPE_ANSWER_LIMIT_MS"]


def below_chance(right: int, counted: int) -> bool:
    """Whether ``right`` of ``counted`` answers is less than guessing would give, at the
    one-sided level ``HYPE_BELOW_CHANCE_P``."""
    if counted <= 0:
        return False
    # the binomial CDF (scipy.special, not scipy.stats: the CLI starts 0.25 s sooner)
    return float(bdtr(right, counted, 0.5)) < current_app.config["HYPE_BELOW_CHANCE_P"]


def steered(exposure_ms: list[float], correct: list[bool]) -> bool:
    """Whether the answers at a stage's exposures shorter than its median one are wrong
    more often than guessing allows (:func:`below_chance`): inconsistent with a viewer, who
    is at chance where the image is too short to see. Someone who knows the answers (an
    owner who recognises their images) and is wrong on purpose below the exposure they
    steer the staircase to, right above it, is right overall more often than not. (Guessing
    below it instead passes: that path is a sharp viewer's.)"""
    if not exposure_ms:
        return False
    median = statistics.median(exposure_ms)
    short = [ok for ms, ok in zip(exposure_ms, correct, strict=True) if ms < median]
    return below_chance(sum(short), len(short))


def too_many_voids(voided: int, answered: int) -> bool:
    """Whether an evaluator voided more of their trials than ``HYPE_VOID_LIMIT`` allows."""
    return answered > 0 and voided / answered > current_app.config["HYPE_VOID_LIMIT"]
