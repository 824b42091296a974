"""The approval option of the commands that ask before each step (``apply``, ``chat``)."""

from __future__ import annotations

import argparse

from rigaudit.orchestrator.change.timed_prompt import APPROVAL_TIMEOUT_S
from rigaudit.orchestrator.commands._arguments import positive_seconds


def add_approval_timeout(parser: argparse.ArgumentParser) -> None:
    """``--approval-timeout S``: how long a step's question waits before its answer is no."""
    parser.add_argument(
        "--approval-timeout",
        type=positive_seconds,
        default=APPROVAL_TIMEOUT_S,
        metavar="S",
        help=f"how long a step's question waits for your answer before it is no (default {APPROVAL_TIMEOUT_S:g})",
    )
