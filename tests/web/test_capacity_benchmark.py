"""Smoke test of benchmarks/capacity.py on a tiny demo (the figures in the deployment page come
from its full run): every figure is printed, each request kind costs the app and PostgreSQL
something, and the scratch database is dropped."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import PG_URL, _pg_admin
from tests.timing import seconds
from tests.web.servers import ROOT


@pytest.mark.postgres
def test_the_capacity_benchmark_prints_its_model():
    _pg_admin().close()  # (skips, or fails under ARENA_REQUIRE_POSTGRES, without PostgreSQL)
    done = subprocess.run(
        [sys.executable, "benchmarks/capacity.py", "--prompts", "4", "--cycles", "12",
         "--warmup", "2", "--postgres", PG_URL, "--set", "DEMO_IMAGES_PER_MODEL=2",
         "--set", "GOLD_MAX_DAMAGED=4", "--set", "PRESENT_SIZES=[384]",
         "--set", "DEMO_IMAGE_SIZE=384"],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    rows = dict(re.findall(r"^(session|vote)\s+\d+\s+([\d.]+)\s+[\d.]+\s+\d+$", out, re.M))
    assert set(rows) == {"session", "vote"} and all(float(v) > 0 for v in rows.values()), out
    per_vote = re.search(r"per vote .*: app ([\d.]+) ms CPU; PostgreSQL ([\d.]+) ms CPU "
                         r".*; ([\d.]+) transactions .*; ([\d.]+) KiB WAL", out)
    assert per_vote and all(float(x) > 0 for x in per_vote.groups()), out
    table = re.findall(r"^\s+([\d,]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+$", out, re.M)
    assert [rate for rate, *_ in table] == ["100", "1,000", "10,000"], out
    pg_cores = [int(cores) for _, cores, _, _ in table]
    assert pg_cores == sorted(pg_cores) and pg_cores[-1] > pg_cores[0], out
    admin = _pg_admin()
    left = admin.execute("SELECT count(*) FROM pg_database WHERE datname LIKE "
                         "'arena_capacity_%'").fetchone()[0]
    admin.close()
    assert left == 0
