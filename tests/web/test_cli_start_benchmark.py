"""Smoke test of benchmarks/cli_start.py: one round of `arena rank`, the minimal script and
`arena --help` by turns, and every figure printed (docs/measured.md has the full run's)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.timing import seconds

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_start_benchmark_prints_both_commands_and_the_ratio():
    done = subprocess.run([sys.executable, "benchmarks/cli_start.py", "--rounds", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for name in ("arena rank --criterion preference", "the same query and fit as a script",
                 "arena --help"):
        assert re.search(rf"{re.escape(name)}.* \d+\.\d\d", out), out
    ratio = re.search(r"ratio arena rank / script: ([\d.]+)", out)
    assert ratio and float(ratio[1]) > 0, out
