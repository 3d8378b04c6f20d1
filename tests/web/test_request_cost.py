"""Smoke test of benchmarks/request_cost.py: the benchmark runs end to end on a tiny demo and
prints every figure the README quotes from it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.timing import seconds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("flow", [[], ["--html"]], ids=["api", "htmx"])
def test_the_request_cost_benchmark_prints_its_figures(flow):
    done = subprocess.run(
        [sys.executable, "benchmarks/request_cost.py", "--prompts", "4", "--cycles", "6",
         "--warmup", "3",
         "--set", "DEMO_IMAGES_PER_MODEL=2", "--set", "GOLD_MAX_DAMAGED=4",
         "--set", "PRESENT_SIZES=[384]", "--set", "DEMO_IMAGE_SIZE=384", *flow],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for name in ("session", "vote", "insert"):
        row = re.search(rf"^\s+{name}\s+(\d+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
        assert row and int(row[1]) > 0 and float(row[2]) > 0, out
    # htmx: every session after the first comes in place of the last one's end card
    assert not re.search(r"^\s+page\s", out, re.M), out
    assert re.search(r"^\s+vote\s+18\s", out, re.M), out  # three votes per session
    ratio = re.search(r"ratio ([\d.]+) \(goal >= 0.5\)", out)
    assert ratio and float(ratio[1]) > 0, out
    floor = re.search(r"protocol floor .*: ([\d.]+) ms per vote, ratio ([\d.]+) to the bare "
                      r"INSERT; Arena at ([\d.]+) of the floor", out)
    if flow:
        assert floor is None, out  # (the floor speaks the JSON API only)
    else:
        assert floor and float(floor[1]) > 0 and float(floor[3]) > 0, out


def test_the_request_cost_benchmark_pairs_a_setting():
    done = subprocess.run(
        [sys.executable, "benchmarks/request_cost.py", "--prompts", "4", "--cycles", "8",
         "--warmup", "1",
         "--set", "DEMO_IMAGES_PER_MODEL=2", "--set", "GOLD_MAX_DAMAGED=4",
         "--set", "PRESENT_SIZES=[384]", "--set", "DEMO_IMAGE_SIZE=384",
         "--paired", "RATELIMIT_ENABLED=false"],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = re.findall(r"^\s+(as set|RATELIMIT_ENABLED=false)\s+([\d.]+) ms", done.stdout, re.M)
    assert [name for name, _ in rows] == ["as set", "RATELIMIT_ENABLED=false"], done.stdout
    assert all(float(ms) > 0 for _, ms in rows)
    assert re.search(r"cost [+-][\d.]+% against RATELIMIT_ENABLED=false", done.stdout)
