"""How a command asks to be shown, as a record: light to import (the health gate reads its options without rich)."""

from __future__ import annotations

from rigaudit.tools.core.record import Record


class Screen(Record):
    """How a command's options ask to be shown: ``--json -`` takes stdout, ``--no-live`` asks for plain lines."""

    json_to_stdout: bool = False
    no_live: bool = False


__all__ = ["Screen"]
