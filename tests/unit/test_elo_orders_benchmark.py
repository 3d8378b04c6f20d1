"""Smoke test of benchmarks/elo_orders.py: both Elo tables and the page's line printed,
each share a percentage of the studies run."""

import re
import subprocess
import sys
from pathlib import Path

from tests.timing import seconds


def test_the_elo_orders_benchmark_prints_every_table():
    done = subprocess.run([sys.executable, "benchmarks/elo_orders.py", "--studies", "5",
                           "--votes", "2000", "--orders", "4"],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=seconds(120))
    assert done.returncode == 0, done.stderr
    shares = re.findall(r"(\d+\.\d)%", done.stdout)
    assert len(shares) == 7, done.stdout
    assert all(float(s) * 5 / 100 == round(float(s) * 5 / 100) for s in shares)
    assert "one keyed order" in done.stdout and "mean of 4 keyed orders" in done.stdout
