"""Smoke test of benchmarks/exports.py on a few thousand votes (docs/measured.md has the full
run's figures): both exports run, write the same votes, every figure is printed, and the
scratch database is dropped."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import PG_URL, _pg_admin
from tests.timing import seconds
from tests.web.servers import ROOT


@pytest.mark.postgres
def test_the_exports_benchmark_prints_both_exports_and_their_ratio():
    before = _databases()  # (skips, or fails under ARENA_REQUIRE_POSTGRES, without it)
    done = subprocess.run(
        [sys.executable, "benchmarks/exports.py", "--votes", "3000", "--models", "6",
         "--rounds", "1", "--postgres", PG_URL],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(600))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert re.search(r"^PostgreSQL, 3,000 votes \(log grown in \d+ s\)", out, flags=re.M), out
    for label in ("arena votes export", "psycopg \\+ pyarrow"):
        assert re.search(rf"^{label} +[\d.]+ +[\d.]+ +\d+$", out, flags=re.M), out
    assert re.search(r"CPU [\d.]+x, memory [\d.]+x .*the same 3,000 votes written by both",
                     out), out
    assert _databases() == before  # its own dropped


def _databases() -> set[str]:
    admin = _pg_admin()
    try:
        return {name for (name,) in admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'arena_exports_%'")}
    finally:
        admin.close()
