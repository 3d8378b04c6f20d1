"""Votes collected elsewhere: CSV or JSON lines with ``left,right,winner[,voter]``.

``winner`` is ``left``, ``right`` or ``tie``. Every problem names the line it is on.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .ranking import aggregate

OUTCOMES = ("left", "right", "tie")


class VoteFileError(ValueError):
    pass


@dataclass
class ExternalVotes:
    names: list[str]
    winners: np.ndarray
    losers: np.ndarray
    ties: np.ndarray

    def win_matrix(self) -> np.ndarray:
        """Wins with a tie counted as half a win each way."""
        return aggregate(self.winners, self.losers, len(self.names), ties=self.ties)

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """(strict wins, symmetric tie counts) for Davidson's model."""
        from .ranking.davidson import split_outcomes

        return split_outcomes(self.winners, self.losers, len(self.names), self.ties)


def _rows(path: Path):
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise VoteFileError(f"{path.name}: not UTF-8 text ({exc.reason})") from exc
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = {"left", "right", "winner"} - {f.strip().lower() for f in reader.fieldnames or []}
        if missing:
            raise VoteFileError(f"{path.name}: line 1: missing column(s) {', '.join(sorted(missing))}")
        for row in reader:
            yield reader.line_num, {(k or "").strip().lower(): (v or "").strip()
                                    for k, v in row.items()}
    elif suffix in (".jsonl", ".ndjson"):
        for line, chunk in enumerate(text.splitlines(), start=1):
            if not chunk.strip():
                continue
            try:
                obj = json.loads(chunk)
            except json.JSONDecodeError as exc:
                raise VoteFileError(f"{path.name}: line {line}: invalid JSON ({exc.msg})")
            if not isinstance(obj, dict):
                raise VoteFileError(f"{path.name}: line {line}: expected an object")
            yield line, {k.lower(): str(v).strip() if v is not None else "" for k, v in obj.items()}
    else:
        raise VoteFileError(f"{path.name}: unknown file type (use .csv or .jsonl)")


def read_votes(path: str | Path) -> ExternalVotes:
    """Parse a votes file. Raises ``VoteFileError`` naming the first bad line."""
    path = Path(path)
    index: dict[str, int] = {}
    winners, losers, ties = [], [], []
    for line, row in _rows(path):
        left, right, outcome = row.get("left", ""), row.get("right", ""), row.get("winner", "")
        if not left or not right:
            raise VoteFileError(f"{path.name}: line {line}: 'left' and 'right' must name models")
        if left == right:
            raise VoteFileError(f"{path.name}: line {line}: a model cannot face itself ({left})")
        if outcome not in OUTCOMES:
            raise VoteFileError(
                f"{path.name}: line {line}: winner must be left, right or tie, not {outcome!r}")
        a = index.setdefault(left, len(index))
        b = index.setdefault(right, len(index))
        winners.append(b if outcome == "right" else a)
        losers.append(a if outcome == "right" else b)
        ties.append(outcome == "tie")
    if not winners:
        raise VoteFileError(f"{path.name}: no votes found")
    return ExternalVotes(list(index), np.asarray(winners), np.asarray(losers),
                         np.asarray(ties))
