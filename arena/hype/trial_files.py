"""HYPE trials collected elsewhere: CSV with
``evaluator, model, image, is_real, judged_real, exposure_ms, block`` (``model`` empty for
real images), read and scored. Every problem names its line."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from arena.infra.tabular import FALSE, TRUE, TableError, read_table
from arena.ranking.hype import Separability, Trials, score_infinity, score_time, separability

COLUMNS = ("evaluator", "model", "image", "is_real", "judged_real", "exposure_ms", "block")
REAL, FAKE = TRUE | {"real"}, FALSE | {"fake"}
TrialsFileError = TableError  # a trials file that cannot be read


def read_trials(path: str | Path, need_time: bool = False) -> Trials:
    """Parse a trials CSV. Raises TableError naming the first bad line."""
    required = ["evaluator", "model", "is_real", "judged_real"]
    if need_time:
        required += ["exposure_ms", "block"]
    ev, model, real, judged, exposure, block, image = [], [], [], [], [], [], []
    for row in read_table(path, allowed=("csv",), required=required):
        is_real = row.boolean("is_real", REAL, FAKE)
        if is_real and row.get("model"):
            raise row.error("a real image has no model")
        if not is_real and not row.get("model"):
            raise row.error("a fake image needs its model")
        ev.append(row.required("evaluator"))
        model.append(row.get("model"))
        real.append(is_real)
        judged.append(row.boolean("judged_real", REAL, FAKE))
        image.append(row.get("image"))
        if need_time:
            exposure.append(row.number("exposure_ms", 0, 60_000))
            block.append(row.get("block", "1"))
    if not ev:
        raise TableError(f"{Path(path).name}: no trials found")
    named = all(image)  # the two-way bootstrap needs every trial's image
    return Trials(np.array(ev), np.array(model), np.array(real, bool), np.array(judged, bool),
                  np.array(exposure, float) if need_time else None,
                  np.array(block) if need_time else None,
                  np.array(image) if named else None)


def score_file(path: str | Path, mode: str, *, rounds: int, rng: np.random.Generator
               ) -> tuple[list, Separability]:
    """Read and score a trials file in ``mode`` (infinity or time): the per-model scores
    and the separability tests. Raises TableError for a file the scores cannot come from
    (a bad line, an evaluator who judged several models)."""
    trials = read_trials(path, need_time=mode == "time")
    scorer = score_infinity if mode == "infinity" else score_time
    try:
        scores, per_evaluator = scorer(trials, rounds=rounds, rng=rng)
    except ValueError as exc:
        raise TableError(f"{Path(path).name}: {exc}") from exc
    return scores, separability(per_evaluator)
