"""Votes collected elsewhere: CSV or JSON lines with ``left,right,winner[,voter][,prompt]``.

``winner`` is ``left``, ``right`` or ``tie``. The optional ``voter`` and ``prompt`` columns
(any labels) let intervals resample voters or prompts instead of single votes. Every problem
names the line it is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arena.infra.tabular import TableError, read_table
from arena.ranking import PairCounts, aggregate

OUTCOMES = ("left", "right", "tie")


VoteFileError = TableError  # a votes file that cannot be read


@dataclass
class ExternalVotes:
    names: list[str]
    winners: np.ndarray
    losers: np.ndarray
    ties: np.ndarray
    voters: list[str] | None = None
    prompts: list[str] | None = None

    def default_cluster(self) -> str:
        return "voter" if self.voters is not None and len(set(self.voters)) > 1 else "none"

    def units(self, cluster: str = "none") -> list[str] | None:
        """Each vote's resampling unit for ``cluster`` (voter, prompt; None for none).
        Raises TableError when the file lacks the column the cluster needs."""
        units = {"voter": self.voters, "prompt": self.prompts, "none": None}
        if cluster not in units:
            raise TableError(f"cluster must be one of {', '.join(units)}")
        if cluster != "none" and units[cluster] is None:
            raise TableError(f"--cluster {cluster} needs a '{cluster}' column in the file")
        return units[cluster]

    def counts(self, cluster: str = "none") -> PairCounts:
        """The votes per resampling unit (see :meth:`units`)."""
        return PairCounts.from_outcomes(self.winners, self.losers, len(self.names),
                                        ties=self.ties, units=self.units(cluster))

    def win_matrix(self) -> np.ndarray:
        """Wins with a tie counted as half a win each way."""
        return aggregate(self.winners, self.losers, len(self.names), ties=self.ties)

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """(strict wins, symmetric tie counts) for Davidson's model."""
        from arena.ranking.davidson import split_outcomes

        return split_outcomes(self.winners, self.losers, len(self.names), self.ties)


def read_votes(path: str | Path) -> ExternalVotes:
    """Parse a votes file (.csv or .jsonl). Raises TableError naming the first bad line."""
    path = Path(path)
    index: dict[str, int] = {}
    winners, losers, ties = [], [], []
    labels: dict[str, list[str]] = {"voter": [], "prompt": []}
    for row in read_table(path, allowed=("csv", "jsonl"), required=("left", "right", "winner")):
        left, right, outcome = row.get("left"), row.get("right"), row.get("winner")
        if not left or not right:
            raise row.error("'left' and 'right' must name models")
        if left == right:
            raise row.error(f"a model cannot face itself ({left})")
        if outcome not in OUTCOMES:
            raise row.error(f"winner must be left, right or tie, not {outcome!r}")
        a = index.setdefault(left, len(index))
        b = index.setdefault(right, len(index))
        winners.append(b if outcome == "right" else a)
        losers.append(a if outcome == "right" else b)
        ties.append(outcome == "tie")
        for column, seen in labels.items():
            value = row.get(column)
            seen.append("" if value is None else str(value).strip())
    if not winners:
        raise TableError(f"{path.name}: no votes found")
    columns = {}
    for column, seen in labels.items():
        given = sum(1 for v in seen if v)
        if given and given < len(seen):
            raise TableError(f"{path.name}: the {column} column is empty on "
                             f"{len(seen) - given} of {len(seen)} lines; fill it or drop it")
        columns[column] = seen if given else None
    return ExternalVotes(list(index), np.asarray(winners), np.asarray(losers),
                         np.asarray(ties), columns["voter"], columns["prompt"])
