"""Smoke test of benchmarks/ingest.py: Arena and the bare-INSERT ceiling are started, driven
by locust and reported, on a tiny demo for two seconds (the README's figures come from the
full run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.timing import seconds

ROOT = Path(__file__).resolve().parents[2]


# (the JSON API with python-requests, the default client; the htmx flow is smoke-tested
# through benchmarks/request_cost.py, which shares its pages; ratios are figures of a loaded
# machine, so only their presence is checked)
@pytest.mark.parametrize("flow", [[]], ids=["api"])
def test_the_ingest_benchmark_runs_both_servers_and_prints_the_ratio(flow):
    done = subprocess.run(
        [sys.executable, "benchmarks/ingest.py", "--only", "sqlite", "--seconds", "2",
         "--warmup", "0.5", "--rounds", "2", "--users", "2", "--set", "DEMO_PROMPTS=6",
         "--set", "DEMO_IMAGES_PER_MODEL=2", "--set", "GOLD_MAX_DAMAGED=4",
         "--set", "PRESENT_SIZES=[384]", "--set", "DEMO_IMAGE_SIZE=384", *flow],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    # (htmx: a voter's first session comes from the start form, before the counted
    # seconds; the next ones in place of the last one's end card)
    html = "--html" in flow
    assert f"{'fast' if html else 'requests'} client" in out
    for name in ("insert", "vote", "next" if html else "session"):
        row = re.search(rf"^\s+{name}\s+([\d.]+)\s+(\d+)\s", out, re.M)
        assert row and float(row[1]) > 0, out
        assert int(row[2]) == 0, out  # no failures, the rate limiter on
    ratio = re.search(r"votes/s ([\d.]+) against the bare INSERT's ([\d.]+)/s: ratio ([\d.]+)",
                      out)
    assert ratio and float(ratio[3]) > 0, out
    # (two turns each, Arena, ceiling, ceiling, Arena: a ratio for each round)
    assert "2 alternating round(s)" in out, out
    by_round = re.search(r"ratio by round: ([\d.]+), ([\d.]+)$", out, re.M)
    # (a round of two seconds on a loaded machine may see no vote at all)
    assert by_round, out
    # each round's p99 beside the run's, to show how far it moves on its own
    total = re.search(r"^\s+vote\s+[\d.]+\s+\d+\s+[\d.]+\s+([\d.]+)\s", out, re.M)
    rounds = re.search(r"app p99 of a vote by round: ([\d.]+), ([\d.]+) ms$", out, re.M)
    assert rounds and total, out
    assert min(map(float, rounds.groups())) <= float(total[1]) + 0.01, out
    # the API flow is driven against the protocol floor too (its records only), by turns
    floor = re.search(r"floor votes/s ([\d.]+): ratio ([\d.]+) to the bare INSERT; Arena at "
                      r"([\d.]+) of the floor", out)
    if html:
        assert floor is None, out
    else:
        assert floor and float(floor[1]) > 0 and float(floor[3]) > 0, out
        # (its own server times too, from its Server-Timing: app p50 and p99, statements,
        # and on SQLite the wait for the writer lock and its hold, p50/p99)
        for name in ("session", "read", "vote"):
            row = re.search(rf"^\s+floor {name}\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+"
                            r"(\d+)\s+(\d+)/(\d+)\s+[\d.]+\s+[\d.]+/[\d.]+\s*$", out, re.M)
            assert row and float(row[1]) > 0 and int(row[2]) == 0, out
            assert 0 < float(row[3]) <= float(row[4]) and int(row[5]) >= 1, out
            # the client's p50/p99, the queueing before the app began included
            assert int(row[6]) <= int(row[7]) and int(row[7]) > 0, out
        assert re.search(r"by round, the floor's ratio / Arena's share of it: [\d.]+/[\d.]+, "
                         r"[\d.]+/[\d.]+$", out, re.M), out
