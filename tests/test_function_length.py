"""Long functions may only become fewer: a function over 60 lines is one to split into named steps.

A function's length is its lines from ``def`` to its last line, docstring and nested functions included;
every function of the product (``orchestrator``, ``agents``, ``tools``, ``transcripts``) counts, a nested one
on its own too. ``CEILING`` is how many are over :data:`LIMIT` lines: lower it when a split brings the count under.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.source import statements

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("orchestrator", "agents", "tools", "transcripts")
LIMIT = 60
CEILING = 0
"""Functions over ``LIMIT`` lines in the product; the count may fall below it, never rise above it."""


def long_functions(root: Path = ROOT, parts: tuple[str, ...] = PARTS, limit: int = LIMIT) -> list[tuple[int, str]]:
    """(lines, ``path:name``) of every function longer than ``limit`` lines, longest first."""
    found: list[tuple[int, str]] = []
    for part in parts:
        for path in sorted((root / part).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node, _ in statements(tree.body):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                    lines = node.end_lineno - node.lineno + 1
                    if lines > limit:
                        found.append((lines, f"{path.relative_to(root).as_posix()}:{node.name}"))
    return sorted(found, reverse=True)


def test_long_functions_do_not_grow_in_number() -> None:
    found = long_functions()
    shown = "\n".join(f"  {lines} {name}" for lines, name in found[:10])
    assert len(found) <= CEILING, f"{len(found)} functions over {LIMIT} lines (at most {CEILING}); longest:\n{shown}"


def test_the_count_sees_a_long_function(tmp_path: Path) -> None:
    """The measure itself: a 61-line function counts, a 60-line one does not."""
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n    return 0\n\n\ndef short():\n{body}\n", encoding="utf-8")
    assert long_functions(tmp_path, (".",)) == [(61, "long.py:long")]
