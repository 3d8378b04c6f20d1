"""docs/defences.md names, for each defence, its modules and the tests that hold it: every
path it names exists (a map that no longer matches the code fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_and_test_the_defences_page_names_exists():
    text = (ROOT / "docs" / "defences.md").read_text()
    named = set(re.findall(r"`((?:arena|tests|benchmarks)/[\w/]+\.py)`", text))
    assert len(named) > 20
    missing = sorted(path for path in named if not (ROOT / path).is_file())
    assert not missing, missing
