"""HYPE trials collected elsewhere: CSV with
``evaluator, model, image, is_real, judged_real, exposure_ms, block`` (``model`` empty for
real images). Every problem names its line."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from .ranking.hype import Trials

COLUMNS = ("evaluator", "model", "image", "is_real", "judged_real", "exposure_ms", "block")
TRUE, FALSE = {"1", "true", "yes", "real"}, {"0", "false", "no", "fake"}


class TrialsFileError(ValueError):
    pass


def _bool(value: str, column: str, line: int, name: str) -> bool:
    v = value.strip().lower()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise TrialsFileError(f"{name}: line {line}: {column} must be 1/0 or true/false, "
                          f"not {value!r}")


def read_trials(path: str | Path, need_time: bool = False) -> Trials:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TrialsFileError(f"{path.name}: not UTF-8 text ({exc.reason})") from exc
    reader = csv.DictReader(io.StringIO(text))
    header = [(f or "").strip().lower() for f in reader.fieldnames or []]
    required = ["evaluator", "model", "is_real", "judged_real"]
    if need_time:
        required += ["exposure_ms", "block"]
    missing = [c for c in required if c not in header]
    if missing:
        raise TrialsFileError(f"{path.name}: line 1: missing column(s) {', '.join(missing)}")
    ev, model, real, judged, exposure, block = [], [], [], [], [], []
    for row in reader:
        line = reader.line_num
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        if not row["evaluator"]:
            raise TrialsFileError(f"{path.name}: line {line}: empty evaluator")
        is_real = _bool(row["is_real"], "is_real", line, path.name)
        if is_real and row["model"]:
            raise TrialsFileError(f"{path.name}: line {line}: a real image has no model")
        if not is_real and not row["model"]:
            raise TrialsFileError(f"{path.name}: line {line}: a fake image needs its model")
        ev.append(row["evaluator"])
        model.append(row["model"])
        real.append(is_real)
        judged.append(_bool(row["judged_real"], "judged_real", line, path.name))
        if need_time:
            try:
                exposure.append(float(row["exposure_ms"]))
            except ValueError:
                raise TrialsFileError(f"{path.name}: line {line}: exposure_ms must be a "
                                      f"number, not {row['exposure_ms']!r}") from None
            if not 0 < exposure[-1] < 60_000:
                raise TrialsFileError(f"{path.name}: line {line}: exposure_ms out of range")
            block.append(row["block"] or "1")
    if not ev:
        raise TrialsFileError(f"{path.name}: no trials found")
    return Trials(np.array(ev), np.array(model), np.array(real, bool), np.array(judged, bool),
                  np.array(exposure, float) if need_time else None,
                  np.array(block) if need_time else None)
