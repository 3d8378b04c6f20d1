"""The file formats Arena writes: one table per thing exported (a ranking, the vote log,
the skip log), read by the CLI's choices, the API's arguments, the OpenAPI description and
the writers in :mod:`arena.analysis.exports`. No heavy imports: ``arena --help`` reads it.

A new format is one row here and one writer in :mod:`arena.analysis.exports` (named by
``writer``); a test checks every row has its writer.
"""

from __future__ import annotations

from dataclasses import dataclass

from arena.errors import Invalid

PARQUET = "application/vnd.apache.parquet"


@dataclass(frozen=True)
class Format:
    name: str
    mimetype: str
    suffix: str  # of the file name
    binary: bool  # written as bytes (a ranking) or into a binary sink (a log)
    writer: str  # its function in arena.analysis.exports


def _table(*rows: Format) -> dict[str, Format]:
    return {row.name: row for row in rows}


# a ranked table: the writer takes a Ranking and returns its text or bytes
RANKING = _table(
    Format("table", "text/plain", ".txt", False, "to_table"),
    Format("csv", "text/csv", ".csv", False, "to_csv"),
    Format("json", "application/json", ".json", False, "to_json"),
    Format("parquet", PARQUET, ".parquet", True, "to_parquet"),
)
# the vote log: the writer takes batches of rows and yields text, or writes a binary sink
VOTES = _table(
    Format("csv", "text/csv", ".csv", False, "votes_csv"),
    Format("jsonl", "application/x-ndjson", ".jsonl", False, "votes_jsonl"),
    Format("parquet", PARQUET, ".parquet", True, "votes_parquet"),
)
SKIPS = _table(
    Format("csv", "text/csv", ".csv", False, "skips_csv"),
    Format("jsonl", "application/x-ndjson", ".jsonl", False, "votes_jsonl"),
)
# what the API serves a ranking as (the table is for terminals)
RANKING_DOWNLOADS = {name: row for name, row in RANKING.items() if name != "table"}


def choose(table: dict[str, Format], name: str) -> Format:
    """The row ``name`` of ``table``. Raises Invalid naming the formats there are."""
    try:
        return table[name]
    except KeyError:
        raise Invalid(f"format must be one of {', '.join(table)}", field="format") from None
