"""Smoke test of benchmarks/farm.py: a tiny demo of eight models, a small farm, the timer's
run, and every figure and check printed (the docs' figures come from the full run; the
patient farm's hourly batches, --hours, take the same path once an hour)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_farm_benchmark_prints_its_boards_and_checks():
    done = subprocess.run(
        [sys.executable, "benchmarks/farm.py", "--honest", "300", "--identities", "4",
         "--votes", "12", "--prompts", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for title in ("public ranking before the farm", "with the farm counted (4 identities",
                  "after the timer's run"):
        assert title in out, out
    assert len(re.findall(r"^  Dusk-0\.3 +\d ", out, re.M)) == 3, out
    assert len(re.findall(r"^  Haze-0\.1 +\d ", out, re.M)) == 3, out  # eight models
    assert re.search(r"farm identities held out: \d+ of 4; honest voters held with them: \d+",
                     out), out
    for check in ("no public rank left its published rank set after the timer",
                  "every farm identity held within the period", "the lead over Dusk-0.3"):
        assert f"check: {check}" in out, out
