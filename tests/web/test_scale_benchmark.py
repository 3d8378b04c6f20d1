"""Smoke test of benchmarks/scale.py on a few thousand votes (the figures in the docs come
from its full run): the log is grown twice, every figure is printed, and the scratch
database is dropped."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import PG_URL, _pg_admin
from tests.timing import seconds
from tests.web.servers import ROOT


@pytest.mark.postgres
def test_the_scale_benchmark_prints_every_figure_at_each_size():
    before = _scale_databases()  # (skips, or fails under ARENA_REQUIRE_POSTGRES, without it)
    done = subprocess.run(
        [sys.executable, "benchmarks/scale.py", "--sizes", "2000,4000", "--models", "6",
         "--repeats", "1", "--postgres", PG_URL],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(600))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for size in ("2,000", "4,000"):
        assert re.search(rf"^{size} votes \(log grown in \d+ s\)", out, flags=re.M), out
    for figure in (r"GET /leaderboard, whole log +\d+ ms", r"GET /leaderboard, rollup +\d+ ms",
                   r"the same, continent=EU, log +\d+ ms",
                   r"the same, continent=EU, rollup +\d+ ms",
                   r"arena rank --intervals instant +[\d.]+ s",
                   r"the same, --live +[\d.]+ s", r"the timer's public figures +[\d.]+ s",
                   r"rollup built from the log +[\d.]+ s +\([\d,]+ votes/s\)",
                   r"rollup refresh, [\d,]+ new votes +\d+ ms",
                   r"progress figures, whole log +\d+ ms", r"progress figures, rollup +\d+ ms",
                   r"GET /campaigns/<name> +\d+ ms"):
        assert len(re.findall(figure, out)) == 2, (figure, out)
    assert _scale_databases() == before  # its own dropped (another run's may be kept)


def _scale_databases() -> set[str]:
    admin = _pg_admin()
    names = {row[0] for row in admin.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE 'arena_scale_%'")}
    admin.close()
    return names
