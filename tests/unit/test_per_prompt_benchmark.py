"""Smoke test of benchmarks/per_prompt.py: a row per design."""

import re
import subprocess
import sys
from pathlib import Path

from tests.timing import seconds


def test_the_per_prompt_benchmark_prints_every_design():
    done = subprocess.run([sys.executable, "benchmarks/per_prompt.py", "--studies", "2"],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^ +\d\.\d +\d+ +\d+ +\d+ +\d+\.\d% ", done.stdout, re.M)
    assert len(rows) == 6, done.stdout
