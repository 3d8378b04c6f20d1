"""One table of formats: every row has its writer, and the CLI, the API and the OpenAPI
description offer exactly the table's formats."""

from __future__ import annotations

import pytest

from arena.analysis import exports, formats
from arena.cli.analysis import rank_command

TABLES = {"ranking": formats.RANKING, "votes": formats.VOTES, "skips": formats.SKIPS}


@pytest.mark.parametrize("table", TABLES.values(), ids=TABLES.keys())
def test_every_format_has_its_writer(table):
    for row in table.values():
        assert callable(getattr(exports, row.writer)), row
        assert row.suffix.startswith(".") and "/" in row.mimetype


def test_the_cli_and_the_api_offer_the_tables_formats(client):
    option = next(p for p in rank_command.params if p.name == "fmt")
    assert list(option.type.choices) == list(formats.RANKING)
    parameters = client.get("/api/v1/openapi.json").json["components"]["parameters"]
    for name, table in (("vote_format", formats.VOTES), ("skip_format", formats.SKIPS),
                        ("ranking_format", formats.RANKING_DOWNLOADS)):
        assert parameters[name]["schema"]["enum"] == list(table), name


def test_a_format_not_in_the_table_is_refused_naming_those_there_are():
    with pytest.raises(exports.Invalid, match="csv, jsonl, parquet"):
        formats.choose(formats.VOTES, "xlsx")
