"""Smoke test of benchmarks/allocation_floor.py: the floor for a few models, and what it
must be: no design needs more votes than balanced, and two models (one pair) leave no
choice at all."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.timing import seconds

ROOT = Path(__file__).resolve().parents[2]


def test_the_floor_prints_balanced_and_the_best_design_per_model_count():
    done = subprocess.run([sys.executable, "benchmarks/allocation_floor.py", "--models", "2,4"],
                          cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {int(m[1]): (float(m[2].replace(",", "")), float(m[3].replace(",", "")),
                        float(m[4]))
            for m in re.finditer(r"^ +(\d+) +([\d,]+) +([\d,]+) +([\d.]+)", done.stdout, re.M)}
    assert set(rows) == {2, 4}, done.stdout
    assert rows[2][2] == 1.0 and rows[2][0] == rows[2][1]
    balanced, best, ratio = rows[4]
    assert 0 < best <= balanced and abs(ratio - best / balanced) < 0.01
