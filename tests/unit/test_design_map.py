"""docs/design.md's tree names every module of every package under arena/: a module added
without a place on the map fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tree_blocks() -> dict[str, set[str]]:
    """The words of each package's entry (``  name/  ...`` and its indented lines)."""
    text = (ROOT / "docs" / "design.md").read_text()
    tree = text.split("```")[1]
    blocks, current = {}, None
    for line in tree.splitlines():
        head = re.match(r"^  (\w+)/\s", line)
        if head:
            current = head.group(1)
            blocks[current] = set(re.findall(r"\w+", line))
        elif current and line.startswith(" " * 20):
            blocks[current] |= set(re.findall(r"\w+", line))
        else:
            current = None
    return blocks


def test_the_design_tree_names_every_module():
    blocks = _tree_blocks()
    missing = {}
    for package in sorted((ROOT / "arena").iterdir()):
        if not (package / "__init__.py").exists() or package.name == "migrations":
            continue
        modules = {m.stem for m in package.glob("*.py")} - {"__init__"}
        left = sorted(modules - blocks.get(package.name, set()))
        if left:
            missing[package.name] = left
    assert not missing, f"docs/design.md's tree does not name: {missing}"
