"""The command line stops at the commands: below ``orchestrator/commands`` nothing reads an argparse Namespace.

Each command reads its parsed arguments into typed, frozen records (``commands/_options.py``: ``Screen``,
``HostSource``; ``commands/_bench.py``: ``LoadSpec``, ``Settings``; ``commands/_fleet.py``: ``FleetRun``) and hands
those down; the chat is given its ``/bench inference`` reader by its command. The CLI entry parses the command
line and hands the Namespace to its command, but reads no attribute of it by name either.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigaudit.orchestrator.cli import main

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("orchestrator/commands/", "orchestrator/cli.py", "orchestrator/command.py")
"""The commands, and the CLI entry that builds their parsers and calls them."""

ARGPARSE = {
    "agents/llm/testing/server.py": "a test server's own command line (python -m)",
    "tools/bench/fake_server.py": "a test server's own command line (python -m)",
}
"""What imports argparse below the commands, and why."""

_ARGPARSE = re.compile(r"^\s*(import argparse|from argparse import)", re.M)
_NAMESPACE = re.compile(r"argparse\.Namespace|\bNamespace\b")


def _offenders() -> dict[str, tuple[int, bool]]:
    found: dict[str, tuple[int, bool]] = {}
    for part in ("orchestrator", "agents", "tools", "transcripts"):
        for path in sorted((ROOT / part).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith(ALLOWED):
                continue
            text = path.read_text(encoding="utf-8")
            getattrs, namespace = text.count("getattr(args"), bool(_NAMESPACE.search(text))
            if getattrs or namespace:
                found[name] = (getattrs, namespace)
    return found


def test_nothing_below_the_commands_reads_a_namespace() -> None:
    """File: (``getattr(args`` count, names a Namespace), for every file below the commands that does."""
    assert _offenders() == {}, "read the option in the command into a typed record, and pass that down"


def test_no_getattr_of_args_outside_the_commands() -> None:
    """``getattr(args`` reads an option by a name no type checker sees: only a command may (the CLI entry included)."""
    found = []
    for part in ("orchestrator", "agents", "tools", "transcripts"):
        for path in sorted((ROOT / part).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if not name.startswith("orchestrator/commands/") and "getattr(args" in path.read_text(encoding="utf-8"):
                found.append(name)
    assert found == [], "read the option in the command into a typed record, and pass that down"


def test_argparse_is_imported_below_the_commands_only_where_listed() -> None:
    found = set()
    for part in ("orchestrator", "agents", "tools", "transcripts"):
        for path in sorted((ROOT / part).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if not name.startswith(ALLOWED) and _ARGPARSE.search(path.read_text(encoding="utf-8")):
                found.add(name)
    assert found == set(ARGPARSE), "parse in orchestrator/commands and pass a typed record down"


def test_no_command_prints_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a command the CLI entry finds no command to run (its default): the usage, exit status 2."""
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out
