"""Smoke test of benchmarks/farm.py: a tiny demo of eight models, one small farm of each
shape's kind, the timer's run, and every figure and check printed (the docs' figures come
from the full run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.timing import seconds

ROOT = Path(__file__).resolve().parents[2]


def test_the_farm_benchmark_prints_its_boards_and_checks():
    done = subprocess.run(
        [sys.executable, "benchmarks/farm.py", "--honest", "200", "--period", "60",
         "--sizes", "6", "--shapes", "direct,omnipresent", "--prompts", "2", "--hours", "2",
         "--image-size", "96"],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "published before any farm" in out, out
    assert len(re.findall(r"^  (Dusk-0\.3|Haze-0\.1) +\d ", out, re.M)) == 2, out  # eight models
    for shape in ("direct", "omnipresent"):
        assert re.search(rf"^{shape}, 6 identities on 2 /24s x \d+ votes in 2 hourly batches",
                         out, re.M), out
    assert len(re.findall(r"Dusk-0\.3: Bradley-Terry rank \d \(\d-\d\) -> counted live \d -> "
                          r"after the timer \d .*; Elo table rank \d -> counted live \d -> "
                          r"after the timer \d", out)) == 2, out
    assert len(re.findall(r"held: farm \d+ of 6, honest \d+ of \d+; waiting on a cohort "
                          r"review: farm \d+, honest \d+", out)) == 2, out
    assert re.search(r"cost to move Dusk-0\.3 one public rank", out), out
    for check in ("no farm of up to 25% of the period's votes moved a public rank",
                  "honest voters held"):
        assert f"check: {check}" in out, out
