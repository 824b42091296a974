"""The options several commands share, read from their parsed arguments into typed records.

A helper of the command modules, not a command: only they import it, and nothing below the commands
sees an ``argparse.Namespace``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rigaudit.orchestrator.hosts.choose import HostSource
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
