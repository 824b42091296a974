"""The command line stops at the commands: below ``orchestrator/commands`` nothing reads an argparse Namespace.

Each command reads its parsed arguments into typed records (``commands/_options.py``: ``Screen``, ``HostSource``)
and hands those down. ``DEBT`` is what still takes a Namespace below the commands, file by file: it may only shrink.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("orchestrator/commands/", "orchestrator/cli.py", "orchestrator/command.py")
"""The commands, and the CLI entry that builds their parsers and calls them."""

DEBT = {
    "orchestrator/bench/run.py": (4, True),
}
"""File: (``getattr(args`` count, takes a Namespace). Pay it by moving the reading into the commands."""

ARGPARSE = {
    "agents/llm/testing/server.py": "a test server's own command line (python -m)",
    "tools/bench/fake_server.py": "a test server's own command line (python -m)",
    "orchestrator/options/arguments.py": "argument types: they raise argparse.ArgumentTypeError",
    "orchestrator/chat/coordinator.py": "the chat's /commands are parsed with the commands' options (debt)",
    "orchestrator/bench/run.py": "bench's parser groups and readers (debt)",
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


def test_nothing_new_below_the_commands_reads_a_namespace() -> None:
    found = _offenders()
    grown = {name: seen for name, seen in found.items() if name not in DEBT or seen[0] > DEBT[name][0]}
    assert grown == {}, "read the option in the command into a typed record, and pass that down"


def test_the_debt_list_is_true() -> None:
    """A file that paid its debt leaves the list (so the list is what remains)."""
    found = _offenders()
    assert {name: found.get(name) for name in DEBT} == DEBT


def test_argparse_is_imported_below_the_commands_only_where_listed() -> None:
    found = set()
    for part in ("orchestrator", "agents", "tools", "transcripts"):
        for path in sorted((ROOT / part).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if not name.startswith(ALLOWED) and _ARGPARSE.search(path.read_text(encoding="utf-8")):
                found.add(name)
    assert found == set(ARGPARSE), "parse in orchestrator/commands and pass a typed record down"
