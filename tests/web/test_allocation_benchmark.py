"""Smoke test of benchmarks/allocation.py (the figures in the docs come from its full run):
two strategies on a small campaign with bad voters, every column printed."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.timing import seconds
from tests.web.servers import ROOT


def test_the_campaign_simulator_prints_each_strategy():
    done = subprocess.run(
        [sys.executable, "benchmarks/allocation.py", "--models", "3", "--bad", "0.2",
         "--seeds", "1", "--prompts", "6", "--check", "120", "--max-votes", "480",
         "--strategies", "balanced,active+stop"],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(600))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = re.findall(r"^ +3 +20% (\S+) +([\d,]+[+*]?) +([\d,]+) +(\S+) +([\d.-]+) +(\d+)% "
                      r"+([\d.]+) \(([\d.]+)-([\d.]+)\) +\d+s$", done.stdout, flags=re.M)
    assert [row[0] for row in rows] == ["balanced", "active+stop"], done.stdout
    for _, _, mean, _, tau, covered, auc, low, high in rows:
        assert 0 < int(mean.replace(",", "")) <= 480 + 3 * 12
        assert -1 <= float(tau) <= 1 and 0 <= int(covered) <= 100
        assert float(low) <= float(high) and 0 <= float(auc) <= 1
    assert rows[0][3] == "1.00"
