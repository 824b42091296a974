"""The events live in one module per concern, so that ``rigaudit check`` imports only those it emits: each name is
imported from the module that defines it (the package gives none), and the union a transcript is read with holds
every event."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import get_args

from rigaudit.tools.schema.events.base import BaseEvent
from rigaudit.tools.schema.events.union import Event

PACKAGE = "rigaudit.tools.schema.events"
EVENTS = importlib.import_module(PACKAGE)
MODULES = [m.name for m in pkgutil.iter_modules(EVENTS.__path__)]
ROOT = Path(__file__).resolve().parents[1]
CODE = ("orchestrator", "agents", "tools", "transcripts", "prompts", "tests", "benchmarks")
TEXT = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
NAMED = re.compile(r"\b(?:from\s+)?rigaudit\.tools\.schema\.events(?:\s+import\s+\(?\s*|\.)(\w+)")
"""A name reached through the package in prose or a snippet: ``from PACKAGE import X`` or ``PACKAGE.X``."""


def _defined(module: str) -> dict[str, object]:
    found = importlib.import_module(f"{PACKAGE}.{module}")
    return {
        name: value
        for name, value in vars(found).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == found.__name__
    }


def _sources() -> list[Path]:
    return [p for part in CODE for p in sorted((ROOT / part).rglob("*.py")) if "fixtures" not in p.relative_to(ROOT).parts]


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _through_the_package(tree: ast.AST) -> list[str]:
    """The names an import takes from the package itself rather than from one of its modules."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == PACKAGE:
            found += [a.name for a in node.names if a.name not in MODULES]
        elif isinstance(node, ast.Attribute) and node.attr not in MODULES and _dotted(node.value) == PACKAGE:
            found.append(node.attr)
    return found


def test_the_package_gives_no_names() -> None:
    given = {name: value for name, value in vars(EVENTS).items() if not name.startswith("_")}
    assert given, "the modules this test imported are the package's attributes"
    assert all(isinstance(value, ModuleType) for value in given.values()), sorted(given)
    assert not hasattr(EVENTS, "Warning_") and not hasattr(EVENTS, "Event")  # union is imported above: Event is its own


def test_the_walk_sees_an_import_through_the_package() -> None:
    """A check on the checker: both spellings of a name taken from the package are found, a module's are not."""
    tree = ast.parse(f"from {PACKAGE} import Warning_, session\nfrom {PACKAGE}.session import Output\nx = {PACKAGE}.Event\n")
    assert sorted(_through_the_package(tree)) == ["Event", "Warning_"]
    assert [m.group(1) for m in NAMED.finditer(f"see `{PACKAGE}.union.Event`; from {PACKAGE} import (Output")] == [
        "union",
        "Output",
    ]
    assert len(_sources()) > 300


def test_every_import_of_an_event_names_its_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _sources()
        for name in _through_the_package(ast.parse(path.read_text(encoding="utf-8")))
    ]
    offenders += [
        f"{path.relative_to(ROOT)}: {match.group(1)}"
        for path in [*TEXT, *_sources()]
        for match in NAMED.finditer(path.read_text(encoding="utf-8"))
        if match.group(1) not in MODULES
    ]
    assert offenders == [], "import each event from the module of tools/schema/events/ that defines it"


def test_each_model_is_defined_in_one_module() -> None:
    owners: dict[str, list[str]] = {}
    for module in MODULES:
        for name, value in _defined(module).items():
            if isinstance(value, type):
                owners.setdefault(name, []).append(module)
    assert len(owners) > 50
    assert {name: where for name, where in owners.items() if len(where) > 1} == {}


def test_the_union_holds_every_event_once() -> None:
    members = get_args(get_args(Event)[0])
    kinds = {value for module in MODULES for value in _defined(module).values()}
    every = {c for c in kinds if isinstance(c, type) and issubclass(c, BaseEvent) and c is not BaseEvent}
    assert set(members) == every, sorted(c.__name__ for c in every ^ set(members))
    types = [m.model_fields["type"].default for m in members]
    assert len(types) == len(set(types)) == len(members)


def test_importing_one_event_imports_its_module_alone() -> None:
    program = (
        f"import sys; from {PACKAGE}.session import Warning_; print(sorted(m for m in sys.modules if m.startswith({PACKAGE!r})))"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == str([PACKAGE, f"{PACKAGE}.base", f"{PACKAGE}.session"])
