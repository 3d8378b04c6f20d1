"""Smoke test of benchmarks/vote_files.py on a small file (the figures in the docs come from
its full run): both arena commands and both readers are timed and printed."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.timing import seconds
from tests.web.servers import ROOT


def test_the_vote_files_benchmark_prints_its_figures():
    done = subprocess.run(
        [sys.executable, "benchmarks/vote_files.py", "--votes", "3000", "--models", "8",
         "--voters", "50", "--repeats", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for label in ("no intervals", "default intervals"):
        assert re.search(rf"arena rank --votes, {label} +[\d.]+ s", out), out
    reading = re.search(r"reading alone: pyarrow ([\d.]+) s, row by row ([\d.]+) s", out)
    assert reading and float(reading[1]) > 0 and float(reading[2]) > 0, out
