"""The package layout a reader relies on: feature packages import each other one way only,
and the ranking core is pure (numpy and scipy, no web, database or other Arena package)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import arena

ROOT = Path(arena.__file__).parent
PACKAGES = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()} - {"migrations"}


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, by its dotted name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _package_graph() -> dict[str, set[str]]:
    graph = defaultdict(set)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for name in _imports(path):
                parts = name.split(".")
                if parts[0] == "arena" and len(parts) > 1 and parts[1] in PACKAGES \
                        and parts[1] != package:
                    graph[package].add(parts[1])
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path, or None."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path, node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [])):
            return found
    return None


def test_the_feature_packages_import_each_other_one_way_only():
    assert _cycle(_package_graph()) is None, _cycle(_package_graph())


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


def test_the_ranking_core_is_pure():
    for path in (ROOT / "ranking").rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            assert top not in ("flask", "sqlalchemy", "werkzeug"), (path.name, name)
            assert not (top == "arena" and not name.startswith("arena.ranking")), (
                path.name, name)
