"""The shape of the code: command modules are leaves, and no import cycle anywhere in rigaudit.

Imports are read from the source (ast), including those inside functions and ``TYPE_CHECKING``
blocks: a lazy import still ties two modules together.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.support.source import statements

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("orchestrator", "agents", "tools", "transcripts", "prompts")
COMMANDS = "rigaudit.orchestrator.commands."


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            name = "rigaudit." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The rigaudit module that ``name`` (a module or a name inside one) belongs to."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


_Import = ast.Import | ast.ImportFrom


def _type_checking(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:``: names for the type checker, never run."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@functools.cache
def _import_nodes(path: Path) -> list[tuple[_Import, bool]]:
    """The module's import statements, each with whether it sits under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node, under) for node, under in statements(tree.body, marks=_type_checking) if isinstance(node, _Import)]


def _imports(name: str, path: Path, *, typing: bool = True) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node, type_only in _import_nodes(path):
        if type_only and not typing:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(max(0, node.level - 1)):
                base = base.rpartition(".")[0]
            module = (base + ("." + node.module if node.module else "")) if node.level else (node.module or "")
            targets.update(f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module for alias in node.names)
    return {owner for t in targets if t.startswith("rigaudit") and (owner := _owner(t)) and owner != name}


@functools.cache
def _graph(*, typing: bool = True) -> dict[str, set[str]]:
    """Each module's imports of rigaudit modules, built when a test first asks (not as every worker collects).
    ``typing=False``: without the imports under ``if TYPE_CHECKING:`` (an area's premises name its facts class for
    the type checker while the facts modules import the checks that declare those premises; only imports that run
    can cycle)."""
    return {name: _imports(name, path, typing=typing) for name, path in MODULES.items()}


def test_the_graph_sees_the_code() -> None:
    """A check on the checker: the modules and edges it finds are the ones that exist."""
    assert len(MODULES) > 200
    assert "rigaudit.orchestrator.audit.run" in _graph()["rigaudit.orchestrator.commands.audit"]
    assert "rigaudit.tools.core.errors" in _graph()["rigaudit.tools.hosts.base"]


def _is_helper(name: str) -> bool:
    """``commands/_options.py`` and the like: what the command modules share to read their arguments."""
    return name.startswith(COMMANDS + "_")


def test_no_module_imports_a_command_module() -> None:
    offenders = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        for target in targets
        if target.startswith(COMMANDS) and not name.startswith(COMMANDS) and not (_is_helper(target) and _parses(name))
    )
    assert offenders == [], "the work lives in orchestrator modules that commands call, never in a command"


def _parses(name: str) -> bool:
    """The command line's own parser (``orchestrator/cli.py``), which shares the commands' flag helpers."""
    return name == "rigaudit.orchestrator.cli"


def test_commands_do_not_import_each_other() -> None:
    offenders = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        if name.startswith(COMMANDS)
        for target in targets
        if target.startswith(COMMANDS) and not _is_helper(target)
    )
    assert offenders == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root, edges in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(edges)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_anywhere() -> None:
    assert _cycles(_graph(typing=False)) == []


def test_layers_point_one_way() -> None:
    """tools knows nothing above it; agents and transcripts never reach the orchestrator."""
    above = {
        "rigaudit.tools": ("rigaudit.agents", "rigaudit.orchestrator", "rigaudit.transcripts"),
        "rigaudit.agents": ("rigaudit.orchestrator",),
        "rigaudit.transcripts": ("rigaudit.agents", "rigaudit.orchestrator"),
    }
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in _graph().items()
        for layer, forbidden in above.items()
        if name.startswith(layer + ".")
        for target in targets
        if target.startswith(forbidden)
    )
    assert upward == []
