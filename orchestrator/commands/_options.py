"""The options several commands share, read from their parsed arguments into typed records.

A helper of the command modules, not a command: only they import it, and nothing below the commands
sees an ``argparse.Namespace``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rigaudit.orchestrator.commands._arguments import number
from rigaudit.orchestrator.commands._outputs import output
from rigaudit.orchestrator.hosts.choose import DEMO_HELP, HostSource
from rigaudit.orchestrator.options.screen import Screen


def screen(args: argparse.Namespace) -> Screen:
    """``--json -`` (stdout taken) and ``--no-live``, for the commands that have them."""
    given = vars(args)
    return Screen(json_to_stdout=str(given.get("json") or "") == "-", no_live=bool(given.get("no_live", False)))


def host_source(args: argparse.Namespace) -> HostSource:
    """``--snapshot``, ``--demo`` and ``--replay-latency-ms``."""
    given = vars(args)
    latency = float(given.get("replay_latency_ms") or 0.0)
    return HostSource(snapshot=given.get("snapshot"), demo=given.get("demo"), replay_latency_ms=latency)


def transcript_path(args: argparse.Namespace) -> Path | None:
    """``--transcript FILE`` of a query command (``None``: not recorded)."""
    value = vars(args).get("transcript")
    return Path(value) if value is not None else None


def add_host_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("what to audit (default: this machine)")
    source = group.add_mutually_exclusive_group()
    source.add_argument("--snapshot", metavar="DIR", type=Path, help="replay a snapshot written by `rigaudit snapshot`")
    source.add_argument(
        "--demo",
        nargs="?",
        const="default",
        metavar="NAME",
        help=f"replay {DEMO_HELP}",
    )
    group.add_argument(
        "--replay-latency-ms",
        type=number("a latency", least=0),
        default=0.0,
        metavar="N",
        help="add N ms to every host operation (snapshots)",
    )


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """``--no-live``, ``--transcript FILE`` and ``--no-transcript``: how a command's session is shown and recorded."""
    group = parser.add_argument_group("output")
    group.add_argument("--no-live", action="store_true", help="plain lines instead of the live board (pipes, CI)")
    output(
        group.add_argument("--transcript", type=Path, metavar="FILE", help="where to record this session (default: state dir)")
    )
    group.add_argument("--no-transcript", action="store_true", help="do not record this session")


def add_transcript_argument(parser: argparse._ActionsContainer, help: str = "") -> None:
    """``--transcript FILE``: record this query's session there (by default it is not recorded)."""
    text = help or "record this session to FILE (default: not recorded)"
    output(parser.add_argument("--transcript", type=Path, metavar="FILE", help=text))
