"""Smoke test of benchmarks/rank_db.py on a few thousand votes (the README's figures come
from the full run over 2M): every figure it prints is there, and its pairing of a campaign's
progress page against a git revision runs (against this checkout's own, here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.timing import seconds

ROOT = Path(__file__).resolve().parents[2]


def test_the_rank_db_benchmark_prints_its_figures_and_pairs_the_progress_page():
    done = subprocess.run(
        [sys.executable, "benchmarks/rank_db.py", "--votes", "3000",
         "--paired-progress", "HEAD"],
        cwd=ROOT, capture_output=True, text=True, timeout=seconds(600))
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert re.search(r"SQLite: 3,\d{3} stored votes", out), out
    for figure in (r"`arena rank --criterion preference`, whole command, median of 3: [\d.]+ s",
                   r"to the cut-off \d+ ms \(ratio [\d.]+x\)",
                   r"keyed order\) \d+ ms, the live Elo replayed in arrival order \d+ ms \(ratio",
                   r"progress page to the cut-off \d+ ms \(live \d+ ms\)",
                   r"progress page to the cut-off: HEAD \d+ ms, now \d+ ms .*[\d.]+x faster",
                   r"progress page live: HEAD \d+ ms, now \d+ ms"):
        assert re.search(figure, out), (figure, out)
