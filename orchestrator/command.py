"""The shape of a subcommand: its name, help, arguments and the function that runs it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rigaudit.tools.core.record import Record


class Command(Record):
    name: str
    help: str
    """One line for the command list; the module docstring is the long help."""
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
