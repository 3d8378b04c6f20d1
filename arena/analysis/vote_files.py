"""Votes collected elsewhere: CSV, JSON lines or Parquet with ``left,right,winner[,voter]
[,prompt]``.

``winner`` is ``left``, ``right`` or ``tie``. The optional ``voter`` and ``prompt`` columns
(any labels) let intervals resample voters and prompts (both when both vary), voters or
prompts instead of single votes. A file is read
column by column with pyarrow; when something in it is wrong, a CSV or JSON lines file is read
again row by row (:mod:`arena.infra.tabular`), so that the problem names its line, and a
Parquet file's problem names its row.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arena.infra.tabular import TableError, read_table
from arena.ranking import PairCounts, aggregate

OUTCOMES = ("left", "right", "tie")
SUFFIXES = (".csv", ".jsonl", ".ndjson", ".parquet")
LABELS = ("voter", "prompt")


VoteFileError = TableError  # a votes file that cannot be read


@dataclass
class ExternalVotes:
    names: list[str]
    winners: np.ndarray
    losers: np.ndarray
    ties: np.ndarray
    voters: np.ndarray | None = None  # each vote's voter, numbered
    prompts: np.ndarray | None = None

    def default_cluster(self) -> str:
        """Voters and prompts, or the one of them that varies, or none."""
        varies = [name for name, labels in (("voter", self.voters), ("prompt", self.prompts))
                  if labels is not None and len(np.unique(labels)) > 1]
        return "+".join(varies) or "none"

    def units(self, cluster: str = "none") -> np.ndarray | None:
        """Each vote's resampling unit for ``cluster`` (voter, prompt; None for none; rows of
        voter and prompt for voter+prompt). Raises TableError when the file lacks a column
        the cluster needs."""
        units = {"voter": self.voters, "prompt": self.prompts, "none": None}
        if cluster not in (*units, "voter+prompt"):
            raise TableError(f"cluster must be one of voter+prompt, {', '.join(units)}")
        for name in cluster.split("+") if cluster != "none" else ():
            if units[name] is None:
                raise TableError(f"--cluster {cluster} needs a '{name}' column in the file")
        if cluster == "voter+prompt":
            return np.column_stack([self.voters, self.prompts])
        return units[cluster]

    def counts(self, cluster: str = "none") -> PairCounts:
        """The votes per resampling unit (see :meth:`units`; both ways for voter+prompt)."""
        if cluster == "voter+prompt":
            self.units(cluster)
            return PairCounts.crossed(len(self.names), self.voters, self.prompts, self.winners,
                                      self.losers, np.ones(self.winners.size), self.ties)
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
    """Parse a votes file (.csv, .jsonl or .parquet). Raises TableError naming the first bad
    line (of a Parquet file, row)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise TableError(f"{path.name}: unknown file type (use .csv, .jsonl or .parquet)")
    if suffix == ".parquet":
        columns = _parquet_columns(path)
        problem = _problem(columns)
        if problem is not None:
            row, message = problem
            where = "" if row is None else f" row {row + 1}:"
            raise TableError(f"{path.name}:{where} {message}")
        return _votes(columns, path.name)
    columns = _csv_columns(path) if suffix == ".csv" else _json_columns(path)
    if columns is None or _problem(columns) is not None:
        return _read_rows(path)  # (which names the line of the problem)
    return _votes(columns, path.name)


# -- column by column (pyarrow) -----------------------------------------------------------------

def _csv_columns(path: Path) -> dict | None:
    """The file's columns, or None where pyarrow cannot read it as the row reader does (bad
    UTF-8, a short row: that reader names it)."""
    from pyarrow import ArrowException, string
    from pyarrow import csv as arrow_csv

    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            header = next(csv.reader(handle), [])
        table = arrow_csv.read_csv(
            path, parse_options=arrow_csv.ParseOptions(newlines_in_values=True),
            convert_options=arrow_csv.ConvertOptions(
                column_types={name: string() for name in header}, strings_can_be_null=False))
    except (ArrowException, UnicodeDecodeError, csv.Error, ValueError):
        return None
    return _named(table)


def _json_columns(path: Path) -> dict | None:
    from pyarrow import ArrowException
    from pyarrow import json as arrow_json

    try:
        return _named(arrow_json.read_json(path))
    except (ArrowException, ValueError):
        return None


def _parquet_columns(path: Path) -> dict:
    from pyarrow import ArrowException, parquet

    try:
        table = parquet.read_table(path)
    except (ArrowException, OSError) as exc:
        raise TableError(f"{path.name}: not a readable Parquet file ({exc})") from None
    columns = _named(table)
    if columns is None:
        raise TableError(f"{path.name}: the columns must be text, each named once")
    return columns


def _named(table) -> dict | None:
    """The vote columns by stripped lower-case name, as stripped text ("" for null), or None
    when two names are one or a column cannot be text."""
    import pyarrow as pa
    from pyarrow import ArrowException
    from pyarrow import compute as pc

    columns: dict = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        key = str(name).strip().lower()
        if key in columns:
            return None
        if key not in ("left", "right", "winner", *LABELS):
            continue
        try:
            text = column if column.type == pa.string() else pc.cast(column, pa.string())
        except ArrowException:
            return None
        columns[key] = pc.utf8_trim_whitespace(pc.fill_null(text, "")).combine_chunks()
    return columns


def _problem(columns: dict) -> tuple[int | None, str] | None:
    """The first thing wrong, as the row reader would say it: (row index, or None for the
    whole file; message), or None."""
    import pyarrow as pa
    from pyarrow import compute as pc

    missing = [c for c in ("left", "right", "winner") if c not in columns]
    if missing:
        return None, f"missing column(s) {', '.join(missing)}"
    left, right, outcome = columns["left"], columns["right"], columns["winner"]
    if not len(left):
        return None, "no votes found"
    unnamed = pc.or_(pc.equal(left, ""), pc.equal(right, ""))
    itself = pc.equal(left, right)
    unknown = pc.invert(pc.is_in(outcome, value_set=pa.array(OUTCOMES)))
    row = pc.index(pc.or_(pc.or_(unnamed, itself), unknown), True).as_py()
    if row < 0:
        return None
    if unnamed[row].as_py():
        return row, "'left' and 'right' must name models"
    if itself[row].as_py():
        return row, f"a model cannot face itself ({left[row].as_py()})"
    return row, f"winner must be left, right or tie, not {outcome[row].as_py()!r}"


def _votes(columns: dict, source: str) -> ExternalVotes:
    """The votes of checked columns (:func:`_problem` found nothing), the models numbered in
    the order the file first names them, as the row reader numbers them."""
    import pyarrow as pa
    from pyarrow import compute as pc

    left, right, outcome = columns["left"], columns["right"], columns["winner"]
    n = len(left)
    encoded = pc.dictionary_encode(pa.concat_arrays([left, right]))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = encoded.dictionary.to_pylist()
    first = np.full(len(names), 2 * n)
    np.minimum.at(first, codes[:n], 2 * np.arange(n))
    np.minimum.at(first, codes[n:], 2 * np.arange(n) + 1)
    old = np.argsort(first, kind="stable")
    new = np.empty(len(names), dtype=np.int64)
    new[old] = np.arange(len(names))
    a, b = new[codes[:n]], new[codes[n:]]
    right_won = _flags(pc.equal(outcome, "right"))
    labels = {c: _labels(columns.get(c), source, c) for c in LABELS}
    return ExternalVotes([names[k] for k in old], np.where(right_won, b, a),
                         np.where(right_won, a, b), _flags(pc.equal(outcome, "tie")),
                         labels["voter"], labels["prompt"])


def _flags(mask) -> np.ndarray:
    return mask.to_numpy(zero_copy_only=False).astype(bool)


def _labels(column, source: str, name: str) -> np.ndarray | None:
    """Each vote's label in ``column``, numbered; None without the column or with it empty.
    Raises TableError when it is empty on some rows only."""
    from pyarrow import compute as pc

    if column is None:
        return None
    empty = pc.sum(pc.equal(column, "")).as_py() or 0
    if empty == len(column):
        return None
    if empty:
        raise TableError(f"{source}: the {name} column is empty on {empty} of {len(column)} "
                         f"lines; fill it or drop it")
    return pc.dictionary_encode(column).indices.to_numpy(zero_copy_only=False)


# -- row by row ----------------------------------------------------------------------------------

def _read_rows(path: Path) -> ExternalVotes:
    """The row reader: slower, and names the line of any problem."""
    index: dict[str, int] = {}
    winners, losers, ties = [], [], []
    labels: dict[str, list[str]] = {column: [] for column in LABELS}
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
        columns[column] = np.unique(seen, return_inverse=True)[1].ravel() if given else None
    return ExternalVotes(list(index), np.asarray(winners), np.asarray(losers),
                         np.asarray(ties), columns["voter"], columns["prompt"])
