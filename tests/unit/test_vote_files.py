"""Vote files read column by column (pyarrow) give exactly what the row reader gives, for
CSV, JSON lines and Parquet; and a wrong row is still named by its line (of Parquet, its
row)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from pyarrow import parquet

from arena.analysis import vote_files
from arena.analysis.vote_files import _read_rows, read_votes
from arena.infra.tabular import TableError


def _rows(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    names = ["Model A", "b, quoted", "C\u00e9", "d"]
    rows = []
    for k in range(n):
        left, right = rng.choice(len(names), 2, replace=False)
        rows.append({"left": names[left], "right": names[right],
                     "winner": ("left", "right", "tie")[k % 3 if k % 5 else 0],
                     "voter": f"v{rng.integers(0, 7)}", "prompt": int(rng.integers(0, 4))})
    return rows


def _csv(rows, header=("left", "right", "winner", "voter", "prompt")) -> str:
    def cell(value):
        text = str(value)
        return f'"{text}"' if "," in text else f" {text} "

    lines = [",".join(header)] + [",".join(cell(r[c.strip().lower()]) for c in header)
                                  for r in rows]
    return "\ufeff" + "\n".join(lines) + "\n\n"


def _same(got, want):
    assert got.names == want.names
    for field in ("winners", "losers", "ties"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    for field in ("voters", "prompts"):
        a, b = getattr(got, field), getattr(want, field)
        assert (a is None) == (b is None), field
        if a is not None:  # the same grouping, whatever the numbers
            pairs = set(zip(a.tolist(), b.tolist(), strict=True))
            assert len(pairs) == len(set(a.tolist())) == len(set(b.tolist())), field


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_csv_and_json_lines_read_column_wise_as_row_by_row(tmp_path, seed):
    rows = _rows(300, seed)
    path = tmp_path / "votes.csv"
    path.write_text(_csv(rows, header=(" Left", "RIGHT ", "winner", "Voter", "prompt",
                                       "extra")[:5]), encoding="utf-8")
    _same(read_votes(path), _read_rows(path))
    assert vote_files._problem(vote_files._csv_columns(path)) is None  # (read by pyarrow)
    lines = tmp_path / "votes.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    _same(read_votes(lines), _read_rows(lines))
    assert vote_files._problem(vote_files._json_columns(lines)) is None
    _same(read_votes(lines), read_votes(path))


def test_parquet_reads_as_the_same_votes_in_csv(tmp_path):
    rows = _rows(200, 5)
    path = tmp_path / "votes.csv"
    path.write_text(_csv(rows))
    table = pa.table({"Left": [r["left"] for r in rows], "right": [r["right"] for r in rows],
                      "winner": [r["winner"] for r in rows],
                      "voter": [r["voter"] for r in rows]})
    parquet.write_table(table, tmp_path / "votes.parquet")
    got = read_votes(tmp_path / "votes.parquet")
    want = read_votes(path)
    assert got.prompts is None
    got.prompts = want.prompts
    _same(got, want)


@pytest.mark.parametrize("body,message", [
    ("left,right,winner\nA,B,left\nA,B,draw\n", "votes.csv: line 3: winner must be left"),
    ('left,right,winner\nA,B,left\n"A\nA",B,left\nA,,left\n',
     "votes.csv: line 5: 'left' and 'right' must name models"),  # (a quoted line break)
    ("left,right,winner\nA,B,tie\nA,A,left\n", "votes.csv: line 3: a model cannot face itself"),
    ("left,right,winner\nA,B\n", "votes.csv: line 2: winner must be left, right or tie, not ''"),
    ("left,right,winner,voter\nA,B,left,v1\nA,B,tie,\n", "voter column is empty on 1 of 2"),
    ("left,right\nA,B\n", "votes.csv: line 1: missing column(s) winner"),
])
def test_a_wrong_row_is_named_by_its_line(tmp_path, body, message):
    path = tmp_path / "votes.csv"
    path.write_text(body)
    with pytest.raises(TableError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_votes(path)


def test_json_lines_and_parquet_name_theirs(tmp_path):
    lines = tmp_path / "votes.jsonl"
    lines.write_text('{"left": "A", "right": "B", "winner": "left"}\n\n'
                     '{"left": "A", "right": "B", "winner": "Left"}\n')
    with pytest.raises(TableError, match=r"votes.jsonl: line 3: winner must be left, right "
                                         r"or tie, not 'Left'"):
        read_votes(lines)
    path = tmp_path / "votes.parquet"
    parquet.write_table(pa.table({"left": ["A", "A"], "right": ["B", "A"],
                                  "winner": ["left", "tie"]}), path)
    with pytest.raises(TableError, match=r"votes.parquet: row 2: a model cannot face itself"):
        read_votes(path)
    parquet.write_table(pa.table({"left": ["A"], "right": ["B"]}), path)
    with pytest.raises(TableError, match="missing column"):
        read_votes(path)
    path.write_bytes(b"not parquet")
    with pytest.raises(TableError, match="not a readable Parquet file"):
        read_votes(path)
    with pytest.raises(TableError, match=r"unknown file type \(use .csv, .jsonl or .parquet\)"):
        read_votes(tmp_path / "votes.xlsx")
