"""Smoke test of benchmarks/reliability.py (the figures in the docs come from its full run):
every design prints both coverages, both errors and the voters' mean reliability."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.timing import seconds
from tests.web.servers import ROOT


def test_the_reliability_benchmark_prints_each_design():
    done = subprocess.run([sys.executable, "benchmarks/reliability.py", "--studies", "2",
                           "--voters", "200"], cwd=ROOT, capture_output=True, text=True,
                          timeout=seconds(300))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = re.findall(r"^ *(\d+)% .* (a swap|reversed) .*\| +([\d.]+)% +([\d.]+)% \| +"
                      r"([\d.]+) +([\d.]+) \|.*\| (\d+)% \| ([\d.]+)%, ([\d.]+)$",
                      done.stdout, re.M)
    assert len(rows) == 9, done.stdout
    for blind, order, plain, weighted, error_plain, error_weighted, reported, *_ in rows:
        if int(blind) >= 30 and order == "a swap":  # (two studies: the pull shows already)
            assert float(weighted) > float(plain), done.stdout
            assert float(error_weighted) < float(error_plain), done.stdout
        assert (reported == "100") == (order == "reversed"), done.stdout
