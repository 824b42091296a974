"""One exception root: every error of rigaudit is a RigauditError, drawn in tools/core/errors.py, caught once."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import rigaudit
from rigaudit.orchestrator import cli
from rigaudit.tools.core import errors
from rigaudit.tools.core.errors import NotApprovedError, OperationError, RigauditError, UsageError

ROOT = Path(__file__).resolve().parents[1]
_DRAWN = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w+)\s+(?P<code>\d)\s")


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(rigaudit.__path__, "rigaudit."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{module.__name__}.{value.__qualname__}"] = value
    return found


CLASSES = _exception_classes()


def _drawn_tree() -> dict[str, tuple[str | None, int]]:
    """name -> (parent, exit status) as the module docstring draws them."""
    tree: dict[str, tuple[str | None, int]] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        match = _DRAWN.match(line.strip("\n")[4:] if line.startswith("    ") else "")
        if match is None:
            continue
        depth = len(match["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        tree[match["name"]] = (stack[-1][1] if stack else None, int(match["code"]))
        stack.append((depth, match["name"]))
    return tree


def test_every_exception_class_is_a_rigaudit_error() -> None:
    assert len(CLASSES) > 25
    strays = sorted(name for name, cls in CLASSES.items() if not issubclass(cls, RigauditError))
    assert strays == []


def test_the_docstring_draws_the_whole_tree() -> None:
    drawn = _drawn_tree()
    assert drawn["RigauditError"] == (None, 1)
    public = {cls.__name__: cls for cls in CLASSES.values() if not cls.__name__.startswith("_")}
    assert sorted(set(public) - set(drawn)) == [], "draw every public error in tools/core/errors.py"
    assert sorted(set(drawn) - set(public)) == [], "the drawing names an error that does not exist"
    for name, cls in public.items():
        parent, code = drawn[name]
        assert cls.exit_code == code, f"{name}: drawn with exit {code}, carries {cls.exit_code}"  # type: ignore[attr-defined]
        if parent is not None:
            assert cls.__bases__[0].__name__ == parent, f"{name}: drawn under {parent}, subclasses {cls.__bases__[0].__name__}"


def test_the_three_kinds_carry_their_exit_status() -> None:
    assert (RigauditError.exit_code, UsageError.exit_code, OperationError.exit_code, NotApprovedError.exit_code) == (1, 2, 1, 3)


def test_cli_main_catches_the_root_once() -> None:
    tree = ast.parse(inspect.getsource(cli.main))
    handlers = [ast.unparse(h.type) for node in ast.walk(tree) if isinstance(node, ast.Try) for h in node.handlers if h.type]
    assert handlers.count("RigauditError") == 1
    assert set(handlers) <= {"RigauditError", "KeyboardInterrupt", "BrokenPipeError"}


def _rewraps(source: str) -> list[tuple[int, str, str]]:
    """``(line, caught, raised)`` where a caught error's message is only re-raised as another (``raise X(str(exc))``)."""
    lines: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ExceptHandler) and node.name):
            continue
        for statement in node.body:
            if not (isinstance(statement, ast.Raise) and isinstance(statement.exc, ast.Call) and statement.exc.args):
                continue
            first = statement.exc.args[0]
            if isinstance(first, ast.Call) and isinstance(first.func, ast.Name) and first.func.id == "str":
                first = first.args[0] if first.args else first
            if isinstance(first, ast.Name) and first.id == node.name and node.type is not None:
                lines.append((statement.lineno, ast.unparse(node.type), ast.unparse(statement.exc.func)))
    return lines


def _narrows(module: str, caught: str, raised: str) -> bool:
    """Re-raising as a subclass of what was caught says more (which input was refused): not a mere re-wrap."""
    namespace = vars(importlib.import_module(module))
    kinds, into = namespace.get(caught), namespace.get(raised)
    return inspect.isclass(kinds) and inspect.isclass(into) and issubclass(into, kinds)


def _module_of(path: Path) -> str:
    return "rigaudit." + ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_the_rewrap_finder_finds_one() -> None:
    source = "try:\n    f()\nexcept KeyError as exc:\n    raise UsageError(str(exc)) from None\n"
    assert _rewraps(source) == [(4, "KeyError", "UsageError")]
    assert _narrows("rigaudit.tools.hosts.snapshot", "InputError", "SnapshotError")
    assert not _narrows("rigaudit.orchestrator.audit.diff", "SnapshotError", "UsageError")
    assert _rewraps("try:\n    f()\nexcept KeyError as exc:\n    raise UsageError(f'--x: {exc}') from None\n") == []


def test_no_error_is_only_rewrapped() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {caught} -> {raised}"
        for part in ("orchestrator", "agents", "tools", "transcripts")
        for path in sorted((ROOT / part).rglob("*.py"))
        for line, caught, raised in _rewraps(path.read_text(encoding="utf-8"))
        if not _narrows(_module_of(path), caught, raised)
    ]
    assert found == [], "an error of rigaudit already carries its message and exit status: let it through"


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["rollback", "{tmp}/missing.jsonl", "--yes"], 2, "no such journal"),
        (["audit", "--snapshot", "{tmp}", "--no-live", "--no-transcript"], 2, "snapshot"),
        (["replay", "{tmp}/not-a-transcript.jsonl", "--no-live"], 2, "transcript"),
        (["bench", "compare", "{tmp}/a.json", "{tmp}/a.json", "--no-transcript"], 2, "a.json"),
    ],
)
def test_errors_of_every_layer_end_as_one_line_and_their_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, said: str
) -> None:
    (tmp_path / "not-a-transcript.jsonl").write_text("hello\n")
    (tmp_path / "a.json").write_text('{"schema": "other/1"}\n')
    assert cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rigaudit: ") and said in err[-1]
    assert not any("Traceback" in line for line in err)
