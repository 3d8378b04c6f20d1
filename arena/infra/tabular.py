"""One reader for the table files people hand to Arena: CSV, TSV and JSON lines.

Prompt sets, vote files, HYPE trial files and upload manifests all read through here, so
they accept the same things (UTF-8 with or without BOM, column names in any case, blank
JSON lines) and refuse alike: every problem is a :class:`TableError` naming the file and
the line, as ``votes.csv: line 7: winner must be left, right or tie``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.errors import Rejected

KINDS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
TRUE, FALSE = {"1", "true", "yes"}, {"0", "false", "no"}


class TableError(Rejected):
    """A table that cannot be read; the message names the file and the line."""


@dataclass(frozen=True)
class Row:
    """One record: its file's name, its line number and its values by lower-case column."""

    source: str
    line: int
    values: Mapping[str, str]

    def get(self, column: str, default: str = "") -> str:
        return self.values.get(column) or default

    def error(self, message: str) -> TableError:
        return TableError(f"{self.source}: line {self.line}: {message}")

    def required(self, column: str, what: str | None = None) -> str:
        value = self.get(column)
        if not value:
            raise self.error(f"empty {what or column}")
        return value

    def boolean(self, column: str, true=TRUE, false=FALSE) -> bool:
        value = self.get(column).lower()
        if value in true:
            return True
        if value in false:
            return False
        raise self.error(f"{column} must be 1/0 or true/false, not {self.get(column)!r}")

    def number(self, column: str, low: float | None = None, high: float | None = None
               ) -> float:
        """A finite number, within (low, high) exclusive when given."""
        try:
            value = float(self.get(column))
        except ValueError:
            raise self.error(f"{column} must be a number, not {self.get(column)!r}") from None
        if value != value or value in (float("inf"), float("-inf")) or \
                (low is not None and value <= low) or (high is not None and value >= high):
            raise self.error(f"{column} out of range")
        return value


def kind_of(path: Path, allowed: Sequence[str]) -> str:
    """The table kind of ``path`` from its suffix. Raises TableError if not allowed."""
    kind = KINDS.get(path.suffix.lower())
    if kind not in allowed:
        names = ", ".join(f".{k}" for k in allowed)
        raise TableError(f"{path.name}: unknown file type (use {names})")
    return kind


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TableError(f"{path.name}: not UTF-8 text ({exc.reason})") from exc


def read_table(path: str | Path, *, allowed: Sequence[str] = ("csv", "tsv", "jsonl"),
               required: Sequence[str] = (), aliases: Mapping[str, Sequence[str]] | None = None,
               ) -> Iterator[Row]:
    """The rows of the file at ``path`` (its kind from the suffix, among ``allowed``).

    ``aliases`` maps a column name to other accepted names (``{"prompt": ("text",)}``);
    ``required`` columns must be in the header (CSV/TSV) or in each object (JSON lines).
    Values are stripped strings ("" for a missing cell or a JSON null). Raises TableError.
    """
    path = Path(path)
    kind = kind_of(path, allowed)
    yield from parse_table(read_text(path), kind, path.name, required=required,
                           aliases=aliases)


def parse_table(text: str, kind: str, source: str, *, required: Sequence[str] = (),
                aliases: Mapping[str, Sequence[str]] | None = None) -> Iterator[Row]:
    """The rows of ``text`` read as ``kind`` (csv, tsv or jsonl); ``source`` names it in
    errors. See :func:`read_table`."""
    rename = _renamer(aliases or {})
    if kind == "jsonl":
        rows = _json_rows(text, source, rename)
    else:
        rows = _delimited_rows(text, source, "\t" if kind == "tsv" else ",", rename, required)
    for row in rows:
        missing = [c for c in required if c not in row.values]
        if missing:
            raise row.error(f"missing {', '.join(missing)}")
        yield row


def _renamer(aliases: Mapping[str, Sequence[str]]):
    lookup = {alt.lower(): name for name, alts in aliases.items() for alt in alts}

    def rename(key) -> str:
        key = str(key or "").strip().lower()
        return lookup.get(key, key)

    return rename


def _delimited_rows(text, source, delimiter, rename, required) -> Iterator[Row]:
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = [rename(h) for h in next(reader)]
    except StopIteration:
        header = []
    missing = [c for c in required if c not in header]
    if missing:
        raise TableError(f"{source}: line 1: missing column(s) {', '.join(missing)} "
                         f"(found {', '.join(h for h in header if h) or 'none'})")
    try:
        for cells in reader:
            if not cells:  # a blank line
                continue
            cells += [""] * (len(header) - len(cells))
            values = {h: c.strip() for h, c in zip(header, cells, strict=False) if h}
            yield Row(source, reader.line_num, values)
    except csv.Error as exc:
        raise TableError(f"{source}: line {reader.line_num}: {exc}") from exc


def _json_rows(text, source, rename) -> Iterator[Row]:
    for line, chunk in enumerate(text.splitlines(), start=1):
        if not chunk.strip():
            continue
        try:
            obj = json.loads(chunk)
        except (json.JSONDecodeError, RecursionError) as exc:
            message = getattr(exc, "msg", "nested too deeply")
            raise TableError(f"{source}: line {line}: invalid JSON ({message})") from None
        if not isinstance(obj, dict):
            raise TableError(f"{source}: line {line}: expected an object")
        values = {rename(k): "" if v is None else str(v).strip() for k, v in obj.items()}
        yield Row(source, line, values)
