"""The longest functions of the package, for keeping them short enough to read.

    .venv/bin/python scripts/longest_functions.py [--limit 40] [PATH ...]   # default: arena/

Counts each function's lines from ``def`` to its last line (nested functions separately,
migrations left out), prints how many exceed the limit and the longest fifteen, with the
length of their bodies without the docstring beside it.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def functions(root: Path):
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(
                        getattr(body[0], "value", None), ast.Constant) and isinstance(
                        body[0].value.value, str):
                    lines_doc = body[0].end_lineno - body[0].lineno + 1
                else:
                    lines_doc = 0
                yield lines, lines - lines_doc, f"{path}:{node.lineno} {node.name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["arena"])
    parser.add_argument("--limit", type=int, default=40)
    args = parser.parse_args()
    rows = sorted((row for p in args.paths for row in functions(Path(p))), reverse=True)
    print(f"functions over {args.limit} lines: {sum(n > args.limit for n, _, _ in rows)} "
          f"of {len(rows)}")
    print(f"{'lines':>5} {'no doc':>6}  function")
    for lines, code, name in rows[:15]:
        print(f"{lines:>5} {code:>6}  {name}")


if __name__ == "__main__":
    main()
