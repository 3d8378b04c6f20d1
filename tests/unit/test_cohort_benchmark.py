"""Smoke test of benchmarks/cohorts.py: every honest design and farm row printed, the hidden
farms' too."""

import re
import subprocess
import sys
from pathlib import Path

from tests.timing import seconds


def test_the_cohort_benchmark_prints_every_row():
    done = subprocess.run([sys.executable, "benchmarks/cohorts.py", "--studies", "2",
                           "--farms", "40"], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=seconds(300))
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^\S.* +\d\.\d{3} +\d+\.\d+% +\d+/2 ", done.stdout, re.M)
    assert len(rows) == 14, done.stdout
    assert len(re.findall(r"^40 x 14 votes, (direct|omnipresent) +\d/1 ", done.stdout,
                          re.M)) == 2, done.stdout
    assert len(re.findall(r"^\d+ x \d+ votes, \d aimed +\d/1 +\d/1 ", done.stdout,
                          re.M)) == 4, done.stdout
